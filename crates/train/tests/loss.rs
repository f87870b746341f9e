//! The loss gradient against central finite differences in f64 (relative error <= 1e-6 plus 1e-10
//! absolute for rounding), and SSIM sanity checks.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use splat_train::loss::{loss_and_grad, ssim, SsimScratch, LAMBDA_DSSIM};

fn random_image(rng: &mut ChaCha8Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| rng.random_range(0.0..1.0)).collect()
}

#[test]
fn loss_gradient_matches_finite_differences() {
    let (w, h) = (17, 13); // larger than the window in one direction, edge effects everywhere
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let target = random_image(&mut rng, w * h * 3);
    // Keep render != target everywhere by a margin so |x - y| is differentiable at +-h.
    let render: Vec<f64> = target
        .iter()
        .map(|&t| {
            let d: f64 = rng.random_range(0.05..0.3);
            if rng.random::<bool>() {
                t + d
            } else {
                t - d
            }
        })
        .collect();
    let mut scratch = SsimScratch::default();
    let mut grad = Vec::new();
    let base = loss_and_grad(
        &render,
        &target,
        w,
        h,
        LAMBDA_DSSIM,
        &mut scratch,
        &mut grad,
    );
    assert!(base.ssim > -1.0 && base.ssim < 1.0);
    let step = 1e-6;
    let mut g2 = Vec::new();
    let mut worst = 0.0f64;
    for i in 0..render.len() {
        let mut p = render.clone();
        p[i] += step;
        let lp = loss_and_grad(&p, &target, w, h, LAMBDA_DSSIM, &mut scratch, &mut g2).loss;
        p[i] -= 2.0 * step;
        let lm = loss_and_grad(&p, &target, w, h, LAMBDA_DSSIM, &mut scratch, &mut g2).loss;
        let fd = (lp - lm) / (2.0 * step);
        let err = ((fd - grad[i]).abs() - 1e-10).max(0.0) / fd.abs().max(grad[i].abs());
        assert!(err <= 1e-6, "value {i}: analytic {} vs fd {fd}", grad[i]);
        worst = worst.max(err);
    }
    eprintln!("loss gradient: worst relative error {worst:.2e}");
}

#[test]
fn ssim_of_identical_images_is_one_and_drops_with_noise() {
    let (w, h) = (32, 24);
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let a: Vec<f32> = (0..w * h * 3).map(|_| rng.random_range(0.0..1.0)).collect();
    assert!((ssim(&a, &a, w, h) - 1.0).abs() < 1e-6);
    let noisy: Vec<f32> = a.iter().map(|&v| v + rng.random_range(-0.2..0.2)).collect();
    let s = ssim(&a, &noisy, w, h);
    assert!(s < 0.97 && s > 0.5, "{s}");
}
