//! `splat train`: parse, load within memory, choose the backend, build the run with its observers,
//! run it, export, print the next command.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use splat_io::dataset::Dataset;
use splat_train::budget;
use splat_train::metrics::Metrics;
use splat_train::metrics::TimeBudget;
use splat_train::parallel::Collective;
use splat_train::preset::{SceneFacts, SceneFit};
use splat_train::run::{self, MakeResident, RunConfig, Start, TrainRun};
use splat_train::TrainConfig;
use splat_train::TrainData;

use crate::backend_args::{resolve_backend, BackendArg, ChosenBackend};
use crate::dataset_args::{load_within_memory, DataArgs};
use crate::progress::Progress;
use crate::strategy_args::PresetArg;
use crate::viewer_link::LiveViewer;

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
    #[arg(long, conflicts_with_all = ["data", "out", "time_budget"])]
    pub resume: Option<PathBuf>,
    #[command(flatten)]
    pub opts: TrainOptions,
    /// Train even when the memory estimate exceeds the memory available.
    #[arg(long)]
    pub force: bool,
}

/// Everything `splat train` takes but the dataset, the output folder and `--resume` (`splat scan`
/// passes these through).
#[derive(Args, Clone)]
pub struct TrainOptions {
    #[command(flatten)]
    pub data_args: DataArgs,
    /// What to trade between time and quality (docs/presets.md has the measured times and
    /// PSNRs). fast: 2,000 steps; balanced: 5,000; quality: 15,000; all three with 3DGS-MCMC growing
    /// to a Gaussian budget chosen from the scene's views (reached by half the run), coarse-to-fine
    /// training (1/4 size for the first fifth, 1/2 for the second, full size after) and the schedule
    /// scaled to the steps. original: the 2023 algorithm and schedule, 30,000 steps. Every flag below
    /// that a preset sets, given by hand, wins.
    #[arg(long, value_enum, default_value_t = PresetArg::Balanced)]
    pub preset: PresetArg,
    /// Number of training steps [default: the preset's]; the preset's schedule scales with it
    /// (except the original's, which keeps its steps).
    #[arg(long)]
    pub iters: Option<u64>,
    /// Training resolution by step, e.g. `4@0,2@1000,1@2000` (1/4 size from step 0, 1/2 from step
    /// 1,000, full size from 2,000), or `full` [default: the preset's; original: full].
    #[arg(long, value_parser = crate::parse::parse_resolution_schedule)]
    pub resolution_schedule: Option<crate::parse::Levels>,
    /// Adam updates only the Gaussians the step's views see (gsplat's `visible_adam`, the original's
    /// `sparse_adam`): the others keep their values and moments. Off in every preset (it saved no time
    /// on the CPU here and cost quality on short runs; see NOTES.md); `--visible-adam` turns it on.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub visible_adam: Option<bool>,
    /// A colour model per training photo, trained with the scene, for captures whose exposure or white
    /// balance changes from photo to photo (phones, video): `affine` (a 3 x 4 colour matrix per photo),
    /// `bilateral-grid` (a 16 x 16 x 8 grid of them over position and brightness, gsplat's), or `none`.
    /// Test views and exported scenes use the scene's own colours; the colour-corrected PSNR says how
    /// much of the error is colour alone. Runs on the host with a GPU (per stage, not resident).
    /// Default `none`: on captures without exposure changes both cost quality (affine up to 0.5 dB,
    /// the grid 0.9-4.6 dB, BENCHMARKS.md); try `affine` first and judge by cc-PSNR and by eye.
    #[arg(long, value_enum)]
    pub appearance: Option<AppearanceArg>,
    /// Refine every training photo's camera pose with the scene (gsplat's pose_opt: a 9-value
    /// correction per photo, Adam at --pose-opt-lr decaying to a hundredth of it): for poses from
    /// structure from motion or a video that are a fraction of a degree off. The refined poses are
    /// written to OUT/images.txt (COLMAP; `--poses` reads it) and OUT/cameras.json; test views are
    /// scored at their given poses. Runs on the host with a GPU (per stage, not resident).
    #[arg(long)]
    pub pose_opt: bool,
    /// --pose-opt's learning rate (default gsplat's 1e-5). For poses a degree or more off, raise it:
    /// 30000/steps x 1e-5 (6e-5 for the balanced preset's 5,000 steps) moves them as far as gsplat's
    /// 30,000 steps, but costs more on poses that are good (cup: 1.0 dB, against 0.1; BENCHMARKS.md).
    #[arg(long, value_name = "RATE", requires = "pose_opt", value_parser = crate::parse::parse_pose_lr)]
    pub pose_opt_lr: Option<f64>,
    /// The step from which --pose-opt moves the poses (default 500, LichtFeld Studio's): before it
    /// the scene is too young for its pose gradient to say anything about the poses.
    #[arg(long, value_name = "STEP", requires = "pose_opt")]
    pub pose_opt_start: Option<u64>,
    /// After training, score the test views a second time from poses refined for this many steps each
    /// with the scene frozen (reported beside the metrics at the given poses: `test_time_poses` in
    /// metrics.json). For scenes trained with --pose-opt, whose frame can drift a little from the given
    /// test poses'. Needs --eval.
    #[arg(long, value_name = "STEPS", requires = "eval")]
    pub test_pose_steps: Option<u64>,
    /// Train for at most this long, e.g. `90s`, `5m`, `1h` (training only: loading and the final
    /// evaluation are not counted): a short calibration measures this machine's step on the data,
    /// the preset's schedule is planned to the most steps (up to its own or --iters) predicted to
    /// fit, and the run stops at the budget in any case, saying how much of the plan it ran.
    #[arg(long, value_parser = crate::parse::parse_duration)]
    pub time_budget: Option<f64>,
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
    #[arg(long, value_delimiter = ',', value_parser = crate::parse::parse_format)]
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
    /// Stop after this many steps without final outputs, leaving the checkpoint (for testing resume).
    #[arg(long, hide = true)]
    pub stop_after: Option<u64>,
}

pub fn train(args: TrainArgs, collective: Box<dyn Collective>) -> Result<()> {
    run_training(&args, collective, true)?.serve_if_viewing();
    Ok(())
}

/// A finished (or stopped) run, with the live viewer that `--view` started.
pub struct Trained {
    /// `None`: stopped by `--stop-after`.
    pub metrics: Option<Metrics>,
    live: Option<LiveViewer>,
    dir: PathBuf,
    steps: u64,
}

impl Trained {
    /// With `--view`, keeps serving the result until Ctrl-C.
    pub fn serve_if_viewing(self) {
        if let Some(live) = self.live {
            live.serve_result(&self.dir.join("point_cloud.ply"), self.steps);
        }
    }
}

/// The run `args` asks for, exported. With `suggest_view`, the result ends with the command that
/// views it.
pub fn run_training(
    args: &TrainArgs,
    collective: Box<dyn Collective>,
    suggest_view: bool,
) -> Result<Trained> {
    let (rank, ranks) = (collective.rank(), collective.size());
    let (dir, mut cfg, start, fit) = match &args.resume {
        Some(dir) => resumed_run(dir, rank)?,
        None => new_run(args)?,
    };
    check_ranks(&cfg, ranks)?;
    if args.opts.time_budget.is_some() && ranks > 1 {
        bail!("--time-budget runs on one process (the ranks of an MPI job would stop at different steps)");
    }
    let ds = load_within_memory(&mut cfg, args.force, fit.as_ref())?;
    let backend = resolve_backend(args.opts.backend, &cfg, rank == 0)?
        .choose()?
        .atomic_backward(args.opts.gpu_atomic_backward)?;
    let budget = match args.opts.time_budget {
        Some(seconds) => Some(plan_budget(args, &mut cfg, &ds, &backend, seconds)?),
        None => None,
    };
    if rank == 0 {
        announce(&cfg, &backend, ranks, &dir);
    }
    let live = match args.opts.view && rank == 0 {
        true => Some(LiveViewer::start(&ds, &args.opts.host, args.opts.port)?),
        false => None,
    };
    let make_backend = || backend.make();
    let make_resident = backend.resident().filter(|_| !args.opts.gpu_per_stage);
    let resident = make_resident.as_ref().map(|m| m as MakeResident);
    let steps = cfg.train.per_step().iterations;
    let mut run = TrainRun::new(&dir, &cfg, &ds, &make_backend)
        .stop_after(args.opts.stop_after)
        .collective(collective)
        .resident(resident)
        .observe_on_root(Progress::new(start.first_step(), steps))
        .time_budget(budget)
        .start(start);
    if let Some(live) = &live {
        run = run.observe_on_root(live.publisher());
    }
    let metrics = run.run()?;
    if metrics.is_some() && rank == 0 {
        crate::scene_files::export_run(&dir, &args.opts.export)?;
    }
    if rank == 0 {
        print_result(metrics.as_ref(), &dir, &cfg, suggest_view && live.is_none());
    }
    Ok(Trained {
        metrics,
        live,
        dir,
        steps,
    })
}

/// `--resume DIR`: the run's folder, configuration and last checkpoint.
fn resumed_run(dir: &Path, rank: usize) -> Result<(PathBuf, RunConfig, Start, Option<SceneFit>)> {
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
    Ok((
        dir.to_path_buf(),
        cfg,
        Start::Resume(Box::new(state), info),
        None,
    ))
}

/// A fresh run from the arguments: the preset, the flags given over it, and what is still to be
/// chosen from the scene.
fn new_run(args: &TrainArgs) -> Result<(PathBuf, RunConfig, Start, Option<SceneFit>)> {
    if args.opts.sh_degree > 3 {
        bail!("--sh-degree {} is above 3", args.opts.sh_degree);
    }
    if args.opts.iters == Some(0) {
        bail!("--iters must be at least 1");
    }
    if args.opts.batch == 0 {
        bail!("--batch must be at least 1");
    }
    let data = args.data.clone().expect("required by clap");
    let data = std::fs::canonicalize(&data)
        .with_context(|| format!("{}: dataset folder not found", data.display()))?;
    let (train, fit) = train_config(args, args.opts.iters)?;
    let cfg = RunConfig {
        data,
        load: args.opts.data_args.options(args.opts.eval)?,
        train,
        checkpoint_every: args.opts.checkpoint_every,
        backend: Some(args.opts.backend.unwrap_or_default().value_name()),
    };
    let out = args.out.clone().expect("required by clap");
    Ok((out, cfg, Start::Fresh, fit))
}

/// The preset's configuration for `iters` steps with the flags given over it, and what is still
/// to be chosen from the scene.
fn train_config(args: &TrainArgs, iters: Option<u64>) -> Result<(TrainConfig, Option<SceneFit>)> {
    let preset = args.opts.preset.preset();
    let mut train = TrainConfig {
        seed: args.opts.seed,
        sh_degree: args.opts.sh_degree,
        batch: args.opts.batch,
        ..preset.config(iters)
    };
    let mut fit = preset.scene_fit();
    args.opts.strategy.apply(&mut train, &mut fit)?;
    if let Some(levels) = &args.opts.resolution_schedule {
        train.resolution_schedule = levels.0.clone();
        if let Some(f) = fit.as_mut() {
            f.resolution = false;
        }
    }
    if let Some(on) = args.opts.visible_adam {
        train.visible_adam = on;
    }
    if let Some(a) = args.opts.appearance {
        train.appearance = a.kind();
    }
    train.pose_opt |= args.opts.pose_opt;
    if let Some(lr) = args.opts.pose_opt_lr {
        train.pose_opt_lr = lr;
    }
    if let Some(step) = args.opts.pose_opt_start {
        train.pose_opt_start = step;
    }
    if let Some(n) = args.opts.test_pose_steps {
        train.test_pose_steps = n;
    }
    Ok((train, fit))
}

/// `--time-budget`: calibrates this machine on the run's views, plans the most steps (up to
/// `--iters` or the preset's) predicted to fit, and writes that plan into `cfg`.
fn plan_budget(
    args: &TrainArgs,
    cfg: &mut RunConfig,
    ds: &Dataset,
    backend: &ChosenBackend,
    seconds: f64,
) -> Result<TimeBudget> {
    let facts = SceneFacts::of(&ds.train, ds.background, ds.points.positions.len());
    let config_for = |n: u64| -> TrainConfig {
        let (mut c, fit) = train_config(args, Some(n)).expect("checked by new_run");
        if let Some(fit) = fit {
            fit.apply(&mut c, &facts);
        }
        c
    };
    let max_steps = cfg.train.iterations;
    // Timed as the run will train: in resident blocks on a GPU unless --gpu-per-stage.
    let resident = (backend.resident())
        .filter(|_| !args.opts.gpu_per_stage)
        .map(|make| make(&ds.train));
    let data = TrainData::of(ds);
    let cal = budget::calibrate(&cfg.train, data, &ds.points, backend.make(), resident);
    let left = seconds - cal.seconds;
    let (steps, predicted) =
        budget::plan_steps(max_steps, left * budget::PLAN_FRACTION, &cal, &config_for);
    let rates: Vec<String> = (cal.seconds_per_step.iter())
        .map(|(f, s)| format!("1/{f} size {:.1} ms", s * 1e3))
        .collect();
    eprintln!(
        "time budget {seconds:.0} s: calibrated in {:.1} s ({} a step at {} Gaussians{}); planned \
         {steps} of {max_steps} steps, predicted {predicted:.0} s",
        cal.seconds,
        rates.join(", "),
        cal.initial,
        if cal.resident { ", resident" } else { "" }
    );
    // Fewer steps than asked for are refused below MIN_STEPS (a run asked to be shorter is not).
    let useful = budget::MIN_STEPS.min(max_steps);
    if steps < useful {
        let need = budget::predicted_seconds(&config_for(useful), &cal) / budget::PLAN_FRACTION
            + cal.seconds;
        bail!(
            "a time budget of {seconds:.0} s allows about {steps} steps on this machine; a useful splat \
             needs at least {useful} (about {:.0} s here): give a longer --time-budget or a faster --preset",
            need.ceil()
        );
    }
    cfg.train = config_for(steps);
    Ok(TimeBudget {
        seconds,
        calibration_seconds: cal.seconds,
        planned_steps: steps,
        predicted_seconds: predicted,
    })
}

/// Every rank of an MPI job renders at least one view per step.
fn check_ranks(cfg: &RunConfig, ranks: usize) -> Result<()> {
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
    Ok(())
}

/// What is about to run, on stderr.
fn announce(cfg: &RunConfig, backend: &ChosenBackend, ranks: usize, dir: &Path) {
    let steps = cfg.train.per_step().iterations;
    let views = match cfg.train.batch > 1 {
        true => format!(
            " of {} views ({} views in all)",
            cfg.train.batch, cfg.train.iterations
        ),
        false => String::new(),
    };
    let mpi = match ranks > 1 {
        true => format!(", {ranks} MPI ranks"),
        false => String::new(),
    };
    eprintln!(
        "training {steps} steps{views} on the {} backend{mpi} into {}",
        backend.name(),
        dir.display()
    );
}

/// The result and the next command, on stdout (`None`: stopped by `--stop-after`).
fn print_result(metrics: Option<&Metrics>, dir: &Path, cfg: &RunConfig, suggest_view: bool) {
    let Some(m) = metrics else {
        println!(
            "stopped; resume with: {} train --resume {}",
            crate::invocation::program(),
            crate::shell_word(dir)
        );
        return;
    };
    println!(
        "{} views: PSNR {:.2} dB, SSIM {:.4}, cc-PSNR {}; {} Gaussians; {} steps in {:.1} s ({:.2} it/s)",
        m.split,
        m.psnr,
        m.ssim,
        m.cc_psnr.map_or("-".into(), |c| format!("{c:.2} dB")),
        m.num_gaussians,
        m.iterations,
        m.train_seconds,
        m.its_per_second
    );
    if let Some(t) = &m.test_time_poses {
        let most = t.rotation_deg.iter().fold(0.0f64, |a, &b| a.max(b));
        println!(
            "test views at poses refined for {} steps with the scene frozen: PSNR {:.2} dB, SSIM {:.4}, cc-PSNR {} (turned up to {most:.2} degrees)",
            t.steps,
            t.psnr,
            t.ssim,
            t.cc_psnr.map_or("-".into(), |c| format!("{c:.2} dB")),
        );
    }
    if let Some(b) = &m.time_budget {
        println!(
            "time budget {:.0} s: ran {} of the {} planned steps ({:.0}%) in {:.1} s of training after a {:.1} s calibration",
            b.seconds,
            m.iterations,
            b.planned_steps,
            100.0 * m.iterations as f64 / b.planned_steps.max(1) as f64,
            m.train_seconds,
            b.calibration_seconds
        );
    }
    println!(
        "outputs in {} (report: {})",
        dir.display(),
        dir.join(run::REPORT_FILE).display()
    );
    if suggest_view {
        println!(
            "view it: {} view {} --data {}",
            crate::invocation::program(),
            crate::shell_word(dir),
            crate::shell_word(&cfg.data)
        );
    }
}

/// `--appearance`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum AppearanceArg {
    None,
    Affine,
    BilateralGrid,
}

impl AppearanceArg {
    pub fn kind(self) -> splat_train::appearance::AppearanceKind {
        use splat_train::appearance::AppearanceKind as K;
        match self {
            AppearanceArg::None => K::None,
            AppearanceArg::Affine => K::Affine,
            AppearanceArg::BilateralGrid => K::BilateralGrid,
        }
    }
}
