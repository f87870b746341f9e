//! The GPU loss against `splat_train::loss::loss_and_grad` (f32): the loss value within 1e-5 and every
//! gradient value within 1e-4 of the largest one (the GPU sums taps in the same order but may fuse
//! multiply-adds).

mod common;

use rand::{Rng, SeedableRng};
use splat_gpu::GpuLoss;
use splat_train::loss::{loss_and_grad, SsimScratch, LAMBDA_DSSIM};

#[test]
fn loss_matches_the_cpu() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let loss = GpuLoss::new(&ctx);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
    // Odd sizes: partial workgroups; a narrow image (window wider than the image).
    for (w, h) in [(37usize, 23usize), (5, 40), (120, 70)] {
        let target: Vec<f32> = (0..w * h * 3).map(|_| rng.random_range(0.0..1.0)).collect();
        let render: Vec<f32> = target
            .iter()
            .map(|&t| (t + rng.random_range(-0.2..0.2)).clamp(0.0, 1.0))
            .collect();
        let mut g_cpu = Vec::new();
        let cpu = loss_and_grad(
            &render,
            &target,
            w,
            h,
            LAMBDA_DSSIM,
            &mut SsimScratch::default(),
            &mut g_cpu,
        );
        let mut g_gpu = Vec::new();
        let gpu = loss
            .loss_and_grad(&ctx, &render, &target, w, h, LAMBDA_DSSIM, &mut g_gpu)
            .expect("GPU loss");
        assert!(
            (gpu.loss - cpu.loss).abs() < 1e-5,
            "{w} x {h}: loss {} vs {}",
            gpu.loss,
            cpu.loss
        );
        assert!(
            (gpu.ssim - cpu.ssim).abs() < 1e-5,
            "{w} x {h}: ssim {} vs {}",
            gpu.ssim,
            cpu.ssim
        );
        assert!(
            (gpu.l1 - cpu.l1).abs() < 1e-6,
            "{w} x {h}: l1 {} vs {}",
            gpu.l1,
            cpu.l1
        );
        let scale = g_cpu.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        for (i, (a, b)) in g_gpu.iter().zip(&g_cpu).enumerate() {
            assert!(
                (a - b).abs() <= 1e-4 * scale,
                "{w} x {h}: grad[{i}] {a} vs {b}"
            );
        }
    }
}
