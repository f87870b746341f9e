//! Training end to end on small generated captures: resume is bit-exact, the demo learns, densification
//! edits parameters and moments together.

mod common;

use common::cpu;

use std::path::Path;

use splat_io::dataset::demo::DemoOptions;
use splat_io::dataset::{Dataset, LoadOptions};
use splat_train::run::{self, OnStep, RunConfig, Start, TrainRun};
use splat_train::{StepStats, TrainConfig, TrainData};

fn demo_dataset(dir: &Path, opts: DemoOptions) -> (Dataset, LoadOptions) {
    common::load_demo(dir, &opts)
}

/// A short schedule that still densifies, resets opacity and raises the SH degree several times.
fn short_config(iterations: u64) -> TrainConfig {
    TrainConfig {
        iterations,
        seed: 11,
        sh_degree_interval: 25,
        densify_from: 20,
        densify_interval: 15,
        opacity_reset_interval: 60,
        ..TrainConfig::default()
    }
}

#[test]
fn resumed_run_is_bitwise_identical_to_an_uninterrupted_one() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = DemoOptions {
        width: 48,
        height: 36,
        views: 12,
        points: 800,
        seed: 5,
        ..Default::default()
    };
    let (ds, load) = demo_dataset(&tmp.path().join("data"), opts);
    let cfg = RunConfig {
        data: tmp.path().join("data"),
        load,
        train: short_config(130),
        checkpoint_every: 40,
        backend: None,
    };
    let full = tmp.path().join("full");
    let m_full = TrainRun::new(&full, &cfg, &ds, &cpu)
        .run()
        .unwrap()
        .unwrap();

    // Stop at step 100 (the last checkpoint is step 80), then resume from the checkpoint.
    let parts = tmp.path().join("parts");
    let mut densified = 0;
    let stopped = TrainRun::new(&parts, &cfg, &ds, &cpu)
        .stop_after(Some(100))
        .observe(OnStep(|s: &StepStats| {
            densified += s.densified.is_some() as usize;
        }))
        .run()
        .unwrap();
    assert!(stopped.is_none());
    assert!(
        densified >= 3,
        "the schedule must densify before the checkpoint"
    );
    let (state, info) = run::read_checkpoint(&parts).unwrap();
    assert_eq!((state.step, info.step), (80, 80));
    assert_eq!(run::read_config(&parts).unwrap(), cfg);
    let m_parts = TrainRun::new(&parts, &cfg, &ds, &cpu)
        .start(Start::Resume(Box::new(state), info))
        .run()
        .unwrap()
        .unwrap();

    let a = std::fs::read(full.join("point_cloud.ply")).unwrap();
    let b = std::fs::read(parts.join("point_cloud.ply")).unwrap();
    assert!(a == b, "final PLYs differ");
    assert_eq!(m_full.num_gaussians, m_parts.num_gaussians);
    assert_eq!(m_full.views, m_parts.views);
    assert_ne!(m_full.num_gaussians, 800, "densification changed the count");
    // The outputs are all there.
    for f in [
        "metrics.json",
        "config.json",
        "checkpoints/latest.ckpt",
        "renders",
    ] {
        assert!(full.join(f).exists(), "{f}");
    }
    assert_eq!(
        std::fs::read_dir(full.join("renders")).unwrap().count(),
        ds.test.len()
    );
}

/// The PSNR the small demo must reach on its held-out views after 800 steps. It reached 24.0 dB on the
/// development machine (AVX-512 kernels); 2 dB of margin covers other kernel levels and platforms.
const DEMO_MIN_PSNR: f64 = 22.0;

#[test]
fn the_demo_scene_trains_to_a_useful_psnr() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = DemoOptions {
        width: 80,
        height: 60,
        views: 24,
        points: 3000,
        seed: 7,
        ..Default::default()
    };
    let (ds, load) = demo_dataset(&tmp.path().join("data"), opts);
    let cfg = RunConfig {
        data: tmp.path().join("data"),
        load,
        train: TrainConfig {
            iterations: 800,
            densify_from: 200,
            densify_interval: 100,
            opacity_reset_interval: 10_000,
            sh_degree_interval: 150,
            ..TrainConfig::default()
        },
        checkpoint_every: 0,
        backend: None,
    };
    let m = TrainRun::new(&tmp.path().join("out"), &cfg, &ds, &cpu)
        .run()
        .unwrap()
        .unwrap();
    eprintln!(
        "demo: PSNR {:.2} SSIM {:.3} with {} Gaussians",
        m.psnr, m.ssim, m.num_gaussians
    );
    assert_eq!(m.split, "test");
    assert!(
        m.psnr >= DEMO_MIN_PSNR,
        "demo PSNR {:.2} < {DEMO_MIN_PSNR}",
        m.psnr
    );
}

#[test]
fn degenerate_gaussians_do_not_poison_a_step_and_non_finite_steps_are_skipped() {
    use splat_train::Trainer;
    let tmp = tempfile::tempdir().unwrap();
    let opts = DemoOptions {
        width: 40,
        height: 30,
        views: 8,
        points: 300,
        seed: 2,
        ..Default::default()
    };
    let (ds, _) = demo_dataset(&tmp.path().join("data"), opts);
    // No densification here, so indices stay put.
    let cfg = TrainConfig {
        iterations: 50,
        densify_from: 1000,
        ..TrainConfig::default()
    };
    let mut t = Trainer::new(cfg.clone(), TrainData::of(&ds), &ds.points, cpu());
    {
        let g = &mut t.state.gaussians;
        g.log_scales[0] = [f32::NEG_INFINITY; 3]; // zero scale
        g.log_scales[1] = [14.0; 3]; // huge
        g.rotations[2] = [0.0; 4]; // zero quaternion
        g.opacity_logits[3] = 100.0; // opacity 1
        g.opacity_logits[4] = -100.0; // opacity 0
        g.means[5] = [f32::NAN, 0.0, 0.0];
    }
    for _ in 0..30 {
        let s = t.step().unwrap();
        assert!(!s.skipped && s.loss.is_finite(), "step {} poisoned", s.step);
    }
    let g = &t.state.gaussians;
    for i in 6..g.len() {
        assert!(g.means[i]
            .iter()
            .chain(&g.log_scales[i])
            .chain(&g.rotations[i])
            .all(|v| v.is_finite()));
    }

    // An infinite colour makes the loss infinite: the step is skipped, repeatedly, then training stops.
    let mut t = Trainer::new(cfg, TrainData::of(&ds), &ds.points, cpu());
    for g in t.state.gaussians.sh_dc.iter_mut() {
        *g = [f32::INFINITY; 3];
    }
    let before = t.state.gaussians.means.clone();
    let mut skipped = 0;
    let err = loop {
        match t.step() {
            Ok(s) => {
                assert!(s.skipped);
                skipped += 1;
            }
            Err(e) => break e,
        }
    };
    assert_eq!(
        skipped + 1,
        splat_train::trainer::MAX_CONSECUTIVE_SKIPS as usize
    );
    assert_eq!(
        t.state.gaussians.means, before,
        "a skipped step changed parameters"
    );
    assert!(err.to_string().contains("diverged"), "{err}");
}

#[test]
fn the_last_iteration_neither_densifies_nor_resets_opacity() {
    use splat_train::Trainer;
    let tmp = tempfile::tempdir().unwrap();
    let opts = DemoOptions {
        width: 32,
        height: 24,
        views: 6,
        points: 300,
        seed: 9,
        ..Default::default()
    };
    let (ds, _) = demo_dataset(&tmp.path().join("data"), opts);
    // Both schedules fall on iteration 60, the last one.
    let cfg = TrainConfig {
        iterations: 60,
        densify_from: 10,
        densify_interval: 20,
        opacity_reset_interval: 60,
        ..TrainConfig::default()
    };
    let mut t = Trainer::new(cfg, TrainData::of(&ds), &ds.points, cpu());
    let mut last = None;
    while !t.done() {
        let s = t.step().unwrap();
        if s.step == 40 {
            assert!(
                s.densified.is_some(),
                "densifies on schedule before the end"
            );
        }
        last = Some(s);
    }
    let last = last.unwrap();
    assert_eq!(last.step, 60);
    assert!(last.densified.is_none() && !last.opacity_reset);
    let opaque = t
        .state
        .gaussians
        .opacity_logits
        .iter()
        .filter(|&&l| splat_core::sigmoid(l) > 0.02)
        .count();
    assert!(opaque > 0, "the result must not be the reset model");
}
