//! The GPU rasterize forward against the reference on the same projection and tile lists: images and
//! final transmittance within 1e-4 (GPU `exp` differs from libm by a few ulp), contributor counts equal
//! except where a decision sits within rounding of a threshold.

use splat_core::synthetic::{random_scene, RandomSceneOptions};
use splat_core::{Camera, TileGrid};
use splat_gpu::{AdapterChoice, GpuContext, GpuRasterize};
use splat_render::{
    bin, project, rasterize_fwd, Bins, Cutoffs, Projected, RasterOutput, RenderSettings,
};

fn context() -> Option<GpuContext> {
    match GpuContext::new(AdapterChoice::Any) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            if std::env::var("SPLAT_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("SPLAT_REQUIRE_GPU=1 but no GPU: {e}");
            }
            eprintln!("skipped: {e}");
            None
        }
    }
}

fn compare(
    ctx: &GpuContext,
    seed: u64,
    count: usize,
    w: u32,
    h: u32,
    cutoffs: Cutoffs,
) -> (u32, usize) {
    let g = random_scene(
        seed,
        &RandomSceneOptions {
            count,
            sh_degree: 1,
            extent: 1.5,
            log_scale_range: (-4.0, -1.5),
            ..Default::default()
        },
    )
    .cast::<f32>();
    let cam = Camera::look_at([0.3, -0.2, -3.0], [0.0; 3], [0.0, -1.0, 0.0], 60.0, w, h);
    let mut settings = RenderSettings::new(1);
    settings.cutoffs = cutoffs;
    settings.background = [0.2, 0.5, 0.9];
    let grid = TileGrid::new(w, h);
    let mut p = Projected::default();
    project::project(&g, &cam, &settings, &mut p);
    let mut bins = Bins::default();
    bin::bin(&p, &grid, &mut bins);
    let mut reference = RasterOutput::default();
    reference.resize(w, h);
    reference.poison();
    rasterize_fwd::rasterize_forward(&p, &bins, &grid, &settings, &mut reference);
    let mut gpu = RasterOutput::default();
    gpu.resize(w, h);
    gpu.poison();
    GpuRasterize::new(ctx)
        .forward(ctx, &p, &bins, &grid, &settings, &mut gpu)
        .expect("GPU forward");
    let worst = |a: &[f32], b: &[f32]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(
                0.0f32,
                |m, d| if d.is_nan() { f32::INFINITY } else { m.max(d) },
            )
    };
    let di = worst(&gpu.image, &reference.image);
    let dt = worst(&gpu.final_transmittance, &reference.final_transmittance);
    assert!(di <= 1e-4, "seed {seed}: image max diff {di}");
    assert!(dt <= 1e-4, "seed {seed}: transmittance max diff {dt}");
    let differ = gpu
        .n_contrib
        .iter()
        .zip(&reference.n_contrib)
        .filter(|(a, b)| a != b)
        .count();
    assert!(
        differ * 1000 <= gpu.n_contrib.len(),
        "seed {seed}: {differ} contributor counts differ"
    );
    assert!(reference.n_contrib.iter().any(|&n| n > 0), "nothing drawn");
    let longest = bins
        .tile_ranges
        .iter()
        .map(|r| r[1] - r[0])
        .max()
        .unwrap_or(0);
    let stopped = reference
        .final_transmittance
        .iter()
        .filter(|&&t| t < 2e-4 && cutoffs.transmittance_min > 0.0)
        .count();
    eprintln!(
        "seed {seed}: longest tile list {longest}, {stopped} pixels near the transmittance floor"
    );
    (longest, stopped)
}

#[test]
fn rasterize_forward_matches_reference() {
    let Some(ctx) = context() else { return };
    // Odd sizes (partial tiles), dense scenes (lists longer than one 256 batch, early termination).
    compare(&ctx, 1, 400, 64, 48, Cutoffs::ORIGINAL);
    let (longest, stopped) = compare(&ctx, 2, 6000, 203, 117, Cutoffs::ORIGINAL);
    assert!(
        longest > 512,
        "lists should span several batches: {longest}"
    );
    assert!(
        stopped > 100,
        "pixels should reach the transmittance floor: {stopped}"
    );
    compare(&ctx, 3, 2000, 96, 80, Cutoffs::SMOOTH);
}
