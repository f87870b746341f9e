//! `splat bench`: per-stage timing of the training step against the measured machine peak.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use splat_train::bench::{self, BenchOptions};

use crate::backend_args::BackendArg;
use crate::dataset_args::{load_dataset, DataArgs};

#[derive(Args)]
pub struct BenchArgs {
    /// Dataset folder (as for `splat train`).
    pub data: PathBuf,
    #[command(flatten)]
    pub data_args: DataArgs,
    /// Measured steps (after the warm-up).
    #[arg(long, default_value_t = 50)]
    pub steps: u64,
    /// Unmeasured steps first.
    #[arg(long, default_value_t = 5)]
    pub warmup: u64,
    /// SH degree, active from the first step (default 3, or the --scene's own).
    #[arg(long)]
    pub sh_degree: Option<usize>,
    /// Also write the report as JSON (with a top-level `its_per_second`; on a GPU also
    /// `dispatches_per_step`, `submissions_per_step`, `readbacks_per_step`, `sort_passes_per_step`,
    /// `sort_bytes_per_step`, `device_bytes_per_gaussian`, the measured device peaks, and per stage
    /// `device_ms` where the device has timestamp queries).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Time the step on this scene (PLY, SPZ, SOG, .splat or compressed PLY: a trained
    /// `point_cloud.ply`, say) instead of the dataset's initial points. Its own SH degree is kept
    /// unless --sh-degree is given.
    #[arg(long)]
    pub scene: Option<PathBuf>,
    /// Pipeline implementation.
    #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
    pub backend: BackendArg,
    /// With a GPU: time the rasterize backward summing with atomic adds (see `splat train --help`).
    #[arg(long)]
    pub gpu_atomic_backward: bool,
}

pub fn bench(args: BenchArgs) -> Result<()> {
    let scene = match &args.scene {
        Some(path) => {
            let scene = splat_io::formats::read_scene(path)
                .with_context(|| format!("--scene {}", path.display()))?;
            if scene.is_empty() {
                bail!("--scene {}: the scene has no Gaussians", path.display());
            }
            Some(scene)
        }
        None => None,
    };
    let sh_degree = args
        .sh_degree
        .unwrap_or(scene.as_ref().map_or(3, |s| s.sh_degree));
    if sh_degree > 3 {
        bail!("--sh-degree {sh_degree} is above 3");
    }
    if args.steps == 0 {
        bail!("--steps must be at least 1");
    }
    let ds = load_dataset(&args.data, &args.data_args.options(false)?)?;
    let opts = BenchOptions {
        steps: args.steps,
        warmup: args.warmup,
        sh_degree,
        seed: 0,
        scene,
    };
    let backend = args
        .backend
        .choose()?
        .atomic_backward(args.gpu_atomic_backward)?;
    let mut report = bench::run(&ds, &opts, backend.make());
    if let Some(make) = backend.resident() {
        match bench::run_resident(&ds, &opts, backend.make(), make(&ds.train)) {
            Ok(r) => report.set_resident(r),
            Err(why) => eprintln!("note: no resident measurement ({why})"),
        }
    }
    print!("{}", bench::format_table(&report));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report).expect("serializable");
        splat_io::write_atomic(path, text.as_bytes())
            .with_context(|| format!("{}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
