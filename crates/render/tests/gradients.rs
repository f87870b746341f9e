//! Analytic gradients against central finite differences, in f64.
//!
//! Loss: `L = sum(w * image)` with seeded weights `w` in [-1, 1]. Every parameter of every Gaussian is
//! perturbed by `+-h` (h = 1e-5) and `(L(+h) - L(-h)) / 2h` is compared with the backward.
//!
//! Tolerance: `|a - f| <= 1e-4 * max(|a|, |f|) + 1e-8`: relative error 1e-4, plus an absolute 1e-8 for the
//! rounding of the finite difference itself (the loss sums thousands of pixels, so it carries a rounding
//! error of ~1e-13, which divided by 2h = 2e-5 gives ~5e-9; entries that are zero up to rounding, e.g. a
//! Gaussian hidden behind others, or tiny SH gradients, would otherwise fail on noise). Truncation error
//! is ~h^2 = 1e-10 relative. Wrong terms are typically off by O(1), far outside this.
//!
//! The true forward has discontinuities (the 1/255 cut, the 0.99 clamp, the 1e-4 transmittance stop, the
//! tile rectangles, the colour clamp at 0). Two tests handle them:
//! - `smooth_*`: random scenes rendered with `Cutoffs::SMOOTH` (a test-only stand-in with no cuts); the test
//!   checks that no perturbation changed a tile rectangle or a colour clamp.
//! - `original_cutoffs_*`: the real cutoffs on a designed scene whose every alpha and transmittance decision
//!   is measured to be at least 1e-3 (relative) away from its threshold, so that +-h cannot cross one. That
//!   scene has a Gaussian clamped at alpha 0.99 everywhere and pixels where blending stops at T < 1e-4.

mod common;

use common::{backward, forward, random_weights, test_camera};
use splat_core::synthetic::{random_scene, RandomSceneOptions};
use splat_core::{logit, Camera, Gaussians, Projection, TileGrid};
use splat_render::{
    rasterize_bwd, rasterize_fwd, Cutoffs, Projected, ProjectedGrads, RasterOutput, RenderSettings,
};

const H: f64 = 1e-5;
const REL_TOL: f64 = 1e-4;
/// Rounding of the loss (~1e-13 for these images) divided by 2h.
const ABS_TOL: f64 = 1e-8;

const GROUPS: [&str; 6] = [
    "means",
    "log_scales",
    "rotations",
    "opacity_logits",
    "sh_dc",
    "sh_rest",
];

fn group_mut<'a>(g: &'a mut Gaussians<f64>, name: &str) -> &'a mut [f64] {
    match name {
        "means" => g.means.as_flattened_mut(),
        "log_scales" => g.log_scales.as_flattened_mut(),
        "rotations" => g.rotations.as_flattened_mut(),
        "opacity_logits" => &mut g.opacity_logits,
        "sh_dc" => g.sh_dc.as_flattened_mut(),
        "sh_rest" => &mut g.sh_rest,
        _ => unreachable!(),
    }
}

fn loss(image: &[f64], weights: &[f64]) -> f64 {
    image.iter().zip(weights).map(|(a, b)| a * b).sum()
}

/// Compares one group; returns the worst relative error.
fn compare(what: &str, analytic: &[f64], fd: &[f64]) -> f64 {
    let largest = analytic
        .iter()
        .chain(fd)
        .fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(
        largest > 0.0 || analytic.is_empty(),
        "{what}: all gradients are zero"
    );
    let mut worst = 0.0f64;
    for (i, (&a, &f)) in analytic.iter().zip(fd).enumerate() {
        let err = ((a - f).abs() - ABS_TOL).max(0.0) / a.abs().max(f.abs()).max(f64::MIN_POSITIVE);
        assert!(
            err <= REL_TOL,
            "{what}[{i}]: analytic {a:e} vs finite difference {f:e} (rel err {err:e})"
        );
        worst = worst.max(err);
    }
    worst
}

fn check_all_parameters(
    g: &Gaussians<f64>,
    cam: &Camera,
    settings: &RenderSettings,
    weights: &[f64],
    tag: &str,
) {
    let base = forward(g, cam, settings);
    let (_, grads) = backward(g, cam, settings, &base, weights);
    let mut grads = grads;
    for name in GROUPS {
        let analytic = group_mut(&mut grads, name).to_vec();
        let len = analytic.len();
        let mut fd = vec![0.0; len];
        for i in 0..len {
            let mut plus = g.clone();
            group_mut(&mut plus, name)[i] += H;
            let mut minus = g.clone();
            group_mut(&mut minus, name)[i] -= H;
            let (p, m) = (
                forward(&plus, cam, settings),
                forward(&minus, cam, settings),
            );
            for pass in [&p, &m] {
                assert_eq!(
                    pass.projected.radii, base.projected.radii,
                    "{tag} {name}[{i}]: a radius changed"
                );
                assert_eq!(
                    pass.projected.tile_rects, base.projected.tile_rects,
                    "{tag} {name}[{i}]: a tile rect changed"
                );
                assert_eq!(
                    pass.projected.color_clamped, base.projected.color_clamped,
                    "{tag} {name}[{i}]: a colour clamp changed"
                );
            }
            fd[i] = (loss(&p.raster.image, weights) - loss(&m.raster.image, weights)) / (2.0 * H);
        }
        let worst = compare(&format!("{tag} {name}"), &analytic, &fd);
        eprintln!("{tag} {name}: {len} values, worst relative error {worst:.2e}");
    }
}

/// Random scene plus one Gaussian beyond the Jacobian clamp that still reaches the image.
fn smooth_scene(seed: u64, sh_degree: usize) -> Gaussians<f64> {
    let mut g = random_scene(
        seed,
        &RandomSceneOptions {
            count: 14,
            sh_degree,
            log_scale_range: (-2.5, -1.0),
            opacity_range: (0.1, 0.9),
            extent: 1.0,
        },
    );
    // x/z = 1.6 / 4 = 0.4 > 1.3 * tan(30 deg) * (40 / 48)... placed at the side, large enough to reach in.
    let rest = vec![0.05; g.sh_rest_len()];
    g.push(
        [3.4, 0.2, 0.5],
        [-0.3, -0.6, -0.4],
        [0.9, 0.1, -0.2, 0.3],
        logit(0.6),
        [0.3, -0.2, 0.4],
        &rest,
    );
    g
}

#[test]
fn smooth_all_parameters_every_degree() {
    let (w, h) = (48, 40);
    let cam = test_camera(w, h);
    let weights = random_weights(7, (w * h * 3) as usize);
    for degree in 0..=3 {
        let g = smooth_scene(100 + degree as u64, degree);
        let mut settings = RenderSettings::new(degree);
        settings.cutoffs = Cutoffs::SMOOTH;
        settings.background = [0.3, 0.6, 0.1];
        // The side Gaussian really is beyond the clamp and visible.
        let p = forward(&g, &cam, &settings).projected;
        let last = g.len() - 1;
        assert!(
            p.radii[last] > 0 && p.means2d[last][0] > w as f64,
            "clamp case not exercised"
        );
        check_all_parameters(
            &g,
            &cam,
            &settings,
            &weights,
            &format!("smooth degree {degree}"),
        );
    }
}

/// Antialiased scenes: the compensation `rho` and its gradient, on the smooth scene with Gaussians from
/// pixel size down to far below it (rho well under 1) and one so small that rho sits at its floor.
#[test]
fn smooth_antialiased_all_parameters() {
    let (w, h) = (48, 40);
    let cam = test_camera(w, h);
    let weights = random_weights(17, (w * h * 3) as usize);
    let mut g = smooth_scene(300, 1);
    for (i, s) in g.log_scales.iter_mut().enumerate().take(6) {
        *s = s.map(|v| v - 1.0 - 0.4 * i as f64);
    }
    let rest = vec![0.0; g.sh_rest_len()];
    g.push(
        [0.1, -0.1, 0.2],
        [-9.0, -9.5, -8.7],
        [1.0, 0.2, 0.1, 0.0],
        logit(0.7),
        [0.5; 3],
        &rest,
    );
    g.antialiased = true;
    let mut settings = RenderSettings::new(1);
    settings.cutoffs = Cutoffs::SMOOTH;
    let with = forward(&g, &cam, &settings).projected;
    let mut plain = g.clone();
    plain.antialiased = false;
    let without = forward(&plain, &cam, &settings).projected;
    let rho: Vec<f64> = (0..g.len())
        .filter(|&i| with.radii[i] > 0)
        .map(|i| with.opacities[i] / without.opacities[i])
        .collect();
    assert!(rho.iter().all(|&r| r > 0.0 && r <= 1.0), "{rho:?}");
    assert!(
        rho.iter().any(|&r| r < 0.5),
        "no strongly compensated Gaussian: {rho:?}"
    );
    assert!(
        (rho[rho.len() - 1] - splat_render::project::MIN_COMPENSATION).abs() < 1e-15,
        "the tiny Gaussian is not at the floor: {rho:?}"
    );
    check_all_parameters(&g, &cam, &settings, &weights, "antialiased");
}

/// The equidistant fisheye (`splat_render::fisheye`): a camera seeing 138 degrees across, the smooth
/// scene near the axis plus Gaussians at 60-100 degrees from it (beyond 90 they are behind the camera's
/// plane and still reach the image).
#[test]
fn smooth_fisheye_all_parameters() {
    let (w, h) = (48, 40);
    let mut cam = test_camera(w, h);
    cam.projection = Projection::Equidistant;
    (cam.fx, cam.fy) = (20.0, 20.0);
    let weights = random_weights(27, (w * h * 3) as usize);
    let mut g = smooth_scene(400, 1);
    let rest = vec![0.05; g.sh_rest_len()];
    let wide = [[3.5, 0.0, -2.5], [-3.0, 1.0, -3.0], [4.0, 0.5, -4.5]];
    for (k, mean) in wide.iter().enumerate() {
        g.push(
            *mean,
            [-0.2, -0.5, -0.3],
            [0.9, 0.1 * k as f64, -0.2, 0.3],
            logit(0.6),
            [0.3, -0.2, 0.4],
            &rest,
        );
    }
    let mut settings = RenderSettings::new(1);
    settings.cutoffs = Cutoffs::SMOOTH;
    let p = forward(&g, &cam, &settings).projected;
    let angles: Vec<f64> = wide
        .iter()
        .map(|m| {
            let c = splat_core::math::mat3_vec(&cam.rotation, *m);
            let c = [0, 1, 2].map(|i| c[i] + cam.translation[i]);
            c[0].hypot(c[1]).atan2(c[2]).to_degrees()
        })
        .collect();
    assert!(angles[0] > 55.0 && angles[2] > 90.0, "{angles:?}");
    for k in 0..wide.len() {
        let i = g.len() - wide.len() + k;
        assert!(
            p.radii[i] > 0,
            "wide Gaussian {k} at {:.0} deg culled",
            angles[k]
        );
    }
    check_all_parameters(&g, &cam, &settings, &weights, "fisheye");
}

#[test]
fn smooth_active_degree_below_stored_degree() {
    // Training raises the active degree over time: coefficients above it get exactly zero gradient.
    let (w, h) = (40, 32);
    let cam = test_camera(w, h);
    let weights = random_weights(8, (w * h * 3) as usize);
    let g = smooth_scene(200, 3);
    let mut settings = RenderSettings::new(1);
    settings.cutoffs = Cutoffs::SMOOTH;
    let pass = forward(&g, &cam, &settings);
    let (_, grads) = backward(&g, &cam, &settings, &pass, &weights);
    for i in 0..g.len() {
        let rest = &grads.sh_rest[i * 45..(i + 1) * 45];
        assert!(rest[9..].iter().all(|&v| v == 0.0));
    }
    check_all_parameters(&g, &cam, &settings, &weights, "active degree 1 of 3");
}

/// The smallest relative distance of any blending decision of the render from its threshold.
fn decision_margin(p: &Projected<f64>, raster_w: u32, raster_h: u32, ids: &[usize]) -> f64 {
    let c = Cutoffs::ORIGINAL;
    let mut order: Vec<usize> = ids.to_vec();
    order.sort_by(|&a, &b| p.depths[a].partial_cmp(&p.depths[b]).unwrap());
    let mut margin = f64::INFINITY;
    let rel = |x: f64, t: f64| ((x - t) / t).abs();
    for py in 0..raster_h {
        for px in 0..raster_w {
            let mut t = 1.0;
            for &i in &order {
                let d = [
                    p.means2d[i][0] - (px as f64 + 0.5),
                    p.means2d[i][1] - (py as f64 + 0.5),
                ];
                let power = rasterize_fwd::gaussian_power(p.conics[i], d);
                let raw = p.opacities[i] * power.exp();
                margin = margin.min(rel(raw, c.alpha_min)).min(rel(raw, c.alpha_max));
                let alpha = raw.min(c.alpha_max);
                if alpha < c.alpha_min {
                    continue;
                }
                let next = t * (1.0 - alpha);
                margin = margin.min(rel(next, c.transmittance_min));
                if next < c.transmittance_min {
                    break;
                }
                t = next;
            }
        }
    }
    margin
}

#[test]
fn original_cutoffs_on_a_scene_away_from_the_edges() {
    let (w, h) = (32, 24);
    let cam = test_camera(w, h);
    let center = cam.center();
    let fwd = cam.rotation[2];
    let at = |depth: f64, dx: f64, dy: f64| -> [f64; 3] {
        let (r, d) = (cam.rotation[0], cam.rotation[1]);
        std::array::from_fn(|k| center[k] + depth * fwd[k] + dx * r[k] + dy * d[k])
    };
    let mut g = Gaussians::new(3);
    let rest = |s: f64| -> Vec<f64> {
        (0..45)
            .map(|k| s * (((k * 37) % 11) as f64 / 11.0 - 0.5))
            .collect()
    };
    // Front layer, alpha between ~0.2 and 0.6.
    g.push(
        at(3.0, 0.1, -0.05),
        [0.4, 0.2, 0.3],
        [0.9, 0.2, -0.1, 0.3],
        logit(0.6),
        [0.8, -0.3, 0.2],
        &rest(0.3),
    );
    // Clamped at 0.99 everywhere on the image.
    g.push(
        at(5.0, 0.0, 0.0),
        [4.5, 4.4, 4.6],
        [1.0, 0.1, 0.2, -0.1],
        logit(0.9995),
        [-0.5, 0.9, 0.1],
        &rest(0.2),
    );
    // Behind it: high alpha, then blending stops (T < 1e-4) at the next one.
    g.push(
        at(6.0, -0.2, 0.1),
        [0.9, 1.0, 0.8],
        [0.7, -0.3, 0.2, 0.1],
        logit(0.93),
        [0.1, 0.4, -0.6],
        &rest(0.3),
    );
    g.push(
        at(7.0, 0.3, 0.2),
        [1.0, 0.8, 0.9],
        [0.6, 0.3, 0.4, -0.2],
        logit(0.97),
        [0.5, 0.5, 0.5],
        &rest(0.3),
    );
    // Skipped everywhere: alpha < 1/255.
    g.push(
        at(2.5, 0.0, 0.1),
        [0.5, 0.5, 0.5],
        [1.0, 0.0, 0.0, 0.0],
        logit(0.002),
        [0.5, 0.5, 0.5],
        &rest(0.1),
    );
    let mut settings = RenderSettings::new(3);
    settings.background = [0.5, 0.2, 0.7];

    let pass = forward(&g, &cam, &settings);
    let grid = TileGrid::new(w, h);
    assert!(pass.projected.radii.iter().all(|&r| r > 0));
    let rects = &pass.projected.tile_rects;
    assert!(
        rects[..4].iter().all(|r| r.area() == grid.num_tiles()),
        "every reachable Gaussian covers every tile"
    );
    // The projection leaves the one whose alpha is under 1/255 everywhere out of every tile.
    assert!(rects[4].is_empty(), "{:?}", rects[4]);
    let margin = decision_margin(&pass.projected, w, h, &(0..g.len()).collect::<Vec<_>>());
    assert!(
        margin > 1e-3,
        "scene too close to a cutoff: margin {margin:e}"
    );
    // The cases are really there: the list is [front, clamped, high, last] everywhere (the skipped one
    // is in no tile), so n_contrib = 4 where all blend and < 4 where blending stopped before T < 1e-4.
    // Both occur.
    assert!(pass.raster.n_contrib.iter().any(|&n| n < 4));
    assert!(pass.raster.n_contrib.contains(&4));
    let weights = random_weights(9, (w * h * 3) as usize);
    check_all_parameters(&g, &cam, &settings, &weights, "original cutoffs");
}

/// The rasterize stage alone: gradients with respect to 2D means, conics, colours and opacities.
#[test]
fn rasterize_stage_gradients_including_means2d() {
    let (w, h) = (40, 36);
    let cam = test_camera(w, h);
    let g = smooth_scene(300, 2);
    let mut settings = RenderSettings::new(2);
    settings.cutoffs = Cutoffs::SMOOTH;
    settings.background = [0.2, 0.2, 0.9];
    let grid = TileGrid::new(w, h);
    let base = forward(&g, &cam, &settings);
    let weights = random_weights(10, (w * h * 3) as usize);
    let mut pg = ProjectedGrads::default();
    rasterize_bwd::rasterize_backward(
        &base.projected,
        &base.bins,
        &grid,
        &settings,
        &base.raster,
        &weights,
        &mut pg,
    );

    let render = |p: &Projected<f64>| {
        let mut out = RasterOutput::default();
        rasterize_fwd::rasterize_forward(p, &base.bins, &grid, &settings, &mut out);
        loss(&out.image, &weights)
    };
    type Field = fn(&mut Projected<f64>) -> &mut [f64];
    let fields: [(&str, Field, Vec<f64>); 4] = [
        (
            "means2d",
            |p| p.means2d.as_flattened_mut(),
            pg.grad_means2d.as_flattened().to_vec(),
        ),
        (
            "conics",
            |p| p.conics.as_flattened_mut(),
            pg.grad_conics.as_flattened().to_vec(),
        ),
        (
            "colors",
            |p| p.colors.as_flattened_mut(),
            pg.grad_colors.as_flattened().to_vec(),
        ),
        ("opacities", |p| &mut p.opacities, pg.grad_opacities.clone()),
    ];
    for (name, field, analytic) in fields {
        let mut fd = vec![0.0; analytic.len()];
        for i in 0..fd.len() {
            let mut plus = base.projected.clone();
            field(&mut plus)[i] += H;
            let mut minus = base.projected.clone();
            field(&mut minus)[i] -= H;
            fd[i] = (render(&plus) - render(&minus)) / (2.0 * H);
        }
        // Culled Gaussians have no tile entries, so both sides are zero for them.
        compare(&format!("rasterize {name}"), &analytic, &fd);
    }
}

/// The camera pose's gradient ([`splat_render::PoseGrads`]): every entry of the world-to-camera
/// rotation (as a free matrix) and translation perturbed by `+-h`, on the pinhole at SH degrees 0 and 3
/// (the view direction's term), an antialiased scene, and the fisheye with Gaussians far off its axis.
#[test]
fn smooth_camera_pose() {
    let (w, h) = (48, 40);
    let weights = random_weights(37, (w * h * 3) as usize);
    let pinhole = test_camera(w, h);
    let mut fisheye = pinhole.clone();
    fisheye.projection = Projection::Equidistant;
    (fisheye.fx, fisheye.fy) = (20.0, 20.0);
    let mut aa = smooth_scene(520, 1);
    aa.antialiased = true;
    let cases = [
        ("pinhole degree 0", smooth_scene(500, 0), &pinhole),
        ("pinhole degree 3", smooth_scene(510, 3), &pinhole),
        ("antialiased", aa, &pinhole),
        ("fisheye", smooth_scene(530, 2), &fisheye),
    ];
    for (tag, g, cam) in cases {
        let mut settings = RenderSettings::new(g.sh_degree);
        settings.cutoffs = Cutoffs::SMOOTH;
        settings.pose_grads = true;
        let base = forward(&g, cam, &settings);
        let (pg, mut grads) = backward(&g, cam, &settings, &base, &weights);
        let analytic = splat_render::project_bwd::project_backward(
            &g,
            cam,
            &settings,
            &base.projected,
            &pg,
            &mut grads,
        )
        .to_array();
        let mut fd = [0.0; 12];
        for (k, v) in fd.iter_mut().enumerate() {
            let moved = |d: f64| {
                let mut c = cam.clone();
                if k < 9 {
                    c.rotation[k / 3][k % 3] += d;
                } else {
                    c.translation[k - 9] += d;
                }
                let pass = forward(&g, &c, &settings);
                assert_eq!(pass.projected.radii, base.projected.radii, "{tag} [{k}]");
                assert_eq!(
                    pass.projected.tile_rects, base.projected.tile_rects,
                    "{tag} [{k}]"
                );
                loss(&pass.raster.image, &weights)
            };
            *v = (moved(H) - moved(-H)) / (2.0 * H);
        }
        let worst = compare(&format!("{tag} pose"), &analytic, &fd);
        eprintln!("{tag} pose: worst relative error {worst:.2e}");
    }
}
