//! Training with masks and per-image appearance models: left-out pixels change nothing, the models
//! resume bit for bit from a checkpoint, and they learn.

mod common;

use common::cpu;

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use splat_io::dataset::demo::{write_demo_dataset, DemoOptions};
use splat_io::dataset::demo_variants::DemoVariant;
use splat_io::dataset::{self, Dataset, LoadOptions};
use splat_render::CpuBackend;
use splat_train::appearance::AppearanceKind;
use splat_train::run::{self, RunConfig, Start, TrainRun};
use splat_train::{TrainConfig, TrainData, Trainer};

fn demo(dir: &Path, variant: DemoVariant) -> (Dataset, LoadOptions) {
    let opts = DemoOptions {
        width: 48,
        height: 36,
        views: 12,
        points: 800,
        seed: 5,
        variant,
    };
    common::load_demo(dir, &opts)
}

/// Densifies, resets opacity and raises the SH degree within a short run.
fn short_config(iterations: u64, appearance: AppearanceKind) -> TrainConfig {
    TrainConfig {
        iterations,
        seed: 11,
        sh_degree_interval: 25,
        densify_from: 20,
        densify_interval: 15,
        opacity_reset_interval: 60,
        appearance,
        ..TrainConfig::default()
    }
}

#[test]
fn left_out_pixels_change_nothing_in_training() {
    let tmp = tempfile::tempdir().unwrap();
    let (ds, _) = demo(tmp.path(), DemoVariant::Mover);
    let masked: usize = ds
        .train
        .iter()
        .filter_map(|v| v.mask.as_ref())
        .map(|m| m.keep.len() - m.kept())
        .sum();
    assert!(masked > 500, "{masked} pixels left out");
    // The same capture with anything at all where the masks leave pixels out.
    let mut noisy = ds.clone();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for v in &mut noisy.train {
        let m = v.mask.clone().unwrap();
        for (p, &k) in m.keep.iter().enumerate() {
            if k == 0 {
                for c in 0..3 {
                    v.image.data[p * 3 + c] = rng.random();
                }
            }
        }
    }
    let train = |ds: &Dataset, kind| {
        let cfg = short_config(90, kind);
        let mut t = Trainer::new(cfg, TrainData::of(ds), &ds.points, cpu());
        let mut densified = 0;
        while !t.done() {
            densified += t.step().unwrap().densified.is_some() as usize;
        }
        assert!(densified >= 3);
        splat_train::checkpoint::to_bytes(&t.state)
    };
    for kind in [AppearanceKind::None, AppearanceKind::BilateralGrid] {
        assert!(
            train(&ds, kind) == train(&noisy, kind),
            "{kind:?}: the left-out pixels changed the state"
        );
    }
    // Without the masks the same change does change it (the test can fail).
    let unmask = |d: &Dataset| {
        let mut d = d.clone();
        d.train.iter_mut().for_each(|v| v.mask = None);
        d
    };
    assert!(
        train(&unmask(&ds), AppearanceKind::None) != train(&unmask(&noisy), AppearanceKind::None)
    );
}

#[test]
fn appearance_models_resume_bitwise_and_learn() {
    for kind in [AppearanceKind::Affine, AppearanceKind::BilateralGrid] {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        let (ds, load) = demo(&data, DemoVariant::Exposure);
        let cfg = RunConfig {
            data,
            load,
            train: short_config(130, kind),
            checkpoint_every: 40,
            backend: None,
        };
        let full = tmp.path().join("full");
        let m_full = TrainRun::new(&full, &cfg, &ds, &cpu)
            .run()
            .unwrap()
            .unwrap();
        let parts = tmp.path().join("parts");
        let stopped = TrainRun::new(&parts, &cfg, &ds, &cpu)
            .stop_after(Some(100))
            .run()
            .unwrap();
        assert!(stopped.is_none());
        let (state, info) = run::read_checkpoint(&parts).unwrap();
        assert_eq!(state.step, 80);
        let model = state
            .appearance
            .as_ref()
            .expect("the checkpoint holds the models");
        assert_eq!((model.kind, model.images), (kind, ds.train.len()));
        let m_parts = TrainRun::new(&parts, &cfg, &ds, &cpu)
            .start(Start::Resume(Box::new(state), info))
            .run()
            .unwrap()
            .unwrap();
        let a = std::fs::read(full.join("point_cloud.ply")).unwrap();
        let b = std::fs::read(parts.join("point_cloud.ply")).unwrap();
        assert!(a == b, "{kind:?}: final PLYs differ");
        assert_eq!(m_full.views, m_parts.views);
        let (fa, _) = run::read_checkpoint(&full).unwrap();
        let (fb, _) = run::read_checkpoint(&parts).unwrap();
        assert_eq!(fa.appearance, fb.appearance);
        // The models moved away from the identity, each image its own way, and their mean stayed there.
        let model = fa.appearance.unwrap();
        let n = kind.per_image();
        let mut identity = vec![0.0f32; n];
        splat_train::appearance::identity(kind, &mut identity);
        let moved = |i: usize| {
            (model.of_image(i).iter().zip(&identity))
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max)
        };
        // (The grid's learning rate warms up from 2e-5 over 1,000 steps: it moves little in 130.)
        let least = if kind == AppearanceKind::Affine {
            1e-3
        } else {
            1e-5
        };
        assert!((0..model.images).all(|i| moved(i) > least), "{kind:?}");
        assert_ne!(model.of_image(0), model.of_image(1));
        for k in 0..n {
            let mean = (0..model.images)
                .map(|i| model.of_image(i)[k] as f64)
                .sum::<f64>();
            assert!(
                (mean / model.images as f64 - identity[k] as f64).abs() < 1e-5,
                "{kind:?} {k}"
            );
        }
        // The scene file is the scene alone: a run without models writes the same layout.
        assert!(m_full.cc_psnr.is_some() && m_full.views.iter().all(|v| v.cc_psnr.is_some()));
    }
}

/// Test PSNR (mean over the held-out views, which are clean) after a short run.
fn test_psnr(ds: &Dataset, cfg: TrainConfig) -> (f64, f64) {
    let mut t = Trainer::new(cfg, TrainData::of(ds), &ds.points, cpu());
    while !t.done() {
        t.step().unwrap();
    }
    let g = t.state.export_gaussians();
    let m = splat_train::eval::evaluate(
        &mut CpuBackend::new(),
        &g,
        &ds.test,
        None,
        ds.background,
        3,
        |_, _| {},
    );
    (
        splat_train::eval::means(&m).0,
        splat_train::eval::mean_cc_psnr(&m).unwrap(),
    )
}

fn capture(dir: &Path, variant: DemoVariant) -> Dataset {
    let opts = DemoOptions {
        width: 96,
        height: 72,
        views: 24,
        points: 2000,
        seed: 7,
        variant,
    };
    write_demo_dataset(dir, &opts).unwrap();
    dataset::load(
        dir,
        &LoadOptions {
            eval: true,
            ..Default::default()
        },
    )
    .unwrap()
}

fn run_config(appearance: AppearanceKind) -> TrainConfig {
    TrainConfig {
        iterations: 1500,
        densify_from: 200,
        densify_until: 1000,
        opacity_reset_interval: 600,
        appearance,
        ..TrainConfig::default()
    }
}

#[test]
fn masks_keep_a_moving_object_out_of_the_scene() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = capture(tmp.path(), DemoVariant::Mover);
    let mut unmasked = ds.clone();
    unmasked.train.iter_mut().for_each(|v| v.mask = None);
    let (with, _) = test_psnr(&ds, run_config(AppearanceKind::None));
    let (without, _) = test_psnr(&unmasked, run_config(AppearanceKind::None));
    eprintln!("mover: test PSNR {with:.2} dB with masks, {without:.2} dB without");
    assert!(
        with > without + 0.3,
        "with masks {with:.2} dB, without {without:.2} dB"
    );
}

#[test]
fn appearance_models_absorb_exposure_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = capture(tmp.path(), DemoVariant::Exposure);
    let (none, none_cc) = test_psnr(&ds, run_config(AppearanceKind::None));
    let (affine, affine_cc) = test_psnr(&ds, run_config(AppearanceKind::Affine));
    eprintln!(
        "exposure: none {none:.2} / cc {none_cc:.2} dB, affine {affine:.2} / cc {affine_cc:.2} dB"
    );
    assert!(affine_cc > none_cc + 1.0 && affine > none + 1.0);
}
