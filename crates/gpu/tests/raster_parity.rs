//! The GPU rasterize forward against the reference on the same projection and tile lists: images and
//! final transmittance within 1e-4 (GPU `exp` differs from libm by a few ulp), contributor counts equal
//! except where a decision sits within rounding of a threshold.

mod common;

use splat_core::synthetic::{random_scene, RandomSceneOptions};
use splat_core::{Camera, TileGrid};
use splat_gpu::{GpuContext, GpuRasterize};
use splat_render::{
    bin, project, rasterize_fwd, Bins, Cutoffs, Projected, RasterOutput, RenderSettings,
};

/// One frame's backward inputs: the projection, its tile lists and the reference forward.
struct BackwardCase {
    p: Projected<f32>,
    bins: Bins,
    grid: TileGrid,
    settings: RenderSettings,
    fwd: RasterOutput<f32>,
}

impl BackwardCase {
    fn new(seed: u64, count: usize, w: u32, h: u32, settings: RenderSettings) -> Self {
        let (p, bins, grid) = frame(seed, count, w, h, &settings);
        let mut fwd = RasterOutput::default();
        rasterize_fwd::rasterize_forward(&p, &bins, &grid, &settings, &mut fwd);
        BackwardCase {
            p,
            bins,
            grid,
            settings,
            fwd,
        }
    }

    fn gpu(
        &self,
        ctx: &GpuContext,
        raster: &GpuRasterize,
        grad_image: &[f32],
    ) -> splat_render::ProjectedGrads<f32> {
        let mut out = splat_render::ProjectedGrads::default();
        raster
            .backward(
                ctx,
                &self.p,
                &self.bins,
                &self.grid,
                &self.settings,
                &self.fwd,
                grad_image,
                &mut out,
            )
            .expect("GPU backward");
        out
    }
}

/// A seeded random scene projected and binned by the reference stages.
fn frame(
    seed: u64,
    count: usize,
    w: u32,
    h: u32,
    settings: &RenderSettings,
) -> (Projected<f32>, Bins, TileGrid) {
    let g = random_scene(
        seed,
        &RandomSceneOptions {
            count,
            sh_degree: settings.sh_degree,
            extent: 1.5,
            log_scale_range: (-4.0, -1.5),
            ..Default::default()
        },
    )
    .cast::<f32>();
    let cam = Camera::look_at([0.3, -0.2, -3.0], [0.0; 3], [0.0, -1.0, 0.0], 60.0, w, h);
    let grid = TileGrid::new(w, h);
    let mut p = Projected::default();
    project::project(&g, &cam, settings, &mut p);
    let mut bins = Bins::default();
    bin::bin(&p, &grid, &mut bins);
    (p, bins, grid)
}

fn compare(
    ctx: &GpuContext,
    seed: u64,
    count: usize,
    w: u32,
    h: u32,
    cutoffs: Cutoffs,
) -> (u32, usize) {
    let mut settings = RenderSettings::new(1);
    settings.cutoffs = cutoffs;
    settings.background = [0.2, 0.5, 0.9];
    let (p, bins, grid) = frame(seed, count, w, h, &settings);
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
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    // Odd sizes (partial tiles), dense scenes (lists longer than one 256 batch, early termination).
    compare(&ctx, 1, 400, 64, 48, Cutoffs::ORIGINAL);
    let (longest, stopped) = compare(&ctx, 2, 7000, 203, 117, Cutoffs::ORIGINAL);
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

/// Pixels per invocation of the forward change the speed, never the bits: 1, 2 and 4 give the same image,
/// transmittance and contributor counts exactly, on a scene with lists over several batches.
#[test]
fn the_forward_pixels_per_invocation_change_no_bits() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let mut settings = RenderSettings::new(1);
    settings.background = [0.2, 0.5, 0.9];
    let (p, bins, grid) = frame(2, 7000, 203, 117, &settings);
    let wave = splat_gpu::WaveShape::for_device(&ctx);
    let render = |pixels| {
        let mut out = RasterOutput::default();
        out.resize(grid.width, grid.height);
        out.poison();
        GpuRasterize::with_shapes(&ctx, wave, pixels)
            .forward(&ctx, &p, &bins, &grid, &settings, &mut out)
            .expect("GPU forward");
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        (
            bits(&out.image),
            bits(&out.final_transmittance),
            out.n_contrib,
        )
    };
    let longest = bins.tile_ranges.iter().map(|r| r[1] - r[0]).max();
    assert!(
        longest > Some(512),
        "lists should span batches: {longest:?}"
    );
    let one = render(1);
    assert!(one.2.iter().any(|&n| n > 0), "nothing drawn");
    assert!(one.0.iter().all(|&b| f32::from_bits(b).is_finite()));
    for pixels in [2, 4] {
        assert!(one == render(pixels), "{pixels} pixels an invocation");
    }
}

/// `|a - b| <= rel max(|a|, |b|) + 1e-5 max|b|` elementwise.
fn close(what: &str, a: &[f32], b: &[f32], rel: f32) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let scale = b.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let mut worst = 0.0f32;
    for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
        let tol = rel * x.abs().max(y.abs()) + 1e-5 * scale;
        assert!(
            (x - y).abs() <= tol,
            "{what}[{i}]: gpu {x} vs reference {y}"
        );
        worst = worst.max((x - y).abs() / tol);
    }
    eprintln!("{what}: largest difference {worst:.2} of the tolerance");
}

#[test]
fn rasterize_backward_matches_reference() {
    backward_matches_reference(splat_gpu::BackwardSums::Records);
}

/// The same with compare-and-swap atomics summing per Gaussian (order, hence rounding, varies).
#[test]
fn rasterize_backward_with_atomics_matches_reference() {
    backward_matches_reference(splat_gpu::BackwardSums::Atomic);
}

/// The backward's wavefront shape changes the speed, never the bits: every shape gives the default's
/// gradients exactly (each pixel sees the entries in list order, each sum runs over the pixels in order).
#[test]
fn the_backward_wavefront_shape_changes_no_bits() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let mut settings = RenderSettings::new(0);
    settings.background = [0.3, 0.1, 0.6];
    settings.absgrad = true;
    let case = BackwardCase::new(8, 3000, 130, 90, settings);
    let grad_image: Vec<f32> = (0..case.fwd.image.len())
        .map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0)
        .collect();
    let grads_with = |wave, chunk| {
        let raster = GpuRasterize::with_wave(&ctx, splat_gpu::WaveShape { wave, chunk });
        let out = case.gpu(&ctx, &raster, &grad_image);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        [
            bits(out.grad_means2d.as_flattened()),
            bits(out.grad_conics.as_flattened()),
            bits(out.grad_colors.as_flattened()),
            bits(&out.grad_opacities),
            bits(out.abs_grad_means2d.as_flattened()),
        ]
    };
    let first = grads_with(32, 1);
    assert!(first[3].iter().any(|&b| f32::from_bits(b) != 0.0));
    for (wave, chunk) in [(32, 4), (8, 1), (13, 16), (64, 2), (256, 256)] {
        assert!(
            first == grads_with(wave, chunk),
            "wave {wave}, chunk {chunk}"
        );
    }
}

fn backward_matches_reference(sums: splat_gpu::BackwardSums) {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    backward_matches_reference_on(&ctx, sums);
}

fn backward_matches_reference_on(ctx: &splat_gpu::GpuContext, sums: splat_gpu::BackwardSums) {
    use rand::{Rng, SeedableRng};
    let mut raster = GpuRasterize::new(ctx);
    raster.sums = sums;
    for (seed, count, w, h, absgrad) in [
        (5u64, 500usize, 70u32, 50u32, false),
        (6, 4000, 160, 120, false),
        (7, 3000, 130, 90, true),
    ] {
        let mut settings = RenderSettings::new(0);
        settings.background = [0.3, 0.1, 0.6];
        settings.absgrad = absgrad;
        let case = BackwardCase::new(seed, count, w, h, settings);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let grad_image: Vec<f32> = (0..case.fwd.image.len())
            .map(|_| rng.random_range(-1.0..1.0))
            .collect();
        let mut reference = splat_render::ProjectedGrads::default();
        splat_render::rasterize_bwd::rasterize_backward(
            &case.p,
            &case.bins,
            &case.grid,
            &case.settings,
            &case.fwd,
            &grad_image,
            &mut reference,
        );
        let gpu = case.gpu(ctx, &raster, &grad_image);
        close(
            "grad_means2d",
            gpu.grad_means2d.as_flattened(),
            reference.grad_means2d.as_flattened(),
            1e-3,
        );
        close(
            "grad_conics",
            gpu.grad_conics.as_flattened(),
            reference.grad_conics.as_flattened(),
            1e-3,
        );
        close(
            "grad_colors",
            gpu.grad_colors.as_flattened(),
            reference.grad_colors.as_flattened(),
            1e-3,
        );
        close(
            "grad_opacities",
            &gpu.grad_opacities,
            &reference.grad_opacities,
            1e-3,
        );
        assert!(reference.grad_opacities.iter().any(|&v| v != 0.0));
        // absgrad: the second pass's absolute sums; without it, none.
        assert_eq!(gpu.abs_grad_means2d.len(), reference.abs_grad_means2d.len());
        if absgrad {
            close(
                "abs_grad_means2d",
                gpu.abs_grad_means2d.as_flattened(),
                reference.abs_grad_means2d.as_flattened(),
                1e-3,
            );
            let cancelled = (0..count)
                .filter(|&i| gpu.abs_grad_means2d[i][0] > 1.5 * gpu.grad_means2d[i][0].abs())
                .count();
            assert!(cancelled > 50, "{cancelled}");
        }
    }
}
