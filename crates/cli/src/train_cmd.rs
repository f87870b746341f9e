//! `splat train`, `splat eval`, and `splat render --data`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use splat_io::dataset::{self, human_bytes, Dataset, DatasetFormat, LoadOptions};
use splat_render::{Backend, CpuBackend, ReferenceBackend};
use splat_train::parallel::Collective;
use splat_train::resident::ResidentEngine;
use splat_train::run::{self, RunConfig, Start};
use splat_train::{memory, StepStats, TrainConfig};
use splat_viewer::{Server, SharedScene, TrainStatus, ViewerOptions};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum FormatArg {
    Colmap,
    NerfSynthetic,
    Transforms,
    Llff,
}

impl From<FormatArg> for DatasetFormat {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Colmap => DatasetFormat::Colmap,
            FormatArg::NerfSynthetic => DatasetFormat::NerfSynthetic,
            FormatArg::Transforms => DatasetFormat::Transforms,
            FormatArg::Llff => DatasetFormat::Llff,
        }
    }
}

/// How the dataset is read (shared by train, eval and render).
#[derive(Args, Clone, Debug, Default)]
pub struct DataArgs {
    /// Image folder under the dataset (COLMAP default `images`; LLFF default the largest `images_N`
    /// resolution present), e.g. `images_8`.
    #[arg(long, conflicts_with = "downscale")]
    pub images: Option<String>,
    /// Downscale images by this integer factor after loading (intrinsics follow).
    #[arg(long)]
    pub downscale: Option<u32>,
    /// Force the dataset format instead of detecting it.
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Background "r,g,b" for RGBA images and the renderer (default white for NeRF-synthetic, else black).
    #[arg(long, value_parser = crate::render_cmd::parse_vec3)]
    pub background: Option<[f64; 3]>,
    /// Leave out images that are missing or cannot be decoded (with a warning) instead of stopping
    /// with an error.
    #[arg(long)]
    pub skip_bad_images: bool,
}

impl DataArgs {
    pub fn options(&self, eval: bool) -> Result<LoadOptions> {
        if let Some(bg) = self.background {
            if bg.iter().any(|v| !(0.0..=1.0).contains(v)) {
                bail!("--background values must be in [0, 1]");
            }
        }
        Ok(LoadOptions {
            format: self.format.map(Into::into),
            images: self.images.clone(),
            downscale: self.downscale,
            eval,
            background: self.background.map(|b| b.map(|v| v as f32)),
            skip_bad_images: self.skip_bad_images,
            image_memory_budget: None,
        })
    }
}

#[derive(Args)]
pub struct TrainArgs {
    /// Dataset folder: COLMAP (sparse/0), NeRF-synthetic (transforms_train.json), instant-ngp /
    /// nerfstudio (transforms.json) or LLFF (poses_bounds.npy).
    #[arg(required_unless_present = "resume")]
    pub data: Option<PathBuf>,
    /// Output folder (point_cloud.ply, metrics.json, renders/, checkpoints/).
    #[arg(long, short, required_unless_present = "resume")]
    pub out: Option<PathBuf>,
    /// Continue the run in this folder from its last checkpoint, with the data and settings it was
    /// started with.
    #[arg(long, conflicts_with_all = ["data", "out"])]
    pub resume: Option<PathBuf>,
    #[command(flatten)]
    pub data_args: DataArgs,
    /// Number of training steps (the original's default is 30,000).
    #[arg(long, default_value_t = 30_000)]
    pub iters: u64,
    /// Hold out every 8th view (or the dataset's test split) and report metrics on them.
    #[arg(long)]
    pub eval: bool,
    /// Seed of the view order and densification sampling.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Highest SH degree (0..=3).
    #[arg(long, default_value_t = 3)]
    pub sh_degree: usize,
    #[command(flatten)]
    pub strategy: crate::strategy_args::StrategyArgs,
    /// Views per optimizer step: their gradients are summed and one Adam step applied. With B > 1
    /// the schedule (--iters, densification, opacity resets, SH degree) counts views, learning rates
    /// are scaled by sqrt(B) and Adam's momenta by beta^B (Grendel's rules; see NOTES.md). Under
    /// `mpirun -np K` (built with --features mpi) the B views of a step are split over the K ranks.
    #[arg(long, default_value_t = 1)]
    pub batch: usize,
    /// Write a checkpoint every N optimizer steps (0: only at the end).
    #[arg(long, default_value_t = 1000)]
    pub checkpoint_every: u64,
    /// Pipeline implementation [default: cpu; with --resume, the one the run was started on].
    #[arg(long, value_enum)]
    pub backend: Option<BackendArg>,
    /// With a GPU: run every step through the per-stage interface (each stage's data copied to the device
    /// and back, the loss and Adam on the CPU) instead of resident blocks of steps. For comparisons.
    #[arg(long)]
    pub gpu_per_stage: bool,
    /// With a GPU: sum the rasterize backward's per-Gaussian gradients with atomic adds (no
    /// per-intersection records, no gather pass; 0.43-0.56x the backward's time measured on an NVIDIA
    /// H200). The adds land in whatever order the tiles finish, so the same command no longer gives the
    /// same bits; the default sums in a fixed order. Not kept by --resume: give it again.
    #[arg(long)]
    pub gpu_atomic_backward: bool,
    /// Also write the result in these formats beside point_cloud.ply at the end of the run, e.g.
    /// `--export spz,sog`: compressed-ply, splat, spz, sog, sog-folder, glb, gltf (see `splat convert`).
    #[arg(long, value_delimiter = ',', value_parser = crate::convert_cmd::parse_format)]
    pub export: Vec<splat_io::SceneFormat>,
    /// Serve the viewer while training (the current scene, step, loss, PSNR, Gaussian count); after
    /// training it keeps serving the result until Ctrl-C.
    #[arg(long)]
    pub view: bool,
    /// Viewer port with --view (0 picks a free one).
    #[arg(long, default_value_t = 8080, requires = "view")]
    pub port: u16,
    /// Viewer address with --view.
    #[arg(long, default_value = "127.0.0.1", requires = "view")]
    pub host: String,
    /// Train even when the memory estimate exceeds the memory available.
    #[arg(long)]
    pub force: bool,
    /// Stop after this many steps without final outputs, leaving the checkpoint (for testing resume).
    #[arg(long, hide = true)]
    pub stop_after: Option<u64>,
}

const MEMORY_HINT: &str =
    "use smaller images (--images images_N, --downscale F), a smaller Gaussian \
     budget (--max-gaussians N, or --cap-max N with --strategy mcmc), or --force to try anyway";

/// Loads the dataset of a run after checking, from the image headers, that its images fit in memory
/// beside the Gaussian budget; prints the estimate and refuses (unless `force`) when it exceeds what
/// the machine has.
fn load_within_memory(cfg: &RunConfig, force: bool) -> Result<Dataset> {
    let budget = cfg
        .train
        .gaussian_cap()
        .unwrap_or(memory::DEFAULT_GAUSSIAN_BUDGET);
    let gaussian_bytes = budget as u64 * memory::peak_bytes_per_gaussian(cfg.train.sh_degree);
    // Ranks of an MPI job on this machine share its memory.
    let local_ranks = std::env::var("OMPI_COMM_WORLD_LOCAL_SIZE")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(1)
        .max(1);
    let available = memory::available_memory().map(|a| a / local_ranks);
    let mut load = cfg.load.clone();
    if let (Some(avail), false) = (available, force) {
        if gaussian_bytes >= avail {
            bail!(
                "up to {budget} Gaussians need about {}, more than the {} of memory available; {MEMORY_HINT}",
                human_bytes(gaussian_bytes),
                human_bytes(avail)
            );
        }
        load.image_memory_budget = Some(avail - gaussian_bytes);
    }
    let ds = match load_dataset(&cfg.data, &load) {
        Err(e)
            if matches!(
                e.downcast_ref::<dataset::DatasetError>(),
                Some(dataset::DatasetError::TooLarge { .. })
            ) =>
        {
            bail!(
                "{e} (beside {} for up to {budget} Gaussians); {MEMORY_HINT}",
                human_bytes(gaussian_bytes)
            )
        }
        r => r?,
    };
    let initial = ds.points.positions.len();
    if cfg.train.strategy == splat_train::config::Strategy::Mcmc && initial > cfg.train.mcmc.cap_max
    {
        eprintln!(
            "note: {initial} initial points are more than --cap-max {}: training starts from a random {} of them",
            cfg.train.mcmc.cap_max, cfg.train.mcmc.cap_max
        );
    }
    let image_bytes: u64 = ds.all_views().map(|v| v.image.data.len() as u64).sum();
    let max_pixels = ds
        .all_views()
        .map(|v| v.camera.width as u64 * v.camera.height as u64)
        .max()
        .unwrap_or(0);
    let est = memory::MemoryEstimate::new(image_bytes, budget, cfg.train.sh_degree, max_pixels);
    let line = format!(
        "memory estimate: images {} ({} views), Gaussians {} (up to {budget}{} at {} bytes each), \
         per-pixel buffers {}; total {}",
        human_bytes(est.image_bytes),
        ds.train.len() + ds.test.len(),
        human_bytes(est.gaussian_bytes),
        match (cfg.train.strategy, cfg.train.max_gaussians) {
            (splat_train::config::Strategy::Mcmc, _) => ", the mcmc cap",
            (_, Some(_)) => "",
            (_, None) => ", the default budget",
        },
        memory::peak_bytes_per_gaussian(cfg.train.sh_degree),
        human_bytes(est.pixel_bytes),
        human_bytes(est.total()),
    );
    match available {
        Some(avail) => {
            eprintln!("{line} of {} available", human_bytes(avail));
            if est.total() > avail && !force {
                bail!(
                    "training needs about {} of memory, more than the {} available; {MEMORY_HINT}",
                    human_bytes(est.total()),
                    human_bytes(avail)
                );
            }
        }
        None => eprintln!("{line} (available memory unknown)"),
    }
    Ok(ds)
}

/// The number of photos in `dir` or `dir/images`, when there are any.
fn photos_without_poses(dir: &Path) -> Option<usize> {
    [dir.to_path_buf(), dir.join("images")]
        .iter()
        .filter_map(|d| dataset::list_images(d).ok())
        .map(|names| names.len())
        .find(|&n| n > 0)
}

pub fn load_dataset(data: &Path, opts: &LoadOptions) -> Result<Dataset> {
    let t = Instant::now();
    if opts.format.is_none() && dataset::detect(data).is_err() {
        if let Some(photos) = photos_without_poses(data) {
            bail!(
                "{}: {photos} photos but no camera poses; run `splat prepare {} --out DATASET` (COLMAP) and train on DATASET",
                data.display(),
                crate::shell_word(data)
            );
        }
    }
    let ds = dataset::load(data, opts)?;
    for w in &ds.warnings {
        eprintln!("warning: {w}");
    }
    for n in &ds.notes {
        eprintln!("note: {n}");
    }
    let (w, h) = ds
        .train
        .first()
        .map(|v| (v.camera.width, v.camera.height))
        .unwrap_or((0, 0));
    eprintln!(
        "loaded {} dataset {}: {} train + {} test views ({w} x {h}), {} initial points{}, extent {:.3}, in {:.1} s",
        ds.format.name(),
        data.display(),
        ds.train.len(),
        ds.test.len(),
        ds.points.positions.len(),
        if ds.points_from_dataset { "" } else { " (random)" },
        ds.scene_extent,
        t.elapsed().as_secs_f64()
    );
    if ds.train.is_empty() {
        bail!("{}: no training views", data.display());
    }
    Ok(ds)
}

/// Which implementation of the pipeline stages to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// The fast CPU path (all cores).
    #[default]
    Cpu,
    /// The plain reference the others are tested against (its rasterizer runs rows of tiles in parallel, with the same bits as on one thread).
    Reference,
    /// The GPU (wgpu: Vulkan, Metal or DX12); a software device such as lavapipe is accepted when there
    /// is no hardware GPU. Training keeps the state, images and cameras on the device and runs blocks of
    /// steps there; densification and opacity resets run on the CPU between blocks (see NOTES.md).
    Gpu,
    /// A hardware GPU when there is one, else the fast CPU path (never a software GPU).
    Auto,
}

/// A resolved backend choice: the GPU device is opened once and shared by every backend made from it.
#[derive(Clone)]
pub enum ChosenBackend {
    Cpu,
    Reference,
    Gpu(Arc<splat_gpu::GpuContext>, splat_gpu::BackwardSums),
}

impl BackendArg {
    /// The name `--backend` takes, as recorded in a run's `config.json`.
    pub fn value_name(self) -> String {
        self.to_possible_value()
            .expect("no variant is skipped")
            .get_name()
            .to_owned()
    }

    /// Opens the GPU when one is wanted and prints which adapter was chosen.
    pub fn choose(self) -> Result<ChosenBackend> {
        use splat_gpu::{AdapterChoice, GpuContext};
        let announce = |ctx: GpuContext| {
            eprintln!(
                "GPU: {}{}",
                ctx.describe(),
                if ctx.is_software() {
                    " (a software device: correct but slow)"
                } else {
                    ""
                }
            );
            ChosenBackend::Gpu(Arc::new(ctx), splat_gpu::BackwardSums::Records)
        };
        Ok(match self {
            BackendArg::Cpu => ChosenBackend::Cpu,
            BackendArg::Reference => ChosenBackend::Reference,
            BackendArg::Gpu => announce(
                GpuContext::new(AdapterChoice::Any)
                    .context("--backend gpu: cannot open a GPU (install a Vulkan driver, e.g. mesa-vulkan-drivers)")?,
            ),
            BackendArg::Auto => match GpuContext::new(AdapterChoice::Hardware) {
                Ok(ctx) => announce(ctx),
                Err(e) => {
                    eprintln!("--backend auto: {e}; using the fast CPU path");
                    ChosenBackend::Cpu
                }
            },
        })
    }

    /// Chooses and makes one backend.
    pub fn make(self) -> Result<Box<dyn Backend + Send>> {
        Ok(self.choose()?.make())
    }
}

impl ChosenBackend {
    /// With `on` (`--gpu-atomic-backward`), the GPU's rasterize backward sums per-Gaussian gradients
    /// with atomic adds instead of records and a gather in tile order: faster on real GPUs, but the
    /// rounding then varies from run to run. An error on the CPU backends.
    pub fn atomic_backward(self, on: bool) -> Result<Self> {
        match self {
            ChosenBackend::Gpu(ctx, _) if on => {
                Ok(ChosenBackend::Gpu(ctx, splat_gpu::BackwardSums::Atomic))
            }
            _ if on => bail!("--gpu-atomic-backward needs --backend gpu (or auto with a GPU)"),
            other => Ok(other),
        }
    }

    pub fn make(&self) -> Box<dyn Backend + Send> {
        match self {
            ChosenBackend::Cpu => Box::new(CpuBackend::new()),
            ChosenBackend::Reference => Box::new(ReferenceBackend),
            ChosenBackend::Gpu(ctx, sums) => {
                Box::new(splat_gpu::GpuBackend::new(ctx.clone()).with_backward_sums(*sums))
            }
        }
    }

    /// The resident engine of this backend (the GPU's), making blocks of training steps run on the
    /// device that holds the state.
    pub fn resident(
        &self,
    ) -> Option<impl Fn(&[splat_io::dataset::View]) -> Box<dyn ResidentEngine>> {
        match self {
            ChosenBackend::Gpu(ctx, sums) => {
                let (ctx, sums) = (ctx.clone(), *sums);
                Some(move |views: &[splat_io::dataset::View]| {
                    Box::new(
                        splat_gpu::GpuResident::new(ctx.clone(), views).with_backward_sums(sums),
                    ) as Box<dyn ResidentEngine>
                })
            }
            _ => None,
        }
    }

    pub fn name(&self) -> String {
        match self {
            ChosenBackend::Cpu => "cpu".into(),
            ChosenBackend::Reference => "reference".into(),
            ChosenBackend::Gpu(ctx, _) => format!("gpu ({})", ctx.info.name),
        }
    }
}

/// Progress: a bar on a terminal, a plain line every ~2% otherwise.
pub struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    every: u64,
    started: Instant,
    first: u64,
    ema_loss: f64,
    ema_psnr: f64,
}

impl Progress {
    pub fn new(first: u64, total: u64) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::new(total);
            b.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} {per_sec} ETA {eta} {msg}")
                    .expect("valid template"),
            );
            b.set_position(first);
            b
        });
        Progress {
            bar,
            total,
            every: (total / 50).max(1),
            started: Instant::now(),
            first,
            ema_loss: 0.0,
            ema_psnr: 0.0,
        }
    }

    pub fn update(&mut self, s: &StepStats) {
        let a = if self.ema_loss == 0.0 { 1.0 } else { 0.05 };
        self.ema_loss += a * (s.loss - self.ema_loss);
        self.ema_psnr += a * (s.psnr - self.ema_psnr);
        let msg = format!(
            "loss {:.4} psnr {:.2} gaussians {}",
            self.ema_loss, self.ema_psnr, s.num_gaussians
        );
        if let Some(b) = &self.bar {
            b.set_position(s.step);
            if s.step.is_multiple_of(10) {
                b.set_message(msg);
            }
        } else if s.step.is_multiple_of(self.every) || s.step == self.total {
            let el = self.started.elapsed().as_secs_f64();
            let rate = (s.step - self.first) as f64 / el.max(1e-9);
            let eta = (self.total - s.step) as f64 / rate.max(1e-9);
            eprintln!(
                "step {}/{} {rate:.2} it/s ETA {eta:.0} s {msg}",
                s.step, self.total
            );
        }
        if let Some(r) = s.refined {
            let line = format!(
                "step {}: mcmc: {} relocated, {} added -> {} Gaussians",
                s.step, r.relocated, r.added, s.num_gaussians
            );
            match &self.bar {
                Some(b) if s.step.is_multiple_of(1000) => b.println(line),
                None if s.step.is_multiple_of(1000) => eprintln!("{line}"),
                _ => {}
            }
        }
        if let Some(d) = s.densified {
            let line = format!(
                "step {}: densified: {} cloned, {} split, {} pruned -> {} Gaussians",
                s.step, d.cloned, d.split, d.pruned, s.num_gaussians
            );
            match &self.bar {
                Some(b) if s.step.is_multiple_of(1000) => b.println(line),
                None if s.step.is_multiple_of(1000) => eprintln!("{line}"),
                _ => {}
            }
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// The backend of a run: `--backend` when given, else the one `config.json` records (a resumed run
/// goes on where it started), else the default. Says so when `--backend` changes a resumed run's.
fn resolve_backend(arg: Option<BackendArg>, cfg: &RunConfig, say: bool) -> Result<BackendArg> {
    let recorded = match cfg.backend.as_deref() {
        None => None,
        Some(name) => Some(BackendArg::from_str(name, true).map_err(|_| {
            anyhow::anyhow!(
                "config.json names the backend {name:?}, which this build does not know; choose one with --backend"
            )
        })?),
    };
    Ok(match (arg, recorded) {
        (Some(a), Some(r)) if a != r => {
            if say {
                eprintln!(
                    "note: the run was started on the {} backend; going on with --backend {}",
                    r.value_name(),
                    a.value_name()
                );
            }
            a
        }
        (Some(a), _) => a,
        (None, Some(r)) => r,
        (None, None) => {
            if say {
                eprintln!(
                    "note: config.json does not say which backend the run was started on (an older splat wrote it); using {}",
                    BackendArg::default().value_name()
                );
            }
            BackendArg::default()
        }
    })
}

pub fn train(args: TrainArgs, collective: Box<dyn Collective>) -> Result<()> {
    let (rank, ranks) = (collective.rank(), collective.size());
    let (dir, cfg, start) = match &args.resume {
        Some(dir) => {
            let cfg = run::read_config(dir).context("cannot resume")?;
            let (state, info) = run::read_checkpoint(dir).context("cannot resume")?;
            if rank == 0 {
                eprintln!(
                    "resuming {} from step {} of {}",
                    dir.display(),
                    state.step,
                    cfg.train.per_step().iterations
                );
            }
            (dir.clone(), cfg, Start::Resume(Box::new(state), info))
        }
        None => {
            if args.sh_degree > 3 {
                bail!("--sh-degree {} is above 3", args.sh_degree);
            }
            if args.iters == 0 {
                bail!("--iters must be at least 1");
            }
            if args.batch == 0 {
                bail!("--batch must be at least 1");
            }
            let data = args.data.clone().expect("required by clap");
            let data = std::fs::canonicalize(&data)
                .with_context(|| format!("{}: dataset folder not found", data.display()))?;
            let mut train = TrainConfig {
                iterations: args.iters,
                seed: args.seed,
                sh_degree: args.sh_degree,
                batch: args.batch,
                ..TrainConfig::default()
            };
            args.strategy.apply(&mut train)?;
            let cfg = RunConfig {
                data,
                load: args.data_args.options(args.eval)?,
                train,
                checkpoint_every: args.checkpoint_every,
                backend: Some(args.backend.unwrap_or_default().value_name()),
            };
            (
                args.out.clone().expect("required by clap"),
                cfg,
                Start::Fresh,
            )
        }
    };
    if cfg.train.batch < ranks {
        bail!(
            "--batch {} is smaller than the {ranks} MPI ranks: every rank renders at least one view per step",
            cfg.train.batch
        );
    }
    if !cfg.train.batch.is_multiple_of(ranks) {
        eprintln!(
            "warning: --batch {} is not a multiple of the {ranks} ranks; some ranks render more views than others",
            cfg.train.batch
        );
    }
    let ds = load_within_memory(&cfg, args.force)?;
    let first = match &start {
        Start::Resume(s, _) => s.step,
        Start::Fresh => 0,
    };
    let steps = cfg.train.per_step().iterations;
    let backend = resolve_backend(args.backend, &cfg, rank == 0)?
        .choose()?
        .atomic_backward(args.gpu_atomic_backward)?;
    if rank == 0 {
        eprintln!(
            "training {steps} steps{} on the {} backend{} into {}",
            if cfg.train.batch > 1 {
                format!(
                    " of {} views ({} views in all)",
                    cfg.train.batch, cfg.train.iterations
                )
            } else {
                String::new()
            },
            backend.name(),
            if ranks > 1 {
                format!(", {ranks} MPI ranks")
            } else {
                String::new()
            },
            dir.display()
        );
    }
    let mut progress = Progress::new(first, steps);
    let live = if args.view && rank == 0 {
        let (views, up) = crate::view_cmd::dataset_views(&ds)?;
        let len = up.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
        // Until the first snapshot: the initial points (frames the scene for the page).
        let scene = SharedScene::new(splat_train::init::gaussians_from_points(&ds.points, 0));
        let server = Server::start(
            &args.host,
            args.port,
            scene.clone(),
            ViewerOptions {
                background: ds.background,
                up: up.map(|v| v / len),
                dataset: Arc::new(views),
            },
        )
        .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
        println!("viewer: {}", server.url());
        std::io::stdout().flush().ok();
        Some((server, scene))
    } else {
        None
    };
    let mut last_publish: Option<Instant> = None;
    let make_resident = backend.resident().filter(|_| !args.gpu_per_stage);
    let resident = make_resident.as_ref().map(|make| run::ResidentOptions {
        make,
        sync_each_block: live.is_some(),
    });
    let metrics = run::train_run_parallel(
        &dir,
        &cfg,
        &ds,
        start,
        &|| backend.make(),
        args.stop_after,
        &mut |s, state| {
            if rank == 0 {
                progress.update(s)
            }
            if let Some((_, scene)) = &live {
                let status = TrainStatus {
                    step: s.step,
                    total_steps: steps,
                    loss: s.loss,
                    psnr: s.psnr,
                    num_gaussians: s.num_gaussians,
                };
                // A copy of the scene at most every LIVE_VIEW_INTERVAL, and only while a page is open.
                let due = last_publish.is_none_or(|t| t.elapsed() >= LIVE_VIEW_INTERVAL);
                if scene.clients() > 0 && (due || s.step == steps) {
                    scene.publish(state.export_gaussians(), state.active_sh_degree, status);
                    last_publish = Some(Instant::now());
                } else {
                    scene.set_status(status);
                }
            }
        },
        collective,
        resident,
    )?;
    progress.finish();
    if metrics.is_some() && rank == 0 {
        crate::convert_cmd::export_run(&dir, &args.export)?;
    }
    match metrics {
        Some(m) => {
            println!(
                "{} views: PSNR {:.2} dB, SSIM {:.4}; {} Gaussians; {} steps in {:.1} s ({:.2} it/s)",
                m.split, m.psnr, m.ssim, m.num_gaussians, m.iterations, m.train_seconds, m.its_per_second
            );
            println!(
                "outputs in {} (report: {})",
                dir.display(),
                dir.join(run::REPORT_FILE).display()
            );
            if live.is_none() {
                println!(
                    "view it: splat view {} --data {}",
                    crate::shell_word(&dir),
                    crate::shell_word(&cfg.data)
                );
            }
        }
        None if rank == 0 => println!(
            "stopped; resume with: splat train --resume {}",
            dir.display()
        ),
        None => {}
    }
    if let Some((server, scene)) = live {
        let ply = dir.join("point_cloud.ply");
        if let Ok(g) = splat_io::read_ply(&ply) {
            let status = TrainStatus {
                step: steps,
                total_steps: steps,
                num_gaussians: g.len(),
                ..Default::default()
            };
            let degree = g.sh_degree;
            scene.publish(g, degree, status);
        }
        println!(
            "training done; the viewer keeps serving the result at {} (Ctrl-C to stop)",
            server.url()
        );
        std::io::stdout().flush().ok();
        loop {
            std::thread::park();
        }
    }
    Ok(())
}

/// How often `--view` copies the training scene for the page (each copy costs an SPZ encode, shared
/// by every open page, and each page's download and decode: 2 s keeps the slowdown within 5% on 2
/// cores, see BENCHMARKS.md).
const LIVE_VIEW_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);
