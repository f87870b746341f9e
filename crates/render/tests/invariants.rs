//! Invariants of the reference pipeline: determinism, culling, empty scenes, untouched pixels.

mod common;

use common::{backward, forward, random_weights, stress_scene, test_camera};
use splat_core::{logit, Gaussians};
use splat_render::{Buffers, ReferenceBackend, RenderSettings};

#[test]
fn same_inputs_give_identical_bits() {
    let g = stress_scene(5, 3).cast::<f32>();
    let cam = test_camera(80, 60);
    let settings = RenderSettings::new(3);
    let weights: Vec<f32> = random_weights(1, 80 * 60 * 3)
        .iter()
        .map(|&w| w as f32)
        .collect();
    let run = || {
        let mut buffers = Buffers::default();
        let mut backend = ReferenceBackend;
        splat_render::render(&mut backend, &g, &cam, &settings, &mut buffers);
        splat_render::backward(&mut backend, &g, &cam, &settings, &weights, &mut buffers);
        buffers
    };
    let (a, b) = (run(), run());
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&a.raster.image), bits(&b.raster.image));
    assert_eq!(a.raster.n_contrib, b.raster.n_contrib);
    for (x, y) in [
        (a.grads.means.concat(), b.grads.means.concat()),
        (a.grads.log_scales.concat(), b.grads.log_scales.concat()),
        (a.grads.rotations.concat(), b.grads.rotations.concat()),
        (
            a.grads.opacity_logits.clone(),
            b.grads.opacity_logits.clone(),
        ),
        (a.grads.sh_dc.concat(), b.grads.sh_dc.concat()),
        (a.grads.sh_rest.clone(), b.grads.sh_rest.clone()),
    ] {
        assert_eq!(bits(&x), bits(&y));
    }
    assert!(
        a.grads.means.iter().any(|m| m[0] != 0.0),
        "gradients are all zero"
    );
}

/// The reference rasterizer runs rows of tiles in parallel; its backward adds each pair's terms in the
/// one-thread order from lists. Images, counts and every gradient must be the same bits on 1, 2 and 3
/// threads (the 2-thread run fills its lists in two windows of rows, the 3-thread run in one), on a
/// scene with a dense clump (long lists, clamped alphas) and partial tiles at the edges.
#[test]
fn reference_rasterizer_gives_the_same_bits_on_any_thread_count() {
    let g = stress_scene(11, 3).cast::<f32>();
    let (w, h) = (90, 77);
    let cam = test_camera(w, h);
    let settings = RenderSettings::new(3);
    let weights: Vec<f32> = random_weights(2, (w * h * 3) as usize)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut buffers = Buffers::default();
            let mut backend = ReferenceBackend;
            splat_render::render(&mut backend, &g, &cam, &settings, &mut buffers);
            splat_render::backward(&mut backend, &g, &cam, &settings, &weights, &mut buffers);
            buffers
        })
    };
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let one = run(1);
    let pg = &one.projected_grads;
    assert!(
        pg.grad_opacities.iter().filter(|&&x| x != 0.0).count() > 100,
        "too few Gaussians with gradients to mean anything"
    );
    for threads in [2, 3] {
        let other = run(threads);
        assert_eq!(bits(&one.raster.image), bits(&other.raster.image));
        assert_eq!(
            bits(&one.raster.final_transmittance),
            bits(&other.raster.final_transmittance)
        );
        assert_eq!(one.raster.n_contrib, other.raster.n_contrib);
        let og = &other.projected_grads;
        assert_eq!(bits(&pg.grad_opacities), bits(&og.grad_opacities));
        assert_eq!(
            bits(pg.grad_means2d.as_flattened()),
            bits(og.grad_means2d.as_flattened())
        );
        assert_eq!(
            bits(pg.grad_conics.as_flattened()),
            bits(og.grad_conics.as_flattened())
        );
        assert_eq!(
            bits(pg.grad_colors.as_flattened()),
            bits(og.grad_colors.as_flattened())
        );
    }
}

#[test]
fn no_gaussians_render_the_background() {
    let g = Gaussians::<f32>::new(0);
    let cam = test_camera(33, 20);
    let mut settings = RenderSettings::new(0);
    settings.background = [0.1, 0.2, 0.3];
    let pass = forward(&g, &cam, &settings);
    for p in pass.raster.image.chunks(3) {
        assert_eq!(p, [0.1, 0.2, 0.3]);
    }
    assert!(pass.raster.final_transmittance.iter().all(|&t| t == 1.0));
}

fn one(mean: [f64; 3], log_scale: [f64; 3], rotation: [f64; 4], opacity: f64) -> Gaussians<f64> {
    let mut g = Gaussians::new(0);
    g.push(
        mean,
        log_scale,
        rotation,
        logit(opacity),
        [1.0, 1.0, 1.0],
        &[],
    );
    g
}

#[test]
fn culling_near_plane_outside_degenerate_and_nan() {
    let cam = test_camera(64, 64);
    let settings = RenderSettings::new(0);
    let visible = |g: Gaussians<f64>| forward(&g, &cam, &settings).projected.radii[0] > 0;
    assert!(visible(one([0.0; 3], [-2.0; 3], [1.0, 0.0, 0.0, 0.0], 0.5)));
    // Behind the camera (camera at z = -4 looking towards +z), and just before the near plane.
    assert!(!visible(one(
        [0.0, 0.0, -6.0],
        [-2.0; 3],
        [1.0, 0.0, 0.0, 0.0],
        0.5
    )));
    let cam_z = cam.center()[2];
    assert!(!visible(one(
        [0.4, -0.3, cam_z + 0.19],
        [-2.0; 3],
        [1.0, 0.0, 0.0, 0.0],
        0.5
    )));
    // Far outside the image.
    assert!(!visible(one(
        [30.0, 0.0, 0.0],
        [-2.0; 3],
        [1.0, 0.0, 0.0, 0.0],
        0.5
    )));
    // Zero quaternion and NaN mean: culled, not propagated.
    assert!(!visible(one([0.0; 3], [-2.0; 3], [0.0; 4], 0.5)));
    assert!(!visible(one(
        [f64::NAN, 0.0, 0.0],
        [-2.0; 3],
        [1.0, 0.0, 0.0, 0.0],
        0.5
    )));
    assert!(!visible(one(
        [0.0; 3],
        [f64::INFINITY; 3],
        [1.0, 0.0, 0.0, 0.0],
        0.5
    )));
    // Zero scale still renders as the 0.3 px dilation.
    assert!(visible(one(
        [0.0; 3],
        [f64::NEG_INFINITY; 3],
        [1.0, 0.0, 0.0, 0.0],
        0.5
    )));
}

#[test]
fn a_gaussian_covering_no_pixel_changes_nothing() {
    let cam = test_camera(48, 40);
    let settings = RenderSettings::new(3);
    let base = stress_scene(3, 3);
    let mut with_far = base.clone();
    let rest = vec![0.1; with_far.sh_rest_len()];
    with_far.push(
        [40.0, 40.0, 0.0],
        [-2.0; 3],
        [1.0, 0.0, 0.0, 0.0],
        2.0,
        [0.5; 3],
        &rest,
    );
    let a = forward(&base, &cam, &settings);
    let b = forward(&with_far, &cam, &settings);
    assert_eq!(a.raster.image, b.raster.image);
    assert_eq!(b.projected.radii[base.len()], 0);
    let weights = random_weights(2, 48 * 40 * 3);
    let (_, grads) = backward(&with_far, &cam, &settings, &b, &weights);
    assert_eq!(grads.means[base.len()], [0.0; 3]);
    assert!(grads.sh_rest[base.len() * base.sh_rest_len()..]
        .iter()
        .all(|&v| v == 0.0));
}

#[test]
fn radius_is_three_sigma_of_the_dilated_covariance() {
    // Isotropic sigma = 0.1 at depth 4 in front of a camera with fx = 100: sigma_px = 2.5 (+0.3 dilation).
    let mut cam = test_camera(64, 64);
    cam.fx = 100.0;
    cam.fy = 100.0;
    let center = cam.center();
    let forward_dir = cam.rotation[2];
    let mean = std::array::from_fn(|k| center[k] + 4.0 * forward_dir[k]);
    let g = one(mean, [0.1f64.ln(); 3], [1.0, 0.0, 0.0, 0.0], 0.5);
    let p = forward(&g, &cam, &RenderSettings::new(0)).projected;
    let var = 2.5f64 * 2.5 + 0.3;
    assert!((p.conics[0][0] - 1.0 / var).abs() < 1e-9 && p.conics[0][1].abs() < 1e-9);
    // lambda_max = var + sqrt(0.1) (the 0.1 floor inside the square root, as in the original).
    assert_eq!(
        p.radii[0],
        (3.0 * (var + 0.1f64.sqrt()).sqrt()).ceil() as u32
    );
    assert!((p.means2d[0][0] - cam.cx).abs() < 1e-9 && (p.depths[0] - 4.0).abs() < 1e-12);
}

/// The projection and the bin's ellipse test leave out of a Gaussian's 3-sigma square only tiles where
/// its alpha is under `alpha_min` at every pixel centre (so leaving them out changes no pixel), and they
/// do leave some out, the ellipse test beyond the rect. Checked in f32,
/// as the rasterizers test, on scenes with low opacities, large and elongated Gaussians, antialiased or
/// not.
#[test]
fn tiles_left_out_of_a_rect_hold_no_pixel_the_gaussian_reaches() {
    use splat_core::synthetic::{random_scene, RandomSceneOptions};
    use splat_core::{TileGrid, TileRect};
    use splat_render::project::{project, radius_of};
    use splat_render::rasterize_fwd::gaussian_power;
    use splat_render::Projected;
    let (w, h) = (120, 90);
    let cam = test_camera(w, h);
    let grid = TileGrid::new(w, h);
    let settings = RenderSettings::new(1);
    let alpha_min = settings.cutoffs.alpha_min as f32;
    let (mut kept, mut left_out, mut in_rect_left_out) = (0usize, 0usize, 0usize);
    for (seed, antialiased) in [(1, false), (2, true), (3, false)] {
        let mut g = random_scene(
            seed,
            &RandomSceneOptions {
                count: 400,
                sh_degree: 1,
                log_scale_range: (-3.5, 0.0),
                opacity_range: (0.001, 0.99),
                extent: 2.0,
            },
        )
        .cast::<f32>();
        g.antialiased = antialiased;
        let mut p = Projected::default();
        project(&g, &cam, &settings, &mut p);
        for i in 0..g.len() {
            if p.radii[i] == 0 {
                continue;
            }
            let [u, v] = p.means2d[i];
            // The rect before the cull: the 3-sigma square (the conic's inverse is the covariance).
            let [a, b, c] = p.conics[i].map(|x| x as f64);
            let det = a * c - b * b;
            let cov = [c / det, -b / det, a / det];
            let radius = radius_of(cov, cov[0] * cov[2] - cov[1] * cov[1]);
            let full = TileRect::around(u as f64, v as f64, radius, &grid);
            let listed: Vec<(u32, u32)> = p.tiles(i).collect();
            for ty in full.y0..full.y1 {
                for tx in full.x0..full.x1 {
                    if listed.contains(&(tx, ty)) {
                        kept += 1;
                        continue;
                    }
                    left_out += 1;
                    in_rect_left_out += usize::from(p.tile_rects[i].contains(tx, ty));
                    let (x0, y0, x1, y1) = grid.tile_pixels((ty * grid.tiles_x + tx) as usize);
                    for py in y0..y1 {
                        for px in x0..x1 {
                            let d = [u - (px as f32 + 0.5), v - (py as f32 + 0.5)];
                            let alpha = p.opacities[i] * gaussian_power(p.conics[i], d).exp();
                            assert!(
                                alpha < alpha_min,
                                "Gaussian {i} reaches alpha {alpha} at ({px}, {py}) of tile ({tx}, {ty}), left out of {:?}",
                                p.tile_rects[i]
                            );
                        }
                    }
                }
            }
        }
    }
    // The cull removes a share of the 3-sigma squares' tiles, the ellipse test a share of the rects'
    // (seen: 4,130 of 17,786, 1,253 of them in the rects).
    assert!(
        left_out * 10 > kept && in_rect_left_out * 20 > kept,
        "{left_out} tiles left out ({in_rect_left_out} in the rects), {kept} kept"
    );
}
