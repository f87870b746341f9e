//! A whole forward and backward through [`GpuBackend`] (every stage on the GPU) against the reference
//! backend: the image within 1e-4, every parameter gradient within 1e-3 relative.

mod common;

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use splat_core::synthetic::{random_scene, RandomSceneOptions};
use splat_core::Camera;
use splat_gpu::GpuBackend;
use splat_render::{Backend, Buffers, ReferenceBackend, RenderSettings};

fn run(
    backend: &mut dyn Backend,
    g: &splat_core::Gaussians,
    cam: &Camera,
    s: &RenderSettings,
    w: &[f32],
) -> Buffers {
    let mut b = Buffers::default();
    b.raster.resize(cam.width, cam.height);
    b.raster.poison();
    splat_render::render(backend, g, cam, s, &mut b);
    splat_render::backward(backend, g, cam, s, w, &mut b);
    b
}

#[test]
fn whole_step_matches_reference() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let mut gpu = GpuBackend::new(Arc::new(ctx));
    let g = random_scene(
        21,
        &RandomSceneOptions {
            count: 3000,
            sh_degree: 3,
            extent: 1.5,
            log_scale_range: (-4.0, -1.5),
            ..Default::default()
        },
    )
    .cast::<f32>();
    let cam = Camera::look_at(
        [0.3, -0.2, -3.0],
        [0.0; 3],
        [0.0, -1.0, 0.0],
        60.0,
        150,
        110,
    );
    let mut settings = RenderSettings::new(3);
    settings.background = [0.1, 0.2, 0.3];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
    let weights: Vec<f32> = (0..150 * 110 * 3)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let r = run(&mut ReferenceBackend, &g, &cam, &settings, &weights);
    let f = run(&mut gpu, &g, &cam, &settings, &weights);
    let di = r
        .raster
        .image
        .iter()
        .zip(&f.raster.image)
        .map(|(a, b)| (a - b).abs())
        .fold(
            0.0f32,
            |m, d| if d.is_nan() { f32::INFINITY } else { m.max(d) },
        );
    assert!(di <= 1e-4, "image max diff {di}");
    let groups = [
        (
            "means",
            f.grads.means.as_flattened(),
            r.grads.means.as_flattened(),
        ),
        (
            "log_scales",
            f.grads.log_scales.as_flattened(),
            r.grads.log_scales.as_flattened(),
        ),
        (
            "rotations",
            f.grads.rotations.as_flattened(),
            r.grads.rotations.as_flattened(),
        ),
        (
            "opacity_logits",
            &f.grads.opacity_logits[..],
            &r.grads.opacity_logits[..],
        ),
        (
            "sh_dc",
            f.grads.sh_dc.as_flattened(),
            r.grads.sh_dc.as_flattened(),
        ),
        ("sh_rest", &f.grads.sh_rest[..], &r.grads.sh_rest[..]),
    ];
    for (what, a, b) in groups {
        let scale = b.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        assert!(scale > 0.0, "{what}: all zero");
        let mut worst = 0.0f32;
        for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
            let tol = 1e-3 * x.abs().max(y.abs()) + 1e-5 * scale;
            assert!(
                (x - y).abs() <= tol,
                "{what}[{i}]: gpu {x} vs reference {y}"
            );
            worst = worst.max((x - y).abs() / tol);
        }
        eprintln!("{what}: largest difference {worst:.2} of the tolerance");
    }
}
