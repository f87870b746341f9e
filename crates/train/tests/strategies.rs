//! The densification strategies end to end on a small generated capture. `--strategy mcmc`: a resumed
//! run is bitwise identical, the same seed gives the same bits, the count grows by 5% a refine step to
//! the cap (and starts at the cap when there are more initial points), and the reference and CPU
//! backends train the same scene (to rounding). `--absgrad`: its statistic bounds the plain one, so at
//! one threshold it densifies more. `--mip-filter`: resumes bitwise (the sizes are in the checkpoint),
//! the exported scene has the filter baked in, the two CPU backends agree.

mod common;

use common::cpu;

use std::path::Path;

use splat_io::dataset::demo::DemoOptions;
use splat_io::dataset::{Dataset, LoadOptions};
use splat_render::{Backend, ReferenceBackend};
use splat_train::config::{McmcConfig, Strategy};
use splat_train::metrics::Metrics;
use splat_train::run::{self, OnStep, RunConfig, Start, TrainRun};
use splat_train::{StepStats, TrainConfig};

fn demo(dir: &Path, points: usize) -> (Dataset, LoadOptions) {
    let opts = DemoOptions {
        width: 48,
        height: 36,
        views: 12,
        points,
        seed: 5,
        ..Default::default()
    };
    common::load_demo(dir, &opts)
}

fn reference() -> Box<dyn Backend + Send> {
    Box::new(ReferenceBackend)
}

fn mcmc_config(iterations: u64, seed: u64, cap_max: usize) -> TrainConfig {
    TrainConfig {
        iterations,
        seed,
        sh_degree_interval: 25,
        densify_from: 20,
        densify_until: 10_000,
        densify_interval: 15,
        strategy: Strategy::Mcmc,
        mcmc: McmcConfig {
            cap_max,
            ..McmcConfig::default()
        },
        ..TrainConfig::default()
    }
}

fn run_cfg(dir: &Path, load: &LoadOptions, train: TrainConfig) -> RunConfig {
    RunConfig {
        data: dir.to_path_buf(),
        load: load.clone(),
        train,
        checkpoint_every: 40,
        backend: None,
    }
}

fn train_with(
    out: &Path,
    cfg: &RunConfig,
    ds: &Dataset,
    backend: &dyn Fn() -> Box<dyn Backend + Send>,
    seen: &mut Vec<StepStats>,
) -> Metrics {
    TrainRun::new(out, cfg, ds, backend)
        .observe(OnStep(|s: &StepStats| seen.push(*s)))
        .run()
        .unwrap()
        .unwrap()
}

/// A run stopped after step 100 without final outputs: its last checkpoint.
fn stop_at_100(
    dir: &Path,
    cfg: &RunConfig,
    ds: &Dataset,
) -> (splat_train::TrainState, run::CheckpointInfo) {
    let out = TrainRun::new(dir, cfg, ds, &cpu)
        .stop_after(Some(100))
        .run()
        .unwrap();
    assert!(out.is_none(), "a stopped run writes no metrics");
    run::read_checkpoint(dir).unwrap()
}

#[test]
fn mcmc_resumes_bitwise_and_is_deterministic_per_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (ds, load) = demo(&data, 400);
    let cfg = run_cfg(&data, &load, mcmc_config(130, 3, 520));
    let full = tmp.path().join("full");
    let mut steps = Vec::new();
    let m_full = train_with(&full, &cfg, &ds, &cpu, &mut steps);
    // Refines at 30, 45, ..., 120: 400 -> 420 -> 441 -> 463 -> 486 -> 510 -> 520 (cap) ...
    let refined: Vec<(u64, usize)> = steps
        .iter()
        .filter(|s| s.refined.is_some())
        .map(|s| (s.step, s.num_gaussians))
        .collect();
    assert_eq!(
        refined,
        vec![
            (30, 420),
            (45, 441),
            (60, 463),
            (75, 486),
            (90, 510),
            (105, 520),
            (120, 520)
        ]
    );
    assert!(steps
        .iter()
        .all(|s| s.densified.is_none() && !s.opacity_reset));
    assert_eq!(m_full.num_gaussians, 520);

    // Stopped after step 100 (last checkpoint 80) and resumed.
    let parts = tmp.path().join("parts");
    let (state, info) = stop_at_100(&parts, &cfg, &ds);
    assert_eq!(state.step, 80);
    let resumed = Start::Resume(Box::new(state), info);
    TrainRun::new(&parts, &cfg, &ds, &cpu)
        .start(resumed)
        .run()
        .unwrap()
        .unwrap();
    let ply = |d: &Path| std::fs::read(d.join("point_cloud.ply")).unwrap();
    assert!(ply(&full) == ply(&parts), "resumed MCMC run differs");

    // The same seed again: the same bits; another seed: another scene of the same size.
    let again = tmp.path().join("again");
    train_with(&again, &cfg, &ds, &cpu, &mut Vec::new());
    assert!(ply(&full) == ply(&again), "same seed, different bits");
    let other = tmp.path().join("other");
    let cfg_other = run_cfg(&data, &load, mcmc_config(130, 4, 520));
    let m_other = train_with(&other, &cfg_other, &ds, &cpu, &mut Vec::new());
    assert_eq!(m_other.num_gaussians, 520);
    assert!(ply(&full) != ply(&other), "the seed changed nothing");
}

#[test]
fn mcmc_trains_alike_on_the_reference_and_cpu_backends() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (ds, load) = demo(&data, 300);
    let cfg = run_cfg(&data, &load, mcmc_config(100, 1, 400));
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let m_cpu = train_with(&tmp.path().join("cpu"), &cfg, &ds, &cpu, &mut a);
    let m_ref = train_with(&tmp.path().join("ref"), &cfg, &ds, &reference, &mut b);
    assert_eq!(m_cpu.num_gaussians, m_ref.num_gaussians);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.refined.map(|r| r.added), y.refined.map(|r| r.added));
        // Same views, same draws: the losses agree to the backends' rounding (drifting slowly).
        assert!(
            (x.loss - y.loss).abs() <= 2e-3 * x.loss.abs().max(1e-3),
            "step {}: {} vs {}",
            x.step,
            x.loss,
            y.loss
        );
    }
    assert!(
        (m_cpu.psnr - m_ref.psnr).abs() < 0.05,
        "test PSNR {} vs {}",
        m_cpu.psnr,
        m_ref.psnr
    );
    // The reported loss is the photometric one (the regularizer acts on the gradients only, as on
    // the GPU's resident path, which has no value for it).
    let s = &a[0];
    let reg = s.loss - (0.8 * s.l1 + 0.2 * (1.0 - s.ssim));
    assert!(reg.abs() < 1e-9, "loss {} = photometric + {reg}", s.loss);
}

#[test]
fn mcmc_cap_below_the_initial_points_bounds_the_count_from_the_first_step() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (ds, load) = demo(&data, 300);
    assert_eq!(ds.points.positions.len(), 300);
    let cfg = run_cfg(&data, &load, mcmc_config(50, 2, 200));
    let mut seen = Vec::new();
    let m = train_with(&tmp.path().join("out"), &cfg, &ds, &cpu, &mut seen);
    assert!(seen.iter().any(|s| s.refined.is_some()));
    assert!(
        seen.iter().all(|s| s.num_gaussians == 200),
        "{:?}",
        seen.iter().map(|s| s.num_gaussians).collect::<Vec<_>>()
    );
    assert_eq!(m.num_gaussians, 200);
}

#[test]
fn absgrad_densifies_more_at_the_same_threshold_on_both_backends() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (ds, load) = demo(&data, 300);
    let first_densify = |absgrad: bool, backend: &dyn Fn() -> Box<dyn Backend + Send>| {
        let train = TrainConfig {
            iterations: 31,
            densify_from: 20,
            densify_interval: 15,
            absgrad,
            ..TrainConfig::default()
        };
        let mut seen = Vec::new();
        let out = tmp.path().join(format!("{absgrad}-{}", backend().name()));
        train_with(&out, &run_cfg(&data, &load, train), &ds, backend, &mut seen);
        let d = seen[29].densified.expect("densifies at step 30");
        d.cloned + d.split
    };
    for backend in [&cpu as &dyn Fn() -> Box<dyn Backend + Send>, &reference] {
        let (plain, abs) = (first_densify(false, backend), first_densify(true, backend));
        // The same state until step 30; |sum of g| <= sum of |g| per component.
        assert!(
            abs > plain,
            "{}: absgrad {abs} vs plain {plain}",
            backend().name()
        );
    }
}

#[test]
fn mip_filter_resumes_bitwise_bakes_its_exports_and_matches_across_backends() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (ds, load) = demo(&data, 400);
    let train = TrainConfig {
        iterations: 130,
        seed: 2,
        sh_degree_interval: 25,
        densify_from: 20,
        densify_until: 70,
        densify_interval: 15,
        opacity_reset_interval: 60,
        mip_filter: true,
        ..TrainConfig::default()
    };
    let cfg = run_cfg(&data, &load, train);
    let full = tmp.path().join("full");
    let mut steps = Vec::new();
    let m_full = train_with(&full, &cfg, &ds, &cpu, &mut steps);
    assert!(steps.iter().filter(|s| s.densified.is_some()).count() >= 3);
    assert!(steps.iter().any(|s| s.opacity_reset));
    let parts = tmp.path().join("parts");
    let (state, info) = stop_at_100(&parts, &cfg, &ds);
    assert_eq!(
        state.filter_3d.len(),
        state.len(),
        "the checkpoint holds the sizes"
    );
    let resumed = Start::Resume(Box::new(state), info);
    TrainRun::new(&parts, &cfg, &ds, &cpu)
        .start(resumed)
        .run()
        .unwrap()
        .unwrap();
    let ply = |d: &Path| std::fs::read(d.join("point_cloud.ply")).unwrap();
    assert!(
        ply(&full) == ply(&parts),
        "resumed run with the 3D filter differs"
    );

    // Exported: every scale at least the Gaussian's filter size; the raw state is not.
    let (last, _) = run::read_checkpoint(&full).unwrap();
    let exported = splat_io::read_ply(&full.join("point_cloud.ply")).unwrap();
    assert_eq!(exported.len(), last.len());
    let mut baked = 0;
    for i in 0..last.len() {
        let sigma = last.filter_3d[i];
        assert!(sigma > 0.0);
        for k in 0..3 {
            assert!(
                exported.log_scales[i][k].exp() >= sigma * (1.0 - 1e-5),
                "{i}.{k}"
            );
        }
        let raw = last.gaussians.opacity_logits[i];
        assert!(exported.opacity_logits[i] <= raw + 1e-6);
        baked += (exported.opacity_logits[i] < raw - 1e-4) as usize;
    }
    assert!(
        baked > 10,
        "only {baked} exported opacities carry the filter"
    );

    let m_ref = train_with(
        &tmp.path().join("ref"),
        &cfg,
        &ds,
        &reference,
        &mut Vec::new(),
    );
    // Densification decisions sit on thresholds, so rounding may move a Gaussian or two.
    let (a, b) = (m_ref.num_gaussians as f64, m_full.num_gaussians as f64);
    assert!((a - b).abs() <= 0.01 * b, "{a} vs {b} Gaussians");
    assert!(
        (m_ref.psnr - m_full.psnr).abs() < 0.05,
        "{} vs {}",
        m_ref.psnr,
        m_full.psnr
    );
}
