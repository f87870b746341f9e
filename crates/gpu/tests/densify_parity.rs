//! Densification statistics on the GPU against `view_stats` + `apply_stats` over two views.

mod common;

use rand::{Rng, SeedableRng};
use splat_core::synthetic::{random_scene, RandomSceneOptions};
use splat_core::Camera;
use splat_gpu::GpuDensifyStats;
use splat_render::{project, Projected, ProjectedGrads, RenderSettings};
use splat_train::densify::view_stats;

#[test]
fn densify_stats_match_the_cpu() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let stats = GpuDensifyStats::new(&ctx);
    let g = random_scene(
        5,
        &RandomSceneOptions {
            count: 4000,
            extent: 2.5,
            ..Default::default()
        },
    )
    .cast::<f32>();
    let n = g.len();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let (mut acc_cpu, mut cnt_cpu, mut rad_cpu) =
        (vec![0.0f32; n], vec![0.0f32; n], vec![0.0f32; n]);
    let (mut acc_gpu, mut cnt_gpu, mut rad_gpu) =
        (vec![0.0f32; n], vec![0.0f32; n], vec![0.0f32; n]);
    for (eye, w, h) in [
        ([0.3, -0.2, -3.0], 160u32, 120u32),
        ([2.0, 0.5, -2.5], 200, 90),
    ] {
        let cam = Camera::look_at(eye, [0.0; 3], [0.0, -1.0, 0.0], 60.0, w, h);
        let mut p = Projected::default();
        project::project(&g, &cam, &RenderSettings::new(3), &mut p);
        let mut pg = ProjectedGrads::default();
        pg.reset(n);
        for m in pg.grad_means2d.iter_mut() {
            *m = [rng.random_range(-1e-4..1e-4), rng.random_range(-1e-4..1e-4)];
        }
        // One-view steps: per-step buffers start at zero and are added into the running ones.
        let (mut norms, mut counts, mut radii) =
            (vec![0.0f32; n], vec![0.0f32; n], vec![0.0f32; n]);
        view_stats(&p, &pg, false, w, h, &mut norms, &mut counts, &mut radii);
        for i in 0..n {
            acc_cpu[i] += norms[i];
            cnt_cpu[i] += counts[i];
            rad_cpu[i] = rad_cpu[i].max(radii[i]);
        }
        stats
            .accumulate(
                &ctx,
                &p,
                &pg,
                w,
                h,
                &mut acc_gpu,
                &mut cnt_gpu,
                &mut rad_gpu,
            )
            .expect("GPU stats");
    }
    assert_eq!(cnt_gpu, cnt_cpu);
    assert_eq!(rad_gpu, rad_cpu);
    assert!(cnt_cpu.contains(&2.0), "no Gaussian seen twice");
    for i in 0..n {
        let (a, b) = (acc_gpu[i], acc_cpu[i]);
        assert!((a - b).abs() <= 1e-6 * b.abs(), "{i}: gpu {a} vs cpu {b}");
    }
}
