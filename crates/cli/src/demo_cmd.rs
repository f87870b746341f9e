//! `splat demo`: generate the built-in capture, train on it through the COLMAP loader, report the PSNR.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use splat_io::dataset::demo::{write_demo_dataset, DemoOptions};
use splat_io::dataset::demo_variants::DemoVariant;
use splat_io::dataset::LoadOptions;
use splat_train::preset::SceneFacts;
use splat_train::run::{MakeResident, RunConfig, TrainRun};
use splat_train::TrainConfig;

use crate::backend_args::BackendArg;
use crate::dataset_args::load_dataset;
use crate::progress::Progress;
use crate::strategy_args::PresetArg;

#[derive(Args)]
pub struct DemoArgs {
    /// Output folder: the generated dataset goes to DIR/dataset, the trained scene and metrics to DIR.
    #[arg(long, short, default_value = "splat-demo")]
    pub out: PathBuf,
    /// What to trade between time and quality (as `splat train --preset`).
    #[arg(long, value_enum, default_value_t = PresetArg::Balanced)]
    pub preset: PresetArg,
    /// Training steps [default: the preset's].
    #[arg(long)]
    pub iters: Option<u64>,
    /// Seed of training.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Pipeline implementation.
    #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
    pub backend: BackendArg,
    /// The capture as a phone brings it: `exposure` gives every training photo its own exposure (+-1
    /// stop) and white balance (+-15% per channel); `mover` paints an object that moves into half of
    /// them and writes `masks/` that leave it out. Test views stay clean, so the metrics say what the
    /// scene learned. `fisheye` takes every photo through an OPENCV_FISHEYE lens seeing 170 degrees
    /// across (rendered natively as the equidistant fisheye). `perturbed-poses` knocks every
    /// training photo's pose in the model off by 0.5-2 degrees and 1-3% of the camera spread (the true
    /// poses in DIR/dataset/true_poses.txt, which `--poses` reads), for `--pose-opt` to find them.
    #[arg(long, value_enum, default_value_t = VariantArg::Plain)]
    pub variant: VariantArg,
    /// A colour model per training photo (as `splat train --appearance`).
    #[arg(long, value_enum)]
    pub appearance: Option<crate::train_cmd::AppearanceArg>,
    /// Refine the training photos' poses with the scene (as `splat train --pose-opt`).
    #[arg(long)]
    pub pose_opt: bool,
    /// --pose-opt's learning rate (as `splat train --pose-opt-lr`; 6e-5 finds the perturbed-poses
    /// variant's poses, 1e-5 is gsplat's and the default).
    #[arg(long, value_name = "RATE", requires = "pose_opt", value_parser = crate::parse::parse_pose_lr)]
    pub pose_opt_lr: Option<f64>,
    /// The step from which --pose-opt moves the poses (as `splat train --pose-opt-start`).
    #[arg(long, value_name = "STEP", requires = "pose_opt")]
    pub pose_opt_start: Option<u64>,
    /// Size of the photos, `WIDTHxHEIGHT` (32 views).
    #[arg(long, value_parser = parse_size, default_value = "160x120")]
    pub size: (u32, u32),
    /// Only write the dataset (to DIR/dataset), for `splat train` to use.
    #[arg(long)]
    pub dataset_only: bool,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum VariantArg {
    Plain,
    Exposure,
    Mover,
    Fisheye,
    PerturbedPoses,
}

pub fn demo(args: DemoArgs) -> Result<()> {
    let data = args.out.join("dataset");
    eprintln!(
        "generating the demo capture (a ray-traced room) in {}",
        data.display()
    );
    let variant = match args.variant {
        VariantArg::Plain => DemoVariant::Plain,
        VariantArg::Exposure => DemoVariant::Exposure,
        VariantArg::Mover => DemoVariant::Mover,
        VariantArg::Fisheye => DemoVariant::Fisheye,
        VariantArg::PerturbedPoses => DemoVariant::PerturbedPoses,
    };
    write_demo_dataset(
        &data,
        &DemoOptions {
            variant,
            width: args.size.0,
            height: args.size.1,
            ..DemoOptions::default()
        },
    )?;
    if args.dataset_only {
        println!("dataset: {}", data.display());
        return Ok(());
    }
    let data = std::fs::canonicalize(&data).with_context(|| format!("{}", data.display()))?;
    let preset = args.preset.preset();
    let mut cfg = RunConfig {
        data: data.clone(),
        load: LoadOptions {
            eval: true,
            ..Default::default()
        },
        train: TrainConfig {
            seed: args.seed,
            appearance: args.appearance.map(|a| a.kind()).unwrap_or_default(),
            pose_opt: args.pose_opt,
            pose_opt_lr: args.pose_opt_lr.unwrap_or(splat_train::pose::LEARNING_RATE),
            pose_opt_start: args.pose_opt_start.unwrap_or(splat_train::pose::START_STEP),
            ..preset.config(args.iters)
        },
        checkpoint_every: 1000,
        backend: Some(args.backend.value_name()),
    };
    let ds = load_dataset(&data, &cfg.load)?;
    if let Some(fit) = preset.scene_fit() {
        let facts = SceneFacts::of(&ds.train, ds.background, ds.points.positions.len());
        let chosen = fit.apply(&mut cfg.train, &facts);
        eprintln!("preset {}: {}", preset.name(), chosen.join("; "));
    }
    let backend = args.backend.choose()?;
    let make_backend = || backend.make();
    let make_resident = backend.resident();
    let resident = make_resident.as_ref().map(|m| m as MakeResident);
    let metrics = TrainRun::new(&args.out, &cfg, &ds, &make_backend)
        .resident(resident)
        .observe(Progress::new(0, cfg.train.iterations))
        .run()?
        .expect("runs to the end");
    println!(
        "demo: test PSNR {:.2} dB, SSIM {:.4}, cc-PSNR {:.2} dB over {} held-out views; {} Gaussians; {} steps in {:.1} s",
        metrics.psnr,
        metrics.ssim,
        metrics.cc_psnr.unwrap_or(f64::NAN),
        metrics.views.len(),
        metrics.num_gaussians,
        metrics.iterations,
        metrics.train_seconds
    );
    println!(
        "outputs: {0}/point_cloud.ply, {0}/metrics.json, {0}/report.html, {0}/renders/",
        args.out.display()
    );
    println!(
        "view it: {} view {} --data {}",
        crate::invocation::program(),
        crate::shell_word(&args.out),
        crate::shell_word(&data)
    );
    Ok(())
}

/// `WIDTHxHEIGHT`, each 16 to 4096.
fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("{s:?}: expected WIDTHxHEIGHT, e.g. 320x240"))?;
    let side = |v: &str| {
        v.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (16..=4096).contains(n))
            .ok_or_else(|| format!("{s:?}: each side must be a whole number from 16 to 4096"))
    };
    Ok((side(w)?, side(h)?))
}
