//! `splat eval`: PSNR and SSIM of a scene on a dataset's test views. The scene is any format splat
//! reads, or a training output folder, whose `config.json` then names the dataset.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use splat_io::dataset::Dataset;
use splat_train::eval::{evaluate, means};
use splat_train::run::{self, RunConfig};

use crate::backend_args::BackendArg;
use crate::dataset_args::{load_dataset, DataArgs};

#[derive(Args)]
pub struct EvalArgs {
    /// A training output folder (its point_cloud.ply) or a scene in any format splat reads.
    pub scene: PathBuf,
    /// Dataset whose test views are evaluated (default: the one the run in SCENE was trained on).
    #[arg(long)]
    pub data: Option<PathBuf>,
    #[command(flatten)]
    pub data_args: DataArgs,
    /// SH degree to render with (default: all the scene has).
    #[arg(long)]
    pub sh_degree: Option<usize>,
    /// Pipeline implementation.
    #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
    pub backend: BackendArg,
    /// Score each view from its pose refined for this many steps with the scene frozen (test-time
    /// refinement, the second protocol for scenes trained with --pose-opt) instead of its given pose.
    #[arg(long, value_name = "STEPS")]
    pub test_pose_steps: Option<u64>,
    /// Score only every N-th view of the split (its 1st, N+1-th, ...): a quicker look at a large test
    /// split (lego's 200 views with --test-pose-steps take minutes each). The mean says how many.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub every: u64,
}

/// Keeps the 1st, `every + 1`-th, ... of the views `eval_views` scores (the test split, or the training
/// views when there is none).
fn keep_every(ds: &mut Dataset, every: u64) {
    let mut i = 0u64;
    ds.eval_views_mut().retain(|_| {
        i += 1;
        (i - 1).is_multiple_of(every)
    });
}

/// The PLY of a scene argument and, for a run folder, its config.
fn scene_and_config(scene: &Path) -> Result<(PathBuf, Option<RunConfig>)> {
    if scene.is_dir() && scene.join("point_cloud.ply").is_file() {
        let ply = scene.join("point_cloud.ply");
        let cfg = run::read_config(scene).ok();
        Ok((ply, cfg))
    } else {
        Ok((scene.to_path_buf(), None))
    }
}

fn eval_dataset(
    data: &Option<PathBuf>,
    data_args: &DataArgs,
    cfg: &Option<RunConfig>,
) -> Result<Dataset> {
    let (path, mut opts) = match (data, cfg) {
        (Some(d), _) => (d.clone(), data_args.options(true)?),
        (None, Some(c)) => (c.data.clone(), c.load.clone()),
        (None, None) => bail!("--data is required when SCENE is not a training output folder"),
    };
    opts.eval = true;
    if data.is_some()
        || data_args.images.is_some()
        || data_args.downscale.is_some()
        || data_args.poses.is_some()
    {
        let explicit = data_args.options(true)?;
        opts.images = explicit.images.or(opts.images);
        opts.downscale = explicit.downscale.or(opts.downscale);
        opts.poses = explicit.poses.or(opts.poses);
    }
    load_dataset(&path, &opts)
}

pub fn eval(args: EvalArgs) -> Result<()> {
    let (ply, cfg) = scene_and_config(&args.scene)?;
    if args.data.is_none() && cfg.is_none() {
        bail!("--data is required when SCENE is not a training output folder");
    }
    let g = splat_io::read_scene(&ply)?;
    let mut ds = eval_dataset(&args.data, &args.data_args, &cfg)?;
    keep_every(&mut ds, args.every);
    let (views, split) = ds.eval_views();
    let degree = args.sh_degree.unwrap_or(g.sh_degree).min(g.sh_degree);
    let mut backend = args.backend.make()?;
    let refined = args.test_pose_steps.map(|steps| {
        let b = backend.as_mut();
        splat_train::eval_pose::refine_test_poses(b, &g, views, ds.background, degree, steps)
    });
    if let Some(steps) = args.test_pose_steps {
        println!("poses refined for {steps} steps each with the scene frozen");
    }
    let m = evaluate(
        backend.as_mut(),
        &g,
        views,
        refined.as_deref(),
        ds.background,
        degree,
        |_, _| {},
    );
    let cc = |c: Option<f64>| c.map_or("-".into(), |c| format!("{c:.2} dB"));
    for v in &m {
        println!(
            "{}: PSNR {:.2} dB, SSIM {:.4}, cc-PSNR {}",
            v.name,
            v.psnr,
            v.ssim,
            cc(v.cc_psnr)
        );
    }
    let (p, s) = means(&m);
    println!(
        "mean over {} {} views: PSNR {p:.2} dB, SSIM {s:.4}, cc-PSNR {} ({} Gaussians)",
        m.len(),
        split,
        cc(splat_train::eval::mean_cc_psnr(&m)),
        g.len()
    );
    Ok(())
}
