//! The fast CPU backend against the reference, stage by stage, on the stress scenes: bins identical,
//! images within 1e-5 (in fact bit-identical: same per-pixel arithmetic), contributor counts identical,
//! gradients within 1e-4 relative (the per-Gaussian sums are grouped differently).

mod common;

use common::{random_weights, stress_scene, test_camera};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use splat_core::{Gaussians, TileGrid};
use splat_render::cpu::rasterize::{
    cull_pixels, range_misses_tile, tile_cull, visible_rows, PixelRange,
};
use splat_render::cpu::SimdLevel;
use splat_render::rasterize_fwd::gaussian_power;
use splat_render::{Backend, Buffers, CpuBackend, Cutoffs, ReferenceBackend, RenderSettings};

fn run(
    backend: &mut dyn Backend,
    g: &Gaussians,
    settings: &RenderSettings,
    w: u32,
    h: u32,
    weights: &[f32],
) -> Buffers {
    let cam = test_camera(w, h);
    let mut b = Buffers::default();
    b.raster.resize(w, h);
    b.raster.poison();
    splat_render::render(backend, g, &cam, settings, &mut b);
    splat_render::backward(backend, g, &cam, settings, weights, &mut b);
    b
}

fn close(what: &str, a: &[f32], b: &[f32], rel: f32) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let scale = a.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
        let tol = rel * x.abs().max(y.abs()) + 1e-6 * scale;
        assert!((x - y).abs() <= tol, "{what}[{i}]: {x} vs {y}");
    }
}

fn compare(seed: u64, degree: usize, cutoffs: Cutoffs, w: u32, h: u32) {
    let levels = SimdLevel::available();
    eprintln!("SIMD levels on this machine: {levels:?}");
    for level in levels {
        compare_level(level, seed, degree, cutoffs, w, h);
    }
}

fn compare_level(level: SimdLevel, seed: u64, degree: usize, cutoffs: Cutoffs, w: u32, h: u32) {
    let g = stress_scene(seed, degree).cast::<f32>();
    let mut settings = RenderSettings::new(degree);
    settings.cutoffs = cutoffs;
    settings.background = [0.1, 0.4, 0.8];
    let weights: Vec<f32> = random_weights(seed, (w * h * 3) as usize)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let r = run(&mut ReferenceBackend, &g, &settings, w, h, &weights);
    let f = run(
        &mut CpuBackend::with_simd(level),
        &g,
        &settings,
        w,
        h,
        &weights,
    );

    assert_eq!(r.bins.gaussian_ids, f.bins.gaussian_ids);
    for (a, b) in r.bins.tile_ranges.iter().zip(&f.bins.tile_ranges) {
        assert_eq!(a[1] - a[0], b[1] - b[0]);
        if a[1] > a[0] {
            assert_eq!(a, b);
        }
    }
    assert!(
        f.raster.image.iter().all(|v| v.is_finite()),
        "unwritten pixel"
    );
    let max_diff = r
        .raster
        .image
        .iter()
        .zip(&f.raster.image)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(max_diff <= 1e-5, "{level:?}: image max diff {max_diff}");
    if level == SimdLevel::Scalar {
        assert_eq!(r.raster.n_contrib, f.raster.n_contrib);
        assert_eq!(r.raster.final_transmittance, f.raster.final_transmittance);
    } else {
        // The polynomial exp can move a decision that sits exactly on a threshold; allow a handful.
        let differ = r
            .raster
            .n_contrib
            .iter()
            .zip(&f.raster.n_contrib)
            .filter(|(a, b)| a != b)
            .count();
        assert!(
            differ <= 2,
            "{level:?}: {differ} pixels changed their contributor count"
        );
    }

    let (rp, fp) = (&r.projected_grads, &f.projected_grads);
    close(
        "grad_means2d",
        rp.grad_means2d.as_flattened(),
        fp.grad_means2d.as_flattened(),
        1e-4,
    );
    close(
        "grad_conics",
        rp.grad_conics.as_flattened(),
        fp.grad_conics.as_flattened(),
        1e-4,
    );
    close(
        "grad_colors",
        rp.grad_colors.as_flattened(),
        fp.grad_colors.as_flattened(),
        1e-4,
    );
    close(
        "grad_opacities",
        &rp.grad_opacities,
        &fp.grad_opacities,
        1e-4,
    );
    close(
        "means",
        r.grads.means.as_flattened(),
        f.grads.means.as_flattened(),
        1e-4,
    );
    close(
        "log_scales",
        r.grads.log_scales.as_flattened(),
        f.grads.log_scales.as_flattened(),
        1e-4,
    );
    close(
        "rotations",
        r.grads.rotations.as_flattened(),
        f.grads.rotations.as_flattened(),
        1e-4,
    );
    close(
        "opacity_logits",
        &r.grads.opacity_logits,
        &f.grads.opacity_logits,
        1e-4,
    );
    close(
        "sh_dc",
        r.grads.sh_dc.as_flattened(),
        f.grads.sh_dc.as_flattened(),
        1e-4,
    );
    close("sh_rest", &r.grads.sh_rest, &f.grads.sh_rest, 1e-4);
}

#[test]
fn cpu_matches_reference_every_degree() {
    for degree in 0..=3 {
        compare(40 + degree as u64, degree, Cutoffs::ORIGINAL, 100, 75);
    }
}

#[test]
fn cpu_matches_reference_with_smooth_cutoffs_and_odd_sizes() {
    compare(50, 2, Cutoffs::SMOOTH, 64, 48);
    compare(51, 3, Cutoffs::ORIGINAL, 17, 130);
    compare(52, 1, Cutoffs::ORIGINAL, 200, 9);
}

/// Checks that the rasterizer's cull of `range` keeps the tile `rect` and visits the row of every pixel
/// where the Gaussian reaches alpha 1/255 (alpha clamped at 0.99 as the blending clamps it); returns
/// how many such pixels the tile has.
fn check_cull_covers(
    mean: [f32; 2],
    conic: [f32; 3],
    opacity: f32,
    range: &PixelRange,
    rect: (u32, u32, u32, u32),
) -> usize {
    let (x0, y0, x1, y1) = rect;
    let missed = range_misses_tile(range, rect);
    let (top, bottom) = visible_rows(range, y0, y1);
    let mut visible = 0;
    for py in y0..y1 {
        for px in x0..x1 {
            let d = [mean[0] - (px as f32 + 0.5), mean[1] - (py as f32 + 0.5)];
            let alpha = (opacity * gaussian_power(conic, d).exp()).min(0.99);
            if alpha < 1.0 / 255.0 {
                continue;
            }
            visible += 1;
            assert!(
                !missed,
                "culled but visible: alpha {alpha} at ({px}, {py}), {range:?}"
            );
            let row = (py - y0) as u8;
            assert!(
                (top..=bottom).contains(&row),
                "row {row} visible (alpha {alpha}) at ({px}, {py}) outside rows {top}..={bottom}"
            );
        }
    }
    visible
}

#[test]
fn tile_cull_is_conservative() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let grid = TileGrid::new(160, 160);
    let (mut culled, mut culled_ranges) = (0, 0);
    for _ in 0..20_000 {
        let mean = [
            rng.random_range(-40.0..200.0f32),
            rng.random_range(-40.0..200.0f32),
        ];
        // Random SPD 2D covariance, then its inverse as the conic.
        let (sx, sy, r): (f32, f32, f32) = (
            rng.random_range(0.3..30.0),
            rng.random_range(0.3..30.0),
            rng.random_range(-0.9..0.9),
        );
        let cov = [sx * sx, r * sx * sy, sy * sy];
        let det = cov[0] * cov[2] - cov[1] * cov[1];
        let conic = [cov[2] / det, -cov[1] / det, cov[0] / det];
        let opacity = rng.random_range(0.001..1.0f32);
        let tile = rng.random_range(0..grid.num_tiles());
        let rect = grid.tile_pixels(tile);
        let (x0, y0, x1, y1) = rect;
        let f64_cull = tile_cull(mean, conic, opacity, 1.0 / 255.0, x0, y0, x1, y1);
        // What the rasterizer runs per intersection: the box as pixel ranges, and the rows it visits.
        let range = cull_pixels(mean, conic, opacity, 1.0 / 255.0);
        let range_cull = range_misses_tile(&range, rect);
        culled += f64_cull as usize;
        culled_ranges += range_cull as usize;
        let visible = check_cull_covers(mean, conic, opacity, &range, rect);
        assert!(
            !(f64_cull && visible > 0),
            "f64 box culled a tile with {visible} visible pixels"
        );
    }
    assert!(
        culled_ranges > 5_000,
        "the pixel-range test culled too little to mean anything: {culled_ranges}"
    );
    assert!(
        culled > 5_000,
        "the test culled too little to mean anything: {culled}"
    );
}

/// The per-Gaussian stages split the scene across threads (2,048 Gaussians per task): on a scene large
/// enough to split, projection and its backward are bitwise the reference's, whatever the thread count.
#[test]
fn per_gaussian_stages_split_across_threads_match_bitwise() {
    let g = splat_core::synthetic::builtin_scene(10_007);
    let cam = splat_core::synthetic::builtin_camera(320, 240);
    let mut settings = RenderSettings::new(3);
    settings.pose_grads = true;
    let mut projected = [Default::default(), Default::default(), Default::default()];
    let mut grads = [Default::default(), Default::default(), Default::default()];
    let mut poses = [splat_render::PoseGrads::default(); 3];
    let mut reference = Buffers::default();
    splat_render::render(&mut ReferenceBackend, &g, &cam, &settings, &mut reference);
    let weights = random_weights(5, reference.raster.image.len());
    let weights: Vec<f32> = weights.iter().map(|&v| v as f32).collect();
    splat_render::backward(
        &mut ReferenceBackend,
        &g,
        &cam,
        &settings,
        &weights,
        &mut reference,
    );
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let three = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    for (k, pool) in [None, Some(&one), Some(&three)].into_iter().enumerate() {
        let mut go = || {
            let mut cpu = CpuBackend::new();
            cpu.project(&g, &cam, &settings, &mut projected[k]);
            poses[k] = cpu.project_backward(
                &g,
                &cam,
                &settings,
                &reference.projected,
                &reference.projected_grads,
                &mut grads[k],
            );
        };
        match pool {
            Some(p) => p.install(go),
            None => go(),
        }
        let p: &splat_render::Projected<f32> = &projected[k];
        let r = &reference.projected;
        assert_eq!(p.radii, r.radii);
        assert_eq!(p.tile_rects, r.tile_rects);
        for i in 0..g.len() {
            if r.radii[i] > 0 {
                assert_eq!(p.means2d[i], r.means2d[i]);
                assert_eq!(p.conics[i], r.conics[i]);
                assert_eq!(p.colors[i], r.colors[i]);
                assert_eq!(p.depths[i], r.depths[i]);
            }
        }
        let q: &splat_core::Gaussians<f32> = &grads[k];
        let rg = &reference.grads;
        assert_eq!(q.means, rg.means);
        assert_eq!(q.log_scales, rg.log_scales);
        assert_eq!(q.rotations, rg.rotations);
        assert_eq!(q.opacity_logits, rg.opacity_logits);
        assert_eq!(q.sh_dc, rg.sh_dc);
        assert_eq!(q.sh_rest, rg.sh_rest);
        // The pose's sum is the reference's terms in another order: the same bits on every thread
        // count, within f64 rounding of the reference's.
        assert_eq!(poses[k], poses[0]);
        let (a, b) = (poses[k].to_array(), reference.pose_grads.to_array());
        let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(scale > 0.0);
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() <= 1e-12 * scale, "{a:?} vs {b:?}");
        }
    }
}

/// The cull's pixel ranges are 16-bit with "and beyond" at the top: on images wider or taller than
/// 32,767 pixels they must still never cull a visible Gaussian, nor skip one of its rows.
#[test]
fn pixel_ranges_hold_past_16_bits() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for (w, h) in [(70_000u32, 64u32), (64, 70_000)] {
        let grid = TileGrid::new(w, h);
        let mut visible_pixels = 0;
        for _ in 0..3_000 {
            let far = rng.random_range(32_000.0..69_000.0f32);
            let near = rng.random_range(-10.0..74.0f32);
            let mean = if w > h { [far, near] } else { [near, far] };
            let (sx, sy) = (
                rng.random_range(0.5..20.0f32),
                rng.random_range(0.5..20.0f32),
            );
            let conic = [1.0 / (sx * sx), 0.0, 1.0 / (sy * sy)];
            let opacity = rng.random_range(0.01..1.0f32);
            let range = cull_pixels(mean, conic, opacity, 1.0 / 255.0);
            // The tiles around the mean.
            let (tx, ty) = (
                (mean[0].max(0.0) / 16.0) as u32,
                (mean[1].max(0.0) / 16.0) as u32,
            );
            for ty in ty.saturating_sub(1)..(ty + 2).min(grid.tiles_y) {
                for tx in tx.saturating_sub(1)..(tx + 2).min(grid.tiles_x) {
                    let rect = grid.tile_pixels((ty * grid.tiles_x + tx) as usize);
                    visible_pixels += check_cull_covers(mean, conic, opacity, &range, rect);
                }
            }
        }
        assert!(
            visible_pixels > 10_000,
            "too few visible pixels: {visible_pixels}"
        );
    }
}

/// The fast backend keeps per-Gaussian cull data between passes and reuses a Gaussian's when its
/// projection is bit for bit the same: a backend that rendered other scenes before must give the bits of
/// a fresh one, whatever changed (some Gaussians moved, some faded, fewer Gaussians, more).
#[test]
fn reused_backend_matches_a_fresh_one() {
    let (w, h) = (61, 47);
    let settings = RenderSettings::new(1);
    let weights: Vec<f32> = random_weights(5, (w * h * 3) as usize)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let a = stress_scene(21, 1).cast::<f32>();
    let mut moved = a.clone();
    for i in (0..moved.len()).step_by(3) {
        moved.means[i][0] += 0.05;
    }
    for i in (0..moved.len()).step_by(5) {
        moved.opacity_logits[i] -= 1.5;
    }
    // The first Gaussians of another scene, then that whole scene.
    let more = stress_scene(22, 1).cast::<f32>();
    let mut fewer = Gaussians::<f32>::new(1);
    for i in 0..more.len() / 2 {
        fewer.push(
            more.means[i],
            more.log_scales[i],
            more.rotations[i],
            more.opacity_logits[i],
            more.sh_dc[i],
            more.sh_rest_of(i),
        );
    }
    let mut used = CpuBackend::new();
    run(&mut used, &a, &settings, w, h, &weights);
    for (name, scene) in [
        ("moved", &moved),
        ("fewer", &fewer),
        ("more", &more),
        ("again", &a),
    ] {
        let u = run(&mut used, scene, &settings, w, h, &weights);
        let f = run(&mut CpuBackend::new(), scene, &settings, w, h, &weights);
        assert_eq!(u.raster.image, f.raster.image, "{name}: image");
        assert_eq!(u.raster.n_contrib, f.raster.n_contrib, "{name}: counts");
        let (ug, fg) = (&u.projected_grads, &f.projected_grads);
        assert_eq!(ug.grad_means2d, fg.grad_means2d, "{name}: mean grads");
        assert_eq!(ug.grad_conics, fg.grad_conics, "{name}: conic grads");
        assert_eq!(
            ug.grad_opacities, fg.grad_opacities,
            "{name}: opacity grads"
        );
    }
}

/// `RenderSettings::absgrad`: every CPU level sums the per-pixel absolute 2D-mean gradients as the
/// reference does, leaves every other gradient's bits as they are without it, and the sums bound the
/// plain gradient (|sum| <= sum of |.|, strictly where pixels disagree in sign).
#[test]
fn absgrad_sums_match_the_reference_and_bound_the_plain_gradient() {
    let (w, h, degree) = (83, 61, 1);
    let g = stress_scene(21, degree).cast::<f32>();
    let weights: Vec<f32> = random_weights(21, (w * h * 3) as usize)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let mut on = RenderSettings::new(degree);
    on.absgrad = true;
    let off = RenderSettings::new(degree);
    let r = run(&mut ReferenceBackend, &g, &on, w, h, &weights);
    let r_off = run(&mut ReferenceBackend, &g, &off, w, h, &weights);
    let (abs, plain) = (
        &r.projected_grads.abs_grad_means2d,
        &r.projected_grads.grad_means2d,
    );
    assert_eq!(abs.len(), g.len());
    assert!(r_off.projected_grads.abs_grad_means2d.is_empty());
    assert_eq!(plain, &r_off.projected_grads.grad_means2d);
    let mut cancelled = 0;
    for (a, p) in abs.iter().zip(plain) {
        for k in 0..2 {
            assert!(a[k] >= 0.0 && p[k].abs() <= a[k] * (1.0 + 1e-5) + 1e-12);
            cancelled += (p[k].abs() < 0.9 * a[k]) as usize;
        }
    }
    assert!(
        cancelled > 10,
        "only {cancelled} components saw opposite signs"
    );
    for level in SimdLevel::available() {
        let f = run(&mut CpuBackend::with_simd(level), &g, &on, w, h, &weights);
        let f_off = run(&mut CpuBackend::with_simd(level), &g, &off, w, h, &weights);
        close(
            &format!("{level:?} abs_grad_means2d"),
            abs.as_flattened(),
            f.projected_grads.abs_grad_means2d.as_flattened(),
            1e-4,
        );
        assert_eq!(
            f.projected_grads.grad_means2d, f_off.projected_grads.grad_means2d,
            "{level:?}"
        );
        assert_eq!(f.grads.means, f_off.grads.means, "{level:?}");
        assert!(f_off.projected_grads.abs_grad_means2d.is_empty());
    }
}
