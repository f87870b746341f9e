//! The resident trainer ([`GpuResident`]: blocks of steps on the device, views drawn there) against the
//! host trainer running every step through the per-stage GPU backend with the same seed: the same views
//! (the losses per step agree to 1e-6, so the views drawn on the device are the host's), the same
//! parameters to rounding, the host events between blocks at the same steps. A list capacity small enough
//! to overflow changes nothing (bitwise), and non-finite steps are skipped without changing the state.

mod common;

use std::path::Path;
use std::sync::Arc;

use splat_gpu::{BackwardSums, GpuBackend, GpuContext, GpuResident};
use splat_io::dataset::demo::{write_demo_dataset, DemoOptions};
use splat_io::dataset::{self, Dataset, LoadOptions};
use splat_train::resident::{BlockConstants, PlannedStep, ResidentEngine};
use splat_train::{StepStats, TrainConfig, TrainData, Trainer};

fn demo(dir: &Path) -> Dataset {
    demo_with(
        dir,
        &DemoOptions {
            width: 48,
            height: 36,
            views: 12,
            points: 600,
            seed: 5,
            ..Default::default()
        },
    )
}

fn demo_with(dir: &Path, opts: &DemoOptions) -> Dataset {
    write_demo_dataset(dir, opts).unwrap();
    dataset::load(dir, &LoadOptions::default()).unwrap()
}

/// Densifies at 35, 50, 65, resets opacity at 60, raises the SH degree every 25 steps.
fn config(iterations: u64) -> TrainConfig {
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

fn trainer<'a>(
    ctx: &Arc<GpuContext>,
    ds: &'a Dataset,
    cfg: TrainConfig,
    resident: Option<GpuResident>,
) -> Trainer<'a> {
    let backend = Box::new(GpuBackend::new(ctx.clone()));
    let mut t = Trainer::new(cfg, TrainData::of(ds), &ds.points, backend);
    if let Some(r) = resident {
        t.with_resident(Box::new(r)).unwrap();
    }
    t
}

fn run(t: &mut Trainer<'_>) -> Vec<StepStats> {
    let mut out = Vec::new();
    while !t.done() {
        out.push(t.step().unwrap());
    }
    t.sync();
    out
}

/// A resident run of `cfg` on `ctx`: its steps and final state.
fn train_resident(
    ctx: Arc<GpuContext>,
    ds: &Dataset,
    cfg: &TrainConfig,
) -> (Vec<StepStats>, splat_train::TrainState) {
    let engine = GpuResident::new(ctx.clone(), &ds.train);
    let mut t = trainer(&ctx, ds, cfg.clone(), Some(engine));
    let stats = run(&mut t);
    (stats, t.state.clone())
}

fn max_rel(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = a
        .iter()
        .fold(0.0f64, |m, &x| m.max(x.abs() as f64))
        .max(1e-6);
    a.iter()
        .zip(b)
        .map(|(&x, &y)| (x as f64 - y as f64).abs() / scale)
        .fold(0.0, f64::max)
}

/// Resumes `state` with the per-stage backend, and with the resident engine too when `resident`.
fn resume<'a>(
    ctx: &Arc<GpuContext>,
    ds: &'a Dataset,
    cfg: &TrainConfig,
    state: &splat_train::TrainState,
    resident: bool,
) -> Trainer<'a> {
    let mut t = Trainer::resume(
        cfg.clone(),
        TrainData::of(ds),
        state.clone(),
        Box::new(GpuBackend::new(ctx.clone())),
    );
    if resident {
        t.with_resident(Box::new(GpuResident::new(ctx.clone(), &ds.train)))
            .unwrap();
    }
    t
}

/// From the same state (after a densification, so with fresh and established moments, at SH degree 1),
/// a block of 15 resident steps (raising the SH degree inside it, ending with a densification) against
/// 15 host steps.
#[test]
fn a_block_matches_host_steps_from_the_same_state() {
    block_matches_host_steps(false, BackwardSums::Records);
}

/// The same on an antialiased scene (the compensation in both project stages, the flag kept across
/// the block's densification).
#[test]
fn an_antialiased_block_matches_host_steps() {
    block_matches_host_steps(true, BackwardSums::Records);
}

/// The same with the device's rasterize backward summing by atomic adds (`--gpu-atomic-backward`): its
/// rounding varies with the order tiles finish, within the same tolerances; no records are allocated.
#[test]
fn an_atomic_block_matches_host_steps() {
    block_matches_host_steps(false, BackwardSums::Atomic);
}

fn block_matches_host_steps(antialiased: bool, sums: BackwardSums) {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let ctx = Arc::new(ctx);
    let tmp = tempfile::tempdir().unwrap();
    let ds = demo(tmp.path());
    let base = TrainConfig {
        antialiased,
        ..config(80)
    };
    let mut host = trainer(&ctx, &ds, base.clone(), None);
    while host.state.step < 30 {
        host.step().unwrap();
    }
    assert_eq!(host.state.active_sh_degree, 1);
    let cfg = TrainConfig {
        sh_degree_interval: 35,
        ..base
    };
    let mut a = resume(&ctx, &ds, &cfg, &host.state, false);
    let mut b = resume(&ctx, &ds, &cfg, &host.state, false);
    let engine = GpuResident::new(ctx.clone(), &ds.train).with_backward_sums(sums);
    b.with_resident(Box::new(engine)).unwrap();
    let mut worst = 0.0f64;
    for _ in 0..15 {
        let (x, y) = (a.step().unwrap(), b.step().unwrap());
        assert_eq!((x.step, x.skipped), (y.step, y.skipped));
        assert_eq!(x.densified, y.densified, "step {}", x.step);
        assert_eq!(x.num_gaussians, y.num_gaussians, "step {}", x.step);
        let rel = (x.loss - y.loss).abs() / x.loss;
        worst = worst.max(rel);
        assert!(rel < 1e-6, "step {}: loss {} vs {}", x.step, x.loss, y.loss);
        assert!((x.psnr - y.psnr).abs() < 1e-4, "step {}", x.step);
    }
    assert_eq!(b.state.step, 45);
    assert!(b.block_done());
    let memory = b.resident_memory().expect("the engine reports its memory");
    // Keys and ids twice (24 bytes an entry), and 44 more for the deterministic sums (records, the
    // emitted ids and the sort's inverse).
    let per_entry = memory.list_bytes as f64 / memory.list_entries as f64;
    match sums {
        BackwardSums::Records => assert!(per_entry > 68.0, "{per_entry}"),
        BackwardSums::Atomic => assert!(per_entry < 30.0, "{per_entry}"),
    }
    assert_eq!(a.state.active_sh_degree, 2);
    assert_eq!(b.state.active_sh_degree, 2);
    b.sync();
    let (ga, gb) = (&a.state.gaussians, &b.state.gaussians);
    assert_eq!((ga.antialiased, gb.antialiased), (antialiased, antialiased));
    let groups = [
        (
            "means",
            max_rel(ga.means.as_flattened(), gb.means.as_flattened()),
        ),
        (
            "sh_dc",
            max_rel(ga.sh_dc.as_flattened(), gb.sh_dc.as_flattened()),
        ),
        ("sh_rest", max_rel(&ga.sh_rest, &gb.sh_rest)),
        ("opacity", max_rel(&ga.opacity_logits, &gb.opacity_logits)),
        (
            "scales",
            max_rel(ga.log_scales.as_flattened(), gb.log_scales.as_flattened()),
        ),
        (
            "rotations",
            max_rel(ga.rotations.as_flattened(), gb.rotations.as_flattened()),
        ),
        ("means m", max_rel(&a.state.adam[0].m, &b.state.adam[0].m)),
        ("sh_rest v", max_rel(&a.state.adam[2].v, &b.state.adam[2].v)),
        (
            "grad_accum",
            max_rel(&a.state.grad_accum, &b.state.grad_accum),
        ),
        (
            "grad_count",
            max_rel(&a.state.grad_count, &b.state.grad_count),
        ),
        ("max_radii", max_rel(&a.state.max_radii, &b.state.max_radii)),
    ];
    eprintln!("worst loss difference {worst:.2e}; state {groups:?}");
    for (name, rel) in groups {
        assert!(rel < 1e-4, "{name}: {rel}");
    }
    for (x, y) in a.state.adam.iter().zip(&b.state.adam) {
        assert_eq!(x.step, y.step);
    }
}

/// A whole schedule (densifications at 30, 45, 60, 75, an opacity reset at 60, SH raises), all on the
/// device: the events happen at the same steps and training goes the same way (not to rounding: Adam's
/// first steps turn rounding-level gradient differences into +-lr moves).
#[test]
fn a_whole_schedule_runs_on_the_device() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let ctx = Arc::new(ctx);
    let tmp = tempfile::tempdir().unwrap();
    let ds = demo(tmp.path());
    let cfg = config(80);
    let mut host = trainer(&ctx, &ds, cfg.clone(), None);
    let engine = GpuResident::new(ctx.clone(), &ds.train);
    let mut dev = trainer(&ctx, &ds, cfg, Some(engine));
    dev.set_sync_every(40);
    let h = run(&mut host);
    let d = run(&mut dev);
    assert_eq!(h.len(), 80);
    assert_eq!(d.len(), 80);
    for (a, b) in h.iter().zip(&d) {
        assert_eq!(a.step, b.step);
        assert_eq!(
            a.densified.is_some(),
            b.densified.is_some(),
            "step {}",
            a.step
        );
        assert_eq!(a.opacity_reset, b.opacity_reset, "step {}", a.step);
        assert!(!b.skipped);
    }
    let densified: Vec<u64> = d
        .iter()
        .filter(|s| s.densified.is_some())
        .map(|s| s.step)
        .collect();
    assert_eq!(densified, [30, 45, 60, 75]);
    let tail = |s: &[StepStats]| s[70..].iter().map(|x| x.loss).sum::<f64>() / 10.0;
    let (lh, ld) = (tail(&h), tail(&d));
    eprintln!(
        "mean loss of the last 10 steps: host {lh:.5}, resident {ld:.5}; Gaussians {} vs {}",
        host.state.len(),
        dev.state.len()
    );
    assert!((lh - ld).abs() / lh < 0.05, "{lh} vs {ld}");
    let (nh, nd) = (host.state.len() as f64, dev.state.len() as f64);
    assert!((nh - nd).abs() / nh < 0.1, "{nh} vs {nd}");
    assert_eq!(dev.state.active_sh_degree, 3);
    // Learning (before the first densification and the opacity reset).
    assert!(
        d[28].loss < d[0].loss * 0.9,
        "{} -> {}",
        d[0].loss,
        d[28].loss
    );
}

/// The engine alone: a list of 64 entries overflows on the first step and is regrown; every step then
/// equals, bitwise, the same steps with a list that never overflowed.
#[test]
fn an_overflowing_list_regrows_and_changes_nothing() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let ctx = Arc::new(ctx);
    let tmp = tempfile::tempdir().unwrap();
    let ds = demo(tmp.path());
    let cfg = config(30);
    let t = trainer(&ctx, &ds, cfg.clone(), None);
    // Three submissions: the second and third are recorded while the one before runs; an overflow
    // discards what was recorded ahead.
    let steps: Vec<PlannedStep> = (1..=60)
        .map(|it| PlannedStep {
            step: it,
            draw: it - 1,
            sh_degree: 0,
            stats: true,
            position_lr: Some(t.position_lr(it)),
            densify: false,
            reset_opacity: false,
            regularize: false,
            noise_lr: None,
        })
        .collect();
    let constants = BlockConstants {
        config: cfg.clone(),
        extent: ds.scene_extent,
        background: ds.background,
    };
    let run = |capacity: u32| {
        let mut e = GpuResident::new(ctx.clone(), &ds.train).with_initial_capacity(capacity);
        e.load(&t.state).unwrap();
        let mut out = Vec::new();
        e.run_block(&constants, &steps, &mut out).unwrap();
        let mut state = t.state.clone();
        e.store(&mut state).unwrap();
        (out, state, e.capacity(), e.recorded_ahead())
    };
    let (oa, sa, ca, aa) = run(64);
    let (ob, sb, cb, ab) = run(1 << 16);
    eprintln!("capacities: {ca} (from 64), {cb}; recorded ahead (made, used): {aa:?}, {ab:?}");
    assert!(ca > 64 && cb == 1 << 16);
    assert_eq!(
        ab,
        (2, 2),
        "every submission after the first recorded ahead"
    );
    assert!(
        aa.0 > aa.1,
        "the overflow discarded what was recorded ahead: {aa:?}"
    );
    assert_eq!(oa.len(), 60);
    assert_eq!(oa, ob);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let (ga, gb) = (&sa.gaussians, &sb.gaussians);
    assert_eq!(bits(ga.means.as_flattened()), bits(gb.means.as_flattened()));
    assert_eq!(bits(&ga.sh_rest), bits(&gb.sh_rest));
    assert_eq!(bits(&ga.opacity_logits), bits(&gb.opacity_logits));
    assert_eq!(bits(&sa.adam[0].v), bits(&sb.adam[0].v));
    assert_eq!(bits(&sa.grad_accum), bits(&sb.grad_accum));
    assert!(sa.adam.iter().all(|a| a.step == 60));
    assert!(sa.grad_count.iter().any(|&c| c > 0.0));
}

/// The densification edit on the device against the host's from the same state (statistics of 29
/// steps), early (opacity pruning) and late (world- and screen-size pruning too): the same report and
/// count, every group bitwise but the split children's means, whose samples go through the device's
/// `log`, `sqrt` and `cos`.
#[test]
fn the_densification_edit_matches_the_host() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let ctx = Arc::new(ctx);
    let tmp = tempfile::tempdir().unwrap();
    let ds = demo(tmp.path());
    let mut host = trainer(&ctx, &ds, config(80), None);
    while host.state.step < 29 {
        host.step().unwrap();
    }
    for (step, late) in [(30u64, false), (30, true)] {
        let mut cfg = config(80).per_step();
        // Clones and opacity pruning too on this small scene.
        cfg.percent_dense = 0.05;
        cfg.min_opacity = 0.1;
        if late {
            cfg.opacity_reset_interval = 10;
            cfg.prune_screen_radius = Some(6.0);
            cfg.prune_world_scale = 0.05;
        }
        let mut want = host.state.clone();
        let report =
            splat_train::densify::densify_and_prune(&mut want, &cfg, ds.scene_extent, step);
        let mut e = GpuResident::new(ctx.clone(), &ds.train);
        e.load(&host.state).unwrap();
        let constants = BlockConstants {
            config: cfg,
            extent: ds.scene_extent,
            background: ds.background,
        };
        let got_report = e.densify(&constants, step).unwrap();
        let mut got = host.state.clone();
        e.store(&mut got).unwrap();
        eprintln!(
            "late {late}: {report:?}, {} -> {}",
            host.state.len(),
            want.len()
        );
        assert_eq!(got_report, report);
        assert!(
            report.cloned > 0 && report.split > 0 && report.pruned > 0,
            "{report:?}"
        );
        assert_eq!(got.len(), want.len());
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let (g, w) = (&got.gaussians, &want.gaussians);
        assert_eq!(
            bits(g.log_scales.as_flattened()),
            bits(w.log_scales.as_flattened())
        );
        assert_eq!(
            bits(g.rotations.as_flattened()),
            bits(w.rotations.as_flattened())
        );
        assert_eq!(bits(&g.opacity_logits), bits(&w.opacity_logits));
        assert_eq!(bits(&g.sh_rest), bits(&w.sh_rest));
        assert_eq!(bits(g.sh_dc.as_flattened()), bits(w.sh_dc.as_flattened()));
        for (a, b) in got.adam.iter().zip(&want.adam) {
            assert_eq!(bits(&a.m), bits(&b.m));
            assert_eq!(bits(&a.v), bits(&b.v));
            assert_eq!(a.step, b.step);
        }
        let worst = g
            .means
            .as_flattened()
            .iter()
            .zip(w.means.as_flattened())
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        eprintln!("largest mean difference {worst:.2e}");
        assert!(worst < 1e-4, "{worst}");
        assert!(got
            .grad_accum
            .iter()
            .chain(&got.grad_count)
            .chain(&got.max_radii)
            .all(|&v| v == 0.0));
    }
}

#[test]
fn non_finite_steps_change_nothing_and_stop_the_run() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let ctx = Arc::new(ctx);
    let tmp = tempfile::tempdir().unwrap();
    let ds = demo(tmp.path());
    let mut cfg = config(40);
    // Every gradient NaN: every step is skipped, on the host as on the device.
    cfg.lambda_dssim = f64::NAN;
    let engine = GpuResident::new(ctx.clone(), &ds.train);
    let mut t = trainer(&ctx, &ds, cfg, Some(engine));
    let before = t.state.clone();
    let mut skipped = 0;
    let err = loop {
        match t.step() {
            Ok(s) => {
                assert!(s.skipped, "step {}", s.step);
                skipped += 1;
            }
            Err(e) => break e,
        }
    };
    assert_eq!(err.consecutive, splat_train::trainer::MAX_CONSECUTIVE_SKIPS);
    assert_eq!(skipped + 1, splat_train::trainer::MAX_CONSECUTIVE_SKIPS);
    t.sync();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let (g0, g1) = (&before.gaussians, &t.state.gaussians);
    assert_eq!(bits(g0.means.as_flattened()), bits(g1.means.as_flattened()));
    assert_eq!(bits(&g0.sh_rest), bits(&g1.sh_rest));
    assert_eq!(bits(&before.adam[2].m), bits(&t.state.adam[2].m));
    assert_eq!(bits(&before.grad_count), bits(&t.state.grad_count));
    assert!(t.state.adam.iter().all(|a| a.step == 0));
}

/// Where blocks end does not change a bit: blocks ending every 7 steps, and a run resumed from the state
/// read back at step 21 by a new engine, both equal one run in the longest blocks (through the
/// densifications at 30 and 45), bit for bit.
#[test]
fn block_boundaries_and_resuming_change_nothing() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let ctx = Arc::new(ctx);
    let tmp = tempfile::tempdir().unwrap();
    let ds = demo(tmp.path());
    let cfg = config(50);
    let engine = || GpuResident::new(ctx.clone(), &ds.train);
    let mut long = trainer(&ctx, &ds, cfg.clone(), Some(engine()));
    let mut short = trainer(&ctx, &ds, cfg.clone(), Some(engine()));
    short.set_sync_every(7);
    let a = run(&mut long);
    let mut b = Vec::new();
    let mut resumed = None;
    while !short.done() {
        b.push(short.step().unwrap());
        if short.state.step == 21 {
            short.sync();
            resumed = Some(resume(&ctx, &ds, &cfg, &short.state, true));
        }
    }
    short.sync();
    let mut resumed = resumed.unwrap();
    let c = run(&mut resumed);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.loss.to_bits(), y.loss.to_bits(), "step {}", x.step);
    }
    for (x, y) in a[21..].iter().zip(&c) {
        assert_eq!((x.step, x.loss.to_bits()), (y.step, y.loss.to_bits()));
    }
    for t in [&short, &resumed] {
        let (g, w) = (&t.state.gaussians, &long.state.gaussians);
        assert_eq!(g.len(), w.len());
        assert_eq!(bits(g.means.as_flattened()), bits(w.means.as_flattened()));
        assert_eq!(bits(&g.sh_rest), bits(&w.sh_rest));
        assert_eq!(bits(&g.opacity_logits), bits(&w.opacity_logits));
        assert_eq!(bits(&t.state.adam[5].v), bits(&long.state.adam[5].v));
        assert_eq!(bits(&t.state.grad_accum), bits(&long.state.grad_accum));
    }
}

/// An adapter binding fewer storage buffers a stage than the fused projection backward and Adam needs:
/// the engine says so with both numbers, and the run goes per stage.
#[test]
fn too_few_storage_bindings_leave_the_run_per_stage() {
    let Some(ctx) = common::context(|l| l.max_storage_buffers_per_shader_stage = 20) else {
        return;
    };
    let ctx = Arc::new(ctx);
    let tmp = tempfile::tempdir().unwrap();
    let ds = demo(tmp.path());
    let mut t = trainer(&ctx, &ds, config(3), None);
    let engine = GpuResident::new(ctx.clone(), &ds.train);
    let why = t.with_resident(Box::new(engine)).expect_err("refused");
    assert!(
        why.contains("20 storage buffers") && why.contains("24"),
        "{why}"
    );
    let stats = run(&mut t);
    assert_eq!(stats.len(), 3);
    assert!(stats.iter().all(|s| s.loss.is_finite()));
}

/// Lowered device limits (384 KiB bindings: the projection, its backward, the finite check and Adam in
/// two chunks; 16 workgroups per dimension: 2D dispatches) give the same bits as the device's own limits.
#[test]
fn lowered_limits_change_nothing() {
    let Some(full) = common::context(|_| {}) else {
        return;
    };
    let lowered = common::context(|l| {
        l.max_storage_buffer_binding_size = 384 << 10;
        l.max_compute_workgroups_per_dimension = 16;
    })
    .expect("the same device");
    let tmp = tempfile::tempdir().unwrap();
    let opts = DemoOptions {
        width: 48,
        height: 36,
        views: 12,
        points: 2500,
        seed: 5,
        ..Default::default()
    };
    let ds = demo_with(tmp.path(), &opts);
    let cfg = config(29);
    let out = [full, lowered].map(|ctx| train_resident(Arc::new(ctx), &ds, &cfg));
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let ((sa, a), (sb, b)) = (&out[0], &out[1]);
    assert!(a.len() > 2048, "two projection chunks: {}", a.len());
    for (x, y) in sa.iter().zip(sb) {
        assert_eq!(x.loss.to_bits(), y.loss.to_bits(), "step {}", x.step);
    }
    assert_eq!(
        bits(a.gaussians.means.as_flattened()),
        bits(b.gaussians.means.as_flattened())
    );
    assert_eq!(bits(&a.gaussians.sh_rest), bits(&b.gaussians.sh_rest));
    assert_eq!(bits(&a.adam[2].m), bits(&b.adam[2].m));
    assert_eq!(bits(&a.grad_accum), bits(&b.grad_accum));
}

/// Training images split over two bindings (112 KiB bindings hold 16 of the 24 views) give the same bits
/// as one binding.
#[test]
fn images_over_several_bindings_change_nothing() {
    let Some(full) = common::context(|_| {}) else {
        return;
    };
    let lowered = common::context(|l| l.max_storage_buffer_binding_size = 112 << 10)
        .expect("the same device");
    let tmp = tempfile::tempdir().unwrap();
    let opts = DemoOptions {
        width: 48,
        height: 36,
        views: 24,
        points: 600,
        seed: 9,
        ..Default::default()
    };
    let ds = demo_with(tmp.path(), &opts);
    assert_eq!(ds.train.len(), 24);
    let cfg = config(29);
    let out = [full, lowered].map(|ctx| train_resident(Arc::new(ctx), &ds, &cfg));
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let ((sa, a), (sb, b)) = (&out[0], &out[1]);
    for (x, y) in sa.iter().zip(sb) {
        assert_eq!(x.loss.to_bits(), y.loss.to_bits(), "step {}", x.step);
    }
    assert_eq!(
        bits(a.gaussians.means.as_flattened()),
        bits(b.gaussians.means.as_flattened())
    );
    assert_eq!(bits(&a.adam[1].v), bits(&b.adam[1].v));
}

/// Timing the stages (timestamp queries, passes split at stage marks) changes no bit, and times every
/// step: the stages' device time is positive where work runs and no more than the block's wall time.
#[test]
fn stage_timing_changes_nothing() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let ctx = Arc::new(ctx);
    let tmp = tempfile::tempdir().unwrap();
    let ds = demo(tmp.path());
    let cfg = config(40);
    let mut timed_engine = GpuResident::new(ctx.clone(), &ds.train);
    let timed = timed_engine.enable_stage_timing();
    let mut plain = trainer(
        &ctx,
        &ds,
        cfg.clone(),
        Some(GpuResident::new(ctx.clone(), &ds.train)),
    );
    let mut with = trainer(&ctx, &ds, cfg.clone(), Some(timed_engine));
    let a = run(&mut plain);
    let t = std::time::Instant::now();
    let b = run(&mut with);
    let wall = t.elapsed().as_secs_f64();
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.loss.to_bits(), y.loss.to_bits(), "step {}", x.step);
    }
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let (g, w) = (&plain.state.gaussians, &with.state.gaussians);
    assert_eq!(bits(g.means.as_flattened()), bits(w.means.as_flattened()));
    assert_eq!(bits(&g.sh_rest), bits(&w.sh_rest));
    if !timed {
        eprintln!(
            "skipped the timing checks: no timestamp queries on {}",
            ctx.describe()
        );
        return;
    }
    let timing = with.resident_stage_timing().expect("timed");
    assert_eq!(timing.steps, 40);
    let total: f64 = timing.seconds.iter().sum();
    assert!(total > 0.0 && total <= wall, "{timing:?}, wall {wall} s");
    // Project, bin, the rasterizer's two passes and the loss run every step.
    for k in 0..6 {
        assert!(timing.seconds[k] > 0.0, "stage {k}: {timing:?}");
    }
    assert!(plain.resident_stage_timing().is_none());
}
