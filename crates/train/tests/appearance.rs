//! Per-image appearance models: exact gradients (central finite differences in f64) of the affine
//! model, the bilateral grid (guidance path and border clamp included) and its total variation; the
//! parallel training path against the whole-image twin.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use splat_train::appearance::{
    apply, backward, bilagrid, identity, regularizer, Appearance, AppearanceKind,
};

const KINDS: [AppearanceKind; 2] = [AppearanceKind::Affine, AppearanceKind::BilateralGrid];

/// Parameters near the identity with noise, and a render whose guidance keeps 1e-4 away from the
/// grid's planes (trilinear weights have kinks there); some pixels are outside [0, 1] (border clamp).
fn case(kind: AppearanceKind, w: usize, h: usize, seed: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut params = vec![0.0; kind.per_image()];
    identity(kind, &mut params);
    for p in params.iter_mut() {
        *p += rng.random_range(-0.3..0.3);
    }
    let mut render = Vec::new();
    while render.len() < w * h * 3 {
        let px: [f64; 3] = std::array::from_fn(|_| rng.random_range(-0.15..1.15));
        let z = (0..3).map(|c| bilagrid::LUMA[c] * px[c]).sum::<f64>() * 7.0;
        if (z - z.round()).abs() > 1e-4 {
            render.extend(px);
        }
    }
    let grad_out = (0..w * h * 3)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    (params, render, grad_out)
}

/// `sum grad_out * model(render)`: a loss whose gradient is the backward's.
fn loss(kind: AppearanceKind, p: &[f64], r: &[f64], go: &[f64], w: usize, h: usize) -> f64 {
    let mut out = vec![0.0; r.len()];
    apply(kind, p, r, w, h, &mut out);
    out.iter().zip(go).map(|(a, b)| a * b).sum()
}

fn check(name: &str, analytic: f64, fd: f64) {
    // 1e-8 absolute: the rounding of a loss summed over a few hundred O(1) terms, over 2e-6.
    let err = ((fd - analytic).abs() - 1e-8).max(0.0) / fd.abs().max(analytic.abs()).max(1e-12);
    assert!(err <= 1e-6, "{name}: analytic {analytic} vs fd {fd}");
}

#[test]
fn model_gradients_match_finite_differences() {
    let (w, h) = (9, 7);
    let step = 1e-6;
    for kind in KINDS {
        let (params, render, go) = case(kind, w, h, 11);
        let mut grad_render = vec![f64::NAN; render.len()];
        let mut grad_params = vec![0.0; params.len()];
        backward(
            kind,
            &params,
            &render,
            &go,
            w,
            h,
            &mut grad_render,
            &mut grad_params,
        );
        for i in 0..render.len() {
            let mut r = render.clone();
            r[i] += step;
            let lp = loss(kind, &params, &r, &go, w, h);
            r[i] -= 2.0 * step;
            let lm = loss(kind, &params, &r, &go, w, h);
            check(
                &format!("{kind:?} render {i}"),
                grad_render[i],
                (lp - lm) / (2.0 * step),
            );
        }
        // Every parameter an image of this size reaches, and some it does not (gradient 0).
        let mut touched = 0;
        for i in 0..params.len() {
            if kind == AppearanceKind::BilateralGrid && i % 37 != 0 && grad_params[i] == 0.0 {
                continue;
            }
            let mut p = params.clone();
            p[i] += step;
            let lp = loss(kind, &p, &render, &go, w, h);
            p[i] -= 2.0 * step;
            let lm = loss(kind, &p, &render, &go, w, h);
            check(
                &format!("{kind:?} param {i}"),
                grad_params[i],
                (lp - lm) / (2.0 * step),
            );
            touched += usize::from(grad_params[i] != 0.0);
        }
        assert!(touched >= 12, "{kind:?}: {touched} parameters reached");
    }
}

#[test]
fn total_variation_gradient_matches_finite_differences() {
    let kind = AppearanceKind::BilateralGrid;
    let images = 2;
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut params = vec![0.0; images * kind.per_image()];
    identity(kind, &mut params);
    let mut grad = vec![0.0; params.len()];
    assert_eq!(regularizer(kind, &params, images, &mut grad), 0.0);
    assert!(grad.iter().all(|&g| g == 0.0), "identity grids are smooth");
    for p in params.iter_mut() {
        *p += rng.random_range(-0.1..0.1);
    }
    grad.fill(0.0);
    let tv = regularizer(kind, &params, images, &mut grad);
    assert!(tv > 0.0);
    let step = 1e-5;
    for i in (0..params.len()).step_by(97) {
        let mut p = params.clone();
        let mut scratch = vec![0.0; p.len()];
        p[i] += step;
        let lp = regularizer(kind, &p, images, &mut scratch);
        p[i] -= 2.0 * step;
        let lm = regularizer(kind, &p, images, &mut scratch);
        check(&format!("tv {i}"), grad[i], (lp - lm) / (2.0 * step));
    }
}

#[test]
fn parallel_path_matches_the_twin() {
    // Taller than a band (16 rows), an odd width.
    let (w, h) = (23, 41);
    for kind in KINDS {
        let (params, render, go) = case(kind, w, h, 5);
        let f = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
        let (p32, r32, g32) = (f(&params), f(&render), f(&go));
        let mut want = vec![0.0f32; r32.len()];
        apply(kind, &p32, &r32, w, h, &mut want);
        let mut want_gr = vec![0.0f32; r32.len()];
        let mut want_gp = vec![0.0f32; p32.len()];
        backward(kind, &p32, &r32, &g32, w, h, &mut want_gr, &mut want_gp);
        let mut app = Appearance::default();
        app.apply(kind, &p32, &r32, w, h);
        assert_eq!(
            app.corrected, want,
            "{kind:?}: the forward is the same per pixel"
        );
        let mut gp = vec![0.0f32; p32.len()];
        app.backward(kind, &p32, &r32, &g32, w, h, &mut gp);
        assert_eq!(app.grad_render, want_gr, "{kind:?}");
        // Parameter gradients summed per band, then over bands: the same up to rounding.
        let scale = want_gp.iter().fold(0.0f32, |a, b| a.max(b.abs()));
        for (i, (a, b)) in gp.iter().zip(&want_gp).enumerate() {
            assert!(
                (a - b).abs() <= 1e-5 * scale,
                "{kind:?} param {i}: {a} vs {b}"
            );
        }
        // Same bits on one thread.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let mut gp1 = vec![0.0f32; p32.len()];
        pool.install(|| app.backward(kind, &p32, &r32, &g32, w, h, &mut gp1));
        assert_eq!(gp, gp1);
    }
}

#[test]
fn identity_models_leave_the_render_as_it_is() {
    let (w, h) = (12, 10);
    for kind in KINDS {
        let (_, render, _) = case(kind, w, h, 8);
        let mut params = vec![0.0; kind.per_image()];
        identity(kind, &mut params);
        let mut out = vec![0.0; render.len()];
        apply(kind, &params, &render, w, h, &mut out);
        for (a, b) in out.iter().zip(&render) {
            assert!((a - b).abs() < 1e-12, "{kind:?}: {a} vs {b}");
        }
    }
}

#[test]
fn learning_rates_follow_the_published_schedules() {
    let g = AppearanceKind::BilateralGrid;
    assert!((g.learning_rate(1, 30_000, 1) - 2e-5).abs() < 1e-12);
    let at_1001 = 2e-3 * 0.01f64.powf(1000.0 / 30_000.0);
    assert!((g.learning_rate(1001, 30_000, 1) - at_1001).abs() < 1e-12);
    assert!((g.learning_rate(30_001, 30_000, 4) - 2e-3 * 2.0 * 0.01).abs() < 1e-12);
    let a = AppearanceKind::Affine;
    assert!((a.learning_rate(0, 100, 1) - 0.01).abs() < 1e-12);
    assert!((a.learning_rate(100, 100, 1) - 0.001).abs() < 1e-12);
}

/// gsplat's `total_variation_loss` on grids laid out `(N, 12, L, H, W)`, written from its definition:
/// per axis the sum of squared neighbour differences over the whole tensor divided by the element count
/// of one grid's slice (`_num_tensor_elems` leaves out the batch dimension), summed, divided by N.
fn gsplat_tv(grids: &[f64], n: usize) -> f64 {
    let (w, h, l) = (bilagrid::GRID_W, bilagrid::GRID_H, bilagrid::GRID_L);
    // Ours is [N][L][H][W][12].
    let at = |g: usize, c: usize, z: usize, y: usize, x: usize| {
        grids[g * bilagrid::PER_IMAGE + ((z * h + y) * w + x) * 12 + c]
    };
    let mut tv = 0.0;
    for axis in 0..3 {
        let (mut sum, mut count) = (0.0, 0.0);
        for g in 0..n {
            for c in 0..12 {
                for z in 0..l {
                    for y in 0..h {
                        for x in 0..w {
                            let next = match axis {
                                0 if z + 1 < l => at(g, c, z + 1, y, x),
                                1 if y + 1 < h => at(g, c, z, y + 1, x),
                                2 if x + 1 < w => at(g, c, z, y, x + 1),
                                _ => continue,
                            };
                            let d = next - at(g, c, z, y, x);
                            sum += d * d;
                            if g == 0 {
                                count += 1.0;
                            }
                        }
                    }
                }
            }
        }
        tv += sum / count;
    }
    tv / n as f64
}

#[test]
fn total_variation_is_gsplat_s() {
    let kind = AppearanceKind::BilateralGrid;
    for images in [1, 3] {
        let mut rng = ChaCha8Rng::seed_from_u64(images as u64);
        let mut params = vec![0.0; images * kind.per_image()];
        identity(kind, &mut params);
        for p in params.iter_mut() {
            *p += rng.random_range(-0.2..0.2);
        }
        let mut grad = vec![0.0; params.len()];
        let ours = regularizer(kind, &params, images, &mut grad);
        let want = bilagrid::TV_WEIGHT * gsplat_tv(&params, images);
        assert!(
            (ours - want).abs() < 1e-12 * want,
            "{images} grids: {ours} vs {want}"
        );
    }
}
