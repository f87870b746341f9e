//! The presets' training on the resident engine against the host trainer (per-stage GPU backend, same
//! seed): 3DGS-MCMC (regularizers in the device's update, position noise on the device, relocation and
//! growth on the host between blocks), visible-only Adam and a coarse-to-fine level change. From the
//! same state the two agree step by step to rounding; a whole preset-like schedule runs on the device
//! with its events at the same steps.

mod common;

use std::path::Path;
use std::sync::Arc;

use splat_gpu::{GpuBackend, GpuContext, GpuResident};
use splat_io::dataset::demo::{write_demo_dataset, DemoOptions};
use splat_io::dataset::{self, Dataset, LoadOptions};
use splat_train::config::{McmcConfig, ResolutionLevel, Strategy};
use splat_train::state::{group_params, GROUPS};
use splat_train::{StepStats, TrainConfig, TrainData, TrainState, Trainer};

fn demo(dir: &Path) -> Dataset {
    let opts = DemoOptions {
        width: 48,
        height: 36,
        views: 12,
        points: 600,
        seed: 5,
        ..Default::default()
    };
    write_demo_dataset(dir, &opts).unwrap();
    dataset::load(dir, &LoadOptions::default()).unwrap()
}

/// MCMC from 600 points to at most 800, refining every 10 steps from 20 to 70, its noise gate at
/// opacity 0.6 (not 0.005) so that the noise moves most Gaussians; 1/2 size until step 36, full size
/// after; visible-only Adam.
fn config(iterations: u64) -> TrainConfig {
    TrainConfig {
        iterations,
        seed: 13,
        sh_degree_interval: 25,
        strategy: Strategy::Mcmc,
        densify_from: 20,
        densify_interval: 10,
        densify_until: 70,
        mcmc: McmcConfig {
            cap_max: 800,
            growth: 0.1,
            noise_gate_opacity: 0.6,
            ..McmcConfig::default()
        },
        resolution_schedule: vec![
            ResolutionLevel {
                from: 0,
                downscale: 2,
            },
            ResolutionLevel {
                from: 36,
                downscale: 1,
            },
        ],
        visible_adam: true,
        ..TrainConfig::default()
    }
}

fn trainer<'a>(
    ctx: &Arc<GpuContext>,
    ds: &'a Dataset,
    cfg: &TrainConfig,
    state: Option<&TrainState>,
    resident: bool,
) -> Trainer<'a> {
    let backend = Box::new(GpuBackend::new(ctx.clone()));
    let mut t = match state {
        Some(s) => Trainer::resume(cfg.clone(), TrainData::of(ds), s.clone(), backend),
        None => Trainer::new(cfg.clone(), TrainData::of(ds), &ds.points, backend),
    };
    if resident {
        let engine = GpuResident::new(ctx.clone(), &ds.train);
        t.with_resident(Box::new(engine)).unwrap();
        assert!(t.resident_name().is_some());
    }
    t
}

/// The host's state after 30 steps of `cfg` (at 1/2 size, with established moments).
fn state_at_30(ctx: &Arc<GpuContext>, ds: &Dataset, cfg: &TrainConfig) -> TrainState {
    let mut t = trainer(ctx, ds, cfg, None, false);
    while t.state.step < 30 {
        t.step().unwrap();
    }
    t.state
}

fn max_rel(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = (a.iter())
        .fold(0.0f64, |m, &x| m.max(x.abs() as f64))
        .max(1e-6);
    (a.iter().zip(b))
        .map(|(&x, &y)| (x as f64 - y as f64).abs() / scale)
        .fold(0.0, f64::max)
}

/// From the state at step 30 (1/2 size, established moments), 15 steps on each path: a refine at 40
/// (relocation and growth), the level change at 36, visible-only updates and the noise every step.
#[test]
fn mcmc_blocks_with_a_level_change_match_host_steps() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let ctx = Arc::new(ctx);
    let tmp = tempfile::tempdir().unwrap();
    let ds = demo(tmp.path());
    let cfg = config(80);
    let start = state_at_30(&ctx, &ds, &cfg);
    let mut a = trainer(&ctx, &ds, &cfg, Some(&start), false);
    let mut b = trainer(&ctx, &ds, &cfg, Some(&start), true);
    b.set_sync_every(15);
    let mut refined = Vec::new();
    for _ in 0..15 {
        let (x, y) = (a.step().unwrap(), b.step().unwrap());
        assert_eq!((x.step, x.skipped), (y.step, y.skipped));
        assert_eq!(x.refined, y.refined, "step {}", x.step);
        assert_eq!(x.num_gaussians, y.num_gaussians, "step {}", x.step);
        let rel = (x.loss - y.loss).abs() / x.loss;
        assert!(rel < 1e-5, "step {}: loss {} vs {}", x.step, x.loss, y.loss);
        if let Some(r) = y.refined {
            refined.push((y.step, r.relocated + r.added));
        }
    }
    assert_eq!(refined.len(), 1, "{refined:?}");
    assert_eq!(refined[0].0, 40);
    assert!(refined[0].1 > 0, "the refine moved nothing");
    assert!(b.block_done());
    b.sync();
    // Values agree to 1e-4 of their group's scale, except where the first moment is at rounding level
    // (an isotropic Gaussian's rotation gradient is ~1e-10): there the two devices' rounding picks the
    // sign of Adam's unit step, and the values may differ by up to 2 lr a step.
    let lrs = [
        cfg.position_lr_init * ds.scene_extent,
        cfg.sh_dc_lr,
        cfg.sh_rest_lr,
        cfg.opacity_lr,
        cfg.scale_lr,
        cfg.rotation_lr,
    ];
    let (mut ga, mut gb) = (a.state.gaussians.clone(), b.state.gaussians.clone());
    let mut report = Vec::new();
    for (gi, name) in GROUPS.iter().enumerate() {
        let (x, y) = (
            group_params(&mut ga, gi).to_vec(),
            group_params(&mut gb, gi).to_vec(),
        );
        let m = &a.state.adam[gi].m;
        let scale = x.iter().fold(1e-6f64, |s, &v| s.max(v.abs() as f64));
        let mut worst = 0.0f64;
        for k in 0..x.len() {
            let d = (x[k] as f64 - y[k] as f64).abs();
            if d / scale < 1e-4 {
                worst = worst.max(d / scale);
                continue;
            }
            assert!(
                m[k].abs() < 1e-6,
                "{name}[{k}]: {} vs {}, m {}",
                x[k],
                y[k],
                m[k]
            );
            assert!(
                d <= 2.0 * lrs[gi] * 15.0,
                "{name}[{k}]: {} vs {}",
                x[k],
                y[k]
            );
        }
        report.push((*name, worst));
    }
    report.push(("means m", max_rel(&a.state.adam[0].m, &b.state.adam[0].m)));
    report.push(("opacity v", max_rel(&a.state.adam[3].v, &b.state.adam[3].v)));
    eprintln!("state {report:?}");
    for (name, rel) in &report[GROUPS.len()..] {
        assert!(*rel < 1e-4, "{name}: {rel}");
    }
    for (x, y) in a.state.adam.iter().zip(&b.state.adam) {
        assert_eq!(x.step, y.step);
    }
}

/// The same changes, each alone, move the result: without visible-only Adam, without the noise (its
/// learning rate 0) and without the regularizers the device's state after the same 15 steps differs.
/// (A device path that ignored one of them would fail the test above only if the host ignored it too.)
#[test]
fn each_preset_part_changes_the_device_result() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let ctx = Arc::new(ctx);
    let tmp = tempfile::tempdir().unwrap();
    let ds = demo(tmp.path());
    let cfg = config(80);
    let start = state_at_30(&ctx, &ds, &cfg);
    let means_after = |cfg: &TrainConfig| {
        let mut t = trainer(&ctx, &ds, cfg, Some(&start), true);
        t.set_sync_steps(vec![39]);
        for _ in 0..9 {
            t.step().unwrap();
        }
        t.sync();
        t.state.gaussians.means.clone()
    };
    let base = means_after(&cfg);
    let mut m = cfg.mcmc.clone();
    m.noise_lr = 0.0;
    let variants = [
        (
            "dense Adam",
            TrainConfig {
                visible_adam: false,
                ..cfg.clone()
            },
        ),
        (
            "no noise",
            TrainConfig {
                mcmc: m,
                ..cfg.clone()
            },
        ),
        (
            "no regularizers",
            TrainConfig {
                mcmc: McmcConfig {
                    opacity_reg: 0.0,
                    scale_reg: 0.0,
                    ..cfg.mcmc.clone()
                },
                ..cfg.clone()
            },
        ),
    ];
    for (name, c) in variants {
        assert_ne!(means_after(&c), base, "{name}");
    }
}

/// A preset-like schedule from the initial points, all on the device: refines at the same steps with
/// the same counts (relocation and growth read opacities that differ by rounding only early on), and
/// the loss goes the same way.
#[test]
fn a_preset_schedule_runs_on_the_device() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let ctx = Arc::new(ctx);
    let tmp = tempfile::tempdir().unwrap();
    let ds = demo(tmp.path());
    let cfg = config(80);
    let run = |resident: bool| -> (Vec<StepStats>, usize) {
        let mut t = trainer(&ctx, &ds, &cfg, None, resident);
        t.set_sync_every(40);
        let mut out = Vec::new();
        while !t.done() {
            out.push(t.step().unwrap());
        }
        t.sync();
        (out, t.state.len())
    };
    let (h, nh) = run(false);
    let (d, nd) = run(true);
    assert_eq!((h.len(), d.len()), (80, 80));
    let refines = |s: &[StepStats]| -> Vec<u64> {
        s.iter()
            .filter(|x| x.refined.is_some())
            .map(|x| x.step)
            .collect()
    };
    assert_eq!(refines(&d), [30, 40, 50, 60]);
    assert_eq!(refines(&h), refines(&d));
    assert_eq!(nh, nd);
    let tail = |s: &[StepStats]| s[70..].iter().map(|x| x.loss).sum::<f64>() / 10.0;
    let (lh, ld) = (tail(&h), tail(&d));
    eprintln!("mean loss of the last 10 steps: host {lh:.5}, resident {ld:.5}");
    assert!((lh - ld).abs() / lh < 0.05, "{lh} vs {ld}");
    // Learning at full size (a full-size view's loss is not comparable with a half-size one's).
    let mean = |r: std::ops::Range<usize>| {
        d[r.clone()].iter().map(|x| x.loss).sum::<f64>() / r.len() as f64
    };
    let (full, end) = (mean(36..41), mean(75..80));
    assert!(
        end < full,
        "mean loss of steps 37-41 {full}, of 76-80 {end}"
    );
}
