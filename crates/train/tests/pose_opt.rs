//! `--pose-opt`: the corrections resume bit for bit, the refined poses written beside the scene read
//! back through `--poses`, and on the demo with perturbed poses they move toward the truth.

mod common;

use std::path::Path;

use common::cpu;
use splat_io::dataset::demo::DemoOptions;
use splat_io::dataset::demo_variants::{DemoVariant, TRUE_POSES_FILE};
use splat_io::dataset::{self, Dataset, LoadOptions};
use splat_train::pose::PoseError;
use splat_train::run::{self, RunConfig, Start, TrainRun};
use splat_train::{TrainConfig, TrainData, Trainer};

fn perturbed(dir: &Path, width: u32, height: u32, views: usize) -> (Dataset, LoadOptions) {
    let opts = DemoOptions {
        width,
        height,
        views,
        points: 1500,
        seed: 5,
        variant: DemoVariant::PerturbedPoses,
    };
    common::load_demo(dir, &opts)
}

/// The 64 x 48 perturbed demo (16 views) in `dir/data`, and the same loaded with its true poses.
fn perturbed_and_truth(dir: &Path) -> (Dataset, Dataset) {
    let data = dir.join("data");
    let (ds, mut load) = perturbed(&data, 64, 48, 16);
    load.poses = Some(data.join(TRUE_POSES_FILE));
    (ds, dataset::load(&data, &load).unwrap())
}

/// A 1,500-step run on `ds` (densifying, resetting opacity), with or without `--pose-opt` (at 15x
/// gsplat's rate: 30,000 steps' worth of it, as `--pose-opt-lr` can set for poses this far off).
fn trained(ds: &Dataset, pose_opt: bool) -> Trainer<'_> {
    let cfg = TrainConfig {
        pose_opt_lr: 15.0 * splat_train::pose::LEARNING_RATE,
        pose_opt_start: 0,
        iterations: 1500,
        seed: 1,
        densify_from: 200,
        densify_until: 1000,
        opacity_reset_interval: 600,
        pose_opt,
        ..TrainConfig::default()
    };
    let mut t = Trainer::new(cfg, TrainData::of(ds), &ds.points, cpu());
    while !t.done() {
        t.step().unwrap();
    }
    t
}

/// The median rotation error (degrees) of `cams` against the dataset loaded with its true poses.
fn median_rotation_error(cams: &[splat_core::Camera], truth: &Dataset) -> f64 {
    let mut e: Vec<f64> = cams
        .iter()
        .zip(&truth.train)
        .map(|(c, t)| PoseError::between(c, &t.camera).rotation_deg)
        .collect();
    e.sort_by(f64::total_cmp);
    e[e.len() / 2]
}

#[test]
fn pose_corrections_resume_bitwise_and_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (ds, load) = perturbed(&data, 48, 36, 12);
    let cfg = RunConfig {
        data: data.clone(),
        load: load.clone(),
        train: TrainConfig {
            iterations: 130,
            seed: 3,
            densify_from: 20,
            densify_interval: 15,
            opacity_reset_interval: 60,
            pose_opt: true,
            // After the first checkpoint (40), before the stop (100).
            pose_opt_start: 50,
            ..TrainConfig::default()
        },
        checkpoint_every: 40,
        backend: None,
    };
    let full = tmp.path().join("full");
    TrainRun::new(&full, &cfg, &ds, &cpu)
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
    assert_eq!(state.poses.as_ref().unwrap().views, ds.train.len());
    TrainRun::new(&parts, &cfg, &ds, &cpu)
        .start(Start::Resume(Box::new(state), info))
        .run()
        .unwrap()
        .unwrap();
    for file in ["point_cloud.ply", "images.txt", "cameras.json"] {
        let a = std::fs::read(full.join(file)).unwrap();
        let b = std::fs::read(parts.join(file)).unwrap();
        assert!(a == b, "{file} differs after the resume");
    }
    let (fa, _) = run::read_checkpoint(&full).unwrap();
    let poses = fa.poses.unwrap();
    assert!(poses.params.iter().any(|&v| v != 0.0), "nothing moved");

    // images.txt read back as --poses gives the refined training cameras and the test views' own (the
    // angle through acos resolves about 1e-6 degrees near zero).
    let trainer = Trainer::resume(
        cfg.train.clone(),
        TrainData::of(&ds),
        fa_state(&full),
        cpu(),
    );
    let refined = trainer.refined_cameras();
    let mut with_poses = load;
    with_poses.poses = Some(full.join("images.txt"));
    let back = dataset::load(&data, &with_poses).unwrap();
    assert!(back.notes.iter().any(|n| n.contains("poses of 12 of 12")));
    for (v, c) in back.train.iter().zip(&refined) {
        let e = PoseError::between(&v.camera, c);
        assert!(
            e.rotation_deg < 1e-5 && e.position < 1e-9,
            "{}: {e:?}",
            v.name
        );
    }
    for (v, w) in back.test.iter().zip(&ds.test) {
        let e = PoseError::between(&v.camera, &w.camera);
        assert!(
            e.rotation_deg < 1e-5 && e.position < 1e-9,
            "{}: {e:?}",
            v.name
        );
    }
    let cams: serde_json::Value =
        serde_json::from_slice(&std::fs::read(full.join("cameras.json")).unwrap()).unwrap();
    let cams = cams.as_array().unwrap();
    assert_eq!(cams.len(), 12);
    let refined_flags = cams.iter().filter(|c| c["refined"] == true).count();
    assert_eq!(refined_flags, ds.train.len());
}

fn fa_state(dir: &Path) -> splat_train::TrainState {
    run::read_checkpoint(dir).unwrap().0
}

/// On the demo with every training pose 0.5-2 degrees and 1-3% of the spread off, a short run with
/// `--pose-opt` at a raised rate brings the median rotation error down.
#[test]
fn pose_opt_moves_perturbed_poses_toward_the_truth() {
    let tmp = tempfile::tempdir().unwrap();
    let (ds, truth) = perturbed_and_truth(tmp.path());
    let given: Vec<_> = ds.train.iter().map(|v| v.camera.clone()).collect();
    let before = median_rotation_error(&given, &truth);
    assert!((0.5..2.0).contains(&before), "{before}");
    let t = trained(&ds, true);
    let after = median_rotation_error(&t.refined_cameras(), &truth);
    eprintln!("median rotation error {before:.3} -> {after:.3} degrees");
    assert!(after < 0.75 * before, "{before} -> {after}");
}

/// Test-time refinement: a scene trained on the demo's true poses, a test view knocked 1-2 degrees
/// off; refining its pose with the scene frozen brings it most of the way back and raises its PSNR.
#[test]
fn test_time_refinement_finds_a_knocked_test_pose() {
    let tmp = tempfile::tempdir().unwrap();
    let (ds, truth) = perturbed_and_truth(tmp.path());
    let t = trained(&truth, false);
    let g = t.state.export_gaussians();
    // The test views knocked off as the training views of `ds` were (view 1's perturbation).
    let knock = |v: &splat_io::dataset::View| {
        let mut v = v.clone();
        let (from, to) = (&truth.train[0].camera, &ds.train[0].camera);
        // The same relative turn and shift as training view 0 got.
        let turn =
            splat_core::math::matmul(&to.rotation, &splat_core::math::transpose(&from.rotation));
        v.camera.rotation = splat_core::math::matmul(&turn, &v.camera.rotation);
        let c = v.camera.center();
        let shift: [f64; 3] = std::array::from_fn(|k| to.center()[k] - from.center()[k]);
        let moved: [f64; 3] = std::array::from_fn(|k| c[k] + shift[k]);
        let rc = splat_core::math::mat3_vec(&v.camera.rotation, moved);
        v.camera.translation = rc.map(|x| -x);
        v
    };
    let knocked: Vec<_> = truth.test.iter().map(knock).collect();
    let mut backend = splat_render::CpuBackend::new();
    let bg = truth.background;
    let score = |cams: Option<&[splat_core::Camera]>, b: &mut splat_render::CpuBackend| {
        let m = splat_train::eval::evaluate(b, &g, &knocked, cams, bg, 3, |_, _| {});
        splat_train::eval::means(&m).0
    };
    let before_psnr = score(None, &mut backend);
    let cams = splat_train::eval_pose::refine_test_poses(&mut backend, &g, &knocked, bg, 3, 100);
    let after_psnr = score(Some(&cams), &mut backend);
    for ((k, c), v) in knocked.iter().zip(&cams).zip(&truth.test) {
        let before = PoseError::between(&k.camera, &v.camera).rotation_deg;
        let after = PoseError::between(c, &v.camera).rotation_deg;
        eprintln!("{}: {before:.3} -> {after:.3} degrees", v.name);
        assert!(after < 0.5 * before, "{}: {before} -> {after}", v.name);
    }
    eprintln!("PSNR {before_psnr:.2} -> {after_psnr:.2} dB");
    assert!(after_psnr > before_psnr + 1.0);
}

/// `--pose-opt` whose corrections never move (the start after the last step) trains the same scene
/// bit for bit as a run without it: what it costs on good poses is the poses' motion, nothing else.
#[test]
fn pose_opt_that_never_starts_trains_the_same_bits() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (ds, load) = perturbed(&data, 48, 36, 12);
    let scene = |pose_opt: bool| {
        let cfg = RunConfig {
            data: data.clone(),
            load: load.clone(),
            train: TrainConfig {
                iterations: 120,
                seed: 3,
                densify_from: 20,
                densify_interval: 15,
                opacity_reset_interval: 60,
                pose_opt,
                pose_opt_start: 1000,
                ..TrainConfig::default()
            },
            checkpoint_every: 0,
            backend: None,
        };
        let out = tmp.path().join(format!("out-{pose_opt}"));
        TrainRun::new(&out, &cfg, &ds, &cpu).run().unwrap().unwrap();
        std::fs::read(out.join("point_cloud.ply")).unwrap()
    };
    assert!(scene(true) == scene(false), "the scenes differ");
}
