//! How every command reads a dataset: the shared `--images`, `--downscale`, `--format`,
//! `--background` and `--skip-bad-images` arguments ([`DataArgs`]), loading with what was loaded said
//! on stderr ([`load_dataset`]), and for training, loading only within the machine's memory
//! ([`load_within_memory`]).

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use splat_io::dataset::{
    self, human_bytes, AlphaMode, Dataset, DatasetFormat, LoadOptions, MaskOptions,
};
use splat_train::config::Strategy;
use splat_train::memory;
use splat_train::preset::{SceneFacts, SceneFit};
use splat_train::run::RunConfig;

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
    #[arg(long, value_parser = crate::parse::parse_vec3)]
    pub background: Option<[f64; 3]>,
    /// Leave out images that are missing or cannot be decoded (with a warning) instead of stopping
    /// with an error.
    #[arg(long)]
    pub skip_bad_images: bool,
    /// Folder of masks (white = use the pixel, black = leave it out of the loss, the gradients and the
    /// metrics); the mask of `images/NAME` is `NAME.png` (COLMAP's `masks/NAME.jpg.png`), `NAME`, or
    /// `NAME` with a `.png` extension. Default: `masks/` in the dataset folder when there is one, and
    /// transforms.json's per-frame `mask_path`. Images without a mask use every pixel.
    #[arg(long, value_name = "DIR", conflicts_with = "no_masks")]
    pub masks: Option<std::path::PathBuf>,
    /// Ignore the dataset's masks.
    #[arg(long)]
    pub no_masks: bool,
    /// Masks are the other way round: black = use, white = leave out.
    #[arg(long)]
    pub invert_masks: bool,
    /// What the alpha channel of RGBA photos means: `background` composites them over the background
    /// colour and trains against that; `mask` leaves pixels with alpha under one half out.
    #[arg(long, value_enum, default_value_t = AlphaArg::Background)]
    pub alpha_mode: AlphaArg,
    /// Camera poses from this COLMAP images.txt instead of the dataset's, matched by image name: the
    /// refined poses a `--pose-opt` run writes (OUT/images.txt). Intrinsics and images stay the
    /// dataset's; images the file does not name keep their poses.
    #[arg(long, value_name = "FILE")]
    pub poses: Option<std::path::PathBuf>,
}

#[derive(Clone, Copy, Debug, Default, ValueEnum)]
pub enum AlphaArg {
    #[default]
    Background,
    Mask,
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
            masks: MaskOptions {
                dir: self.masks.clone(),
                ignore: self.no_masks,
                invert: self.invert_masks,
                alpha: match self.alpha_mode {
                    AlphaArg::Background => AlphaMode::Background,
                    AlphaArg::Mask => AlphaMode::Mask,
                },
            },
            poses: self.poses.clone(),
            display: None,
        })
    }
}

const MEMORY_HINT: &str =
    "use smaller images (--images images_N, --downscale F), a smaller Gaussian \
     budget (--max-gaussians N, or --cap-max N with --strategy mcmc), or --force to try anyway";

/// Loads the dataset of a run after checking, from the image headers, that its images fit in memory
/// beside the Gaussian budget; prints the estimate and refuses (unless `force`) when it exceeds what
/// the machine has.
pub fn load_within_memory(
    cfg: &mut RunConfig,
    force: bool,
    fit: Option<&SceneFit>,
) -> Result<Dataset> {
    // A budget chosen from the scene is known once the views are loaded: until then only the images
    // are checked against the memory.
    let chosen_later = fit.is_some_and(|f| f.budget_scale.is_some());
    let budget_before = match chosen_later {
        true => 0,
        false => (cfg.train.gaussian_cap()).unwrap_or(memory::DEFAULT_GAUSSIAN_BUDGET),
    };
    let gaussian_bytes =
        budget_before as u64 * memory::peak_bytes_per_gaussian(cfg.train.sh_degree);
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
                "up to {budget_before} Gaussians need about {}, more than the {} of memory available; {MEMORY_HINT}",
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
                "{e} (beside {} for up to {budget_before} Gaussians); {MEMORY_HINT}",
                human_bytes(gaussian_bytes)
            )
        }
        r => r?,
    };
    let initial = ds.points.positions.len();
    if let Some(fit) = fit {
        let facts = SceneFacts::of(&ds.train, ds.background, initial);
        let chosen = fit.apply(&mut cfg.train, &facts);
        if !chosen.is_empty() {
            eprintln!("chosen from the scene: {}", chosen.join("; "));
        }
    }
    let budget = (cfg.train.gaussian_cap()).unwrap_or(memory::DEFAULT_GAUSSIAN_BUDGET);
    if cfg.train.strategy == Strategy::Mcmc && initial > cfg.train.mcmc.cap_max {
        eprintln!(
            "note: {initial} initial points are more than the cap of {} Gaussians: training starts from a random {} of them",
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
            (Strategy::Mcmc, _) if chosen_later => ", the budget chosen from the scene",
            (Strategy::Mcmc, _) => ", the mcmc cap",
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
