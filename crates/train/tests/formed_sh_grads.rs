//! One-view steps leave the SH gradients out of project backward (`RenderSettings::sh_grads` off) and
//! Adam forms them from the colour gradients as it updates. That must give the same bits as storing
//! them: the other gradients unchanged, and the SH groups' parameters and moments after several Adam
//! steps identical, for every active SH degree, on both CPU backends.

use rand::{Rng, SeedableRng};
use splat_core::synthetic::{random_scene, RandomSceneOptions};
use splat_core::{Camera, Gaussians};
use splat_render::project::CameraParams;
use splat_render::sh::active_coeffs;
use splat_render::{Backend, Buffers, CpuBackend, ReferenceBackend, RenderSettings};
use splat_train::adam::{AdamState, ShGradSource, BETA1, BETA2};

fn scene() -> Gaussians<f32> {
    let mut g = random_scene(
        21,
        &RandomSceneOptions {
            count: 1500,
            sh_degree: 3,
            // Some behind the camera or off-screen (culled), large SH values (clamped channels).
            extent: 3.5,
            log_scale_range: (-4.0, -0.5),
            ..Default::default()
        },
    )
    .cast::<f32>();
    // Colours well below zero on some channels: clamped, their gradient masked.
    g.sh_dc
        .as_flattened_mut()
        .iter_mut()
        .for_each(|v| *v *= 6.0);
    g.sh_rest.iter_mut().for_each(|v| *v *= 3.0);
    g
}

fn pass(
    backend: &mut dyn Backend,
    g: &Gaussians<f32>,
    cam: &Camera,
    settings: &RenderSettings,
    weights: &[f32],
) -> Buffers {
    let mut buffers = Buffers::default();
    splat_render::render(backend, g, cam, settings, &mut buffers);
    splat_render::backward(backend, g, cam, settings, weights, &mut buffers);
    buffers
}

/// Bitwise equality, reporting the first difference.
fn same(a: &[f32], b: &[f32], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    if let Some(i) = (0..a.len()).find(|&i| a[i].to_bits() != b[i].to_bits()) {
        panic!("{what}[{i}]: {} vs {}", a[i], b[i]);
    }
}

#[test]
fn formed_sh_gradients_update_like_stored_ones() {
    let g = scene();
    let cam = Camera::look_at(
        [0.4, -0.3, -3.0],
        [0.0, 0.0, 0.0],
        [0.0, -1.0, 0.0],
        60.0,
        96,
        72,
    );
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
    let weights: Vec<f32> = (0..96 * 72 * 3)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let backends: [Box<dyn Fn() -> Box<dyn Backend>>; 2] = [
        Box::new(|| Box::new(ReferenceBackend)),
        Box::new(|| Box::new(CpuBackend::new())),
    ];
    for make in &backends {
        for degree in 0..=3 {
            let mut stored = RenderSettings::new(degree);
            stored.background = [0.2, 0.3, 0.4];
            let formed = RenderSettings {
                sh_grads: false,
                ..stored
            };
            let full = pass(make().as_mut(), &g, &cam, &stored, &weights);
            let lean = pass(make().as_mut(), &g, &cam, &formed, &weights);
            let name = make().name().to_string();
            assert!(lean.grads.sh_dc.is_empty() && lean.grads.sh_rest.is_empty());
            let ctx = format!("{name}, degree {degree}");
            let (f, l) = (&full.grads, &lean.grads);
            same(f.means.as_flattened(), l.means.as_flattened(), &ctx);
            same(
                f.log_scales.as_flattened(),
                l.log_scales.as_flattened(),
                &ctx,
            );
            same(f.rotations.as_flattened(), l.rotations.as_flattened(), &ctx);
            same(&f.opacity_logits, &l.opacity_logits, &ctx);

            let p = &lean.projected;
            let visible = p.radii.iter().filter(|&&r| r > 0).count();
            let clamped = (0..p.len())
                .filter(|&i| p.radii[i] > 0 && p.color_clamped[i].iter().any(|&c| c))
                .count();
            assert!(visible > 300 && visible < g.len(), "{visible} visible");
            assert!(clamped > 10, "{clamped} visible with a clamped channel");
            let nonzero = full.grads.sh_rest.iter().filter(|&&v| v != 0.0).count();
            assert_eq!(nonzero > 0, degree > 0, "degree {degree}: {nonzero}");

            let src = ShGradSource {
                means: &g.means,
                center: CameraParams::<f32>::new(&cam).center,
                coeffs: active_coeffs(degree, g.sh_degree),
                radii: &p.radii,
                clamped: &p.color_clamped,
                grad_colors: &lean.projected_grads.grad_colors,
            };
            let rest_len = g.sh_rest_len();
            let betas = (BETA1, BETA2);
            let seen: Vec<f32> = p.radii.iter().map(|&r| (r > 0) as u8 as f32).collect();
            // Dense Adam, and visible-only Adam (the stored gradient through `update_visible`).
            for mask in [None, Some(&seen[..])] {
                let ctx = format!("{ctx}, visible-only {}", mask.is_some());
                let (mut dc_a, mut dc_b) = (g.sh_dc.clone(), g.sh_dc.clone());
                let (mut rest_a, mut rest_b) = (g.sh_rest.clone(), g.sh_rest.clone());
                let mut adam = [
                    AdamState::zeros(3 * g.len()),
                    AdamState::zeros(3 * g.len()),
                    AdamState::zeros(rest_len * g.len()),
                    AdamState::zeros(rest_len * g.len()),
                ];
                let stored =
                    |s: &mut AdamState, p: &mut [f32], gr: &[f32], w: usize, lr: f64| match mask {
                        Some(seen) => s.update_visible(p, gr, w, lr, betas, seen),
                        None => s.update_with_betas(p, gr, lr, betas),
                    };
                // The same gradient three times: moments and bias corrections move each time.
                for _ in 0..3 {
                    let [dca, dcb, ra, rb] = &mut adam;
                    let dc_grads = full.grads.sh_dc.as_flattened();
                    stored(dca, dc_a.as_flattened_mut(), dc_grads, 3, 0.0025);
                    dcb.update_formed(dc_b.as_flattened_mut(), 3, 0.0025, betas, mask, &|i, o| {
                        src.dc(i, o)
                    });
                    stored(ra, &mut rest_a, &full.grads.sh_rest, rest_len, 0.000125);
                    rb.update_formed(&mut rest_b, rest_len, 0.000125, betas, mask, &|i, o| {
                        src.rest(i, o)
                    });
                }
                same(
                    dc_a.as_flattened(),
                    dc_b.as_flattened(),
                    &format!("{ctx}: dc"),
                );
                same(&rest_a, &rest_b, &format!("{ctx}: rest"));
                for (a, b) in [(&adam[0], &adam[1]), (&adam[2], &adam[3])] {
                    same(&a.m, &b.m, &format!("{ctx}: m"));
                    same(&a.v, &b.v, &format!("{ctx}: v"));
                    assert_eq!(a.step, b.step);
                }
                assert!(dc_a != g.sh_dc, "{ctx}: Adam moved no DC coefficient");
                assert_eq!(rest_a != g.sh_rest, degree > 0, "{ctx}: SH rest");
                // Unseen Gaussians: dense Adam leaves them too (zero gradient, zero moments); the
                // visible-only update must as well, with their moments still zero.
                let unseen = (0..g.len()).find(|&i| p.radii[i] == 0).unwrap();
                assert_eq!(dc_b[unseen], g.sh_dc[unseen], "{ctx}");
                assert_eq!(adam[1].m[3 * unseen], 0.0, "{ctx}");
            }
        }
    }
}
