//! The loss gradient against central finite differences in f64 (relative error <= 1e-6 plus 1e-10
//! absolute for rounding), and SSIM sanity checks.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use splat_train::loss::{loss_and_grad, loss_grad_and_psnr, psnr, ssim, SsimScratch, LAMBDA_DSSIM};

fn random_image(rng: &mut ChaCha8Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| rng.random_range(0.0..1.0)).collect()
}

#[test]
fn loss_gradient_matches_finite_differences() {
    // Wider than the window, and taller than one band of rows (32): edge effects and a band seam.
    let (w, h) = (17, 37);
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

/// SSIM straight from its definition: an explicit 11 x 11 window per pixel (zero padding), in f64.
fn ssim_by_definition(a: &[f64], b: &[f64], w: usize, h: usize) -> f64 {
    let taps = splat_train::loss::gaussian_taps::<f64>();
    let (c1, c2) = (splat_train::loss::SSIM_C1, splat_train::loss::SSIM_C2);
    let mut total = 0.0;
    for ch in 0..3 {
        for py in 0..h {
            for px in 0..w {
                let (mut mx, mut my, mut exx, mut eyy, mut exy) = (0.0, 0.0, 0.0, 0.0, 0.0);
                for ky in 0..11 {
                    for kx in 0..11 {
                        let (sx, sy) =
                            (px as isize + kx as isize - 5, py as isize + ky as isize - 5);
                        if sx < 0 || sy < 0 || sx >= w as isize || sy >= h as isize {
                            continue;
                        }
                        let i = (sy as usize * w + sx as usize) * 3 + ch;
                        let t = taps[kx] * taps[ky];
                        let (x, y) = (a[i], b[i]);
                        mx += t * x;
                        my += t * y;
                        exx += t * x * x;
                        eyy += t * y * y;
                        exy += t * x * y;
                    }
                }
                let (sxx, syy, sxy) = (exx - mx * mx, eyy - my * my, exy - mx * my);
                total += (2.0 * mx * my + c1) * (2.0 * sxy + c2)
                    / ((mx * mx + my * my + c1) * (sxx + syy + c2));
            }
        }
    }
    total / (w * h * 3) as f64
}

#[test]
fn parallel_ssim_matches_the_definition_and_any_thread_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    // Odd sizes: partial row chunks, narrow images (window wider than the image).
    for (w, h) in [(37, 23), (5, 40), (300, 70)] {
        let a = random_image(&mut rng, w * h * 3);
        let b = random_image(&mut rng, w * h * 3);
        let fast = ssim(&a, &b, w, h);
        let def = ssim_by_definition(&a, &b, w, h);
        assert!((fast - def).abs() < 1e-12, "{w} x {h}: {fast} vs {def}");
        // Same bits on one thread as on the default pool (f32, the training type).
        let af: Vec<f32> = a.iter().map(|&v| v as f32).collect();
        let bf: Vec<f32> = b.iter().map(|&v| v as f32).collect();
        let run = || {
            let mut s = SsimScratch::default();
            let mut g = Vec::new();
            let v = loss_and_grad(&af, &bf, w, h, LAMBDA_DSSIM, &mut s, &mut g);
            (
                v.loss.to_bits(),
                g.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            )
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert!(
            pool.install(run) == run(),
            "{w} x {h}: thread count changed the result"
        );
    }
}

/// The training loop takes its PSNR from the loss pass (summed per row): it must be `psnr`'s, render
/// clamped to [0, 1] included, and leave the loss and gradient as `loss_and_grad` gives them.
#[test]
fn psnr_from_the_loss_pass_matches_psnr() {
    let (w, h) = (23, 41);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let target: Vec<f32> = (0..w * h * 3).map(|_| rng.random_range(0.0..1.0)).collect();
    // Some values outside [0, 1]: the clamp matters.
    let render: Vec<f32> = (0..w * h * 3)
        .map(|_| rng.random_range(-0.2..1.2))
        .collect();
    let mut scratch = SsimScratch::default();
    let (mut g1, mut g2) = (Vec::new(), Vec::new());
    let (value, p) = loss_grad_and_psnr(&render, &target, w, h, 0.2, &mut scratch, &mut g1);
    let expected = psnr(&render, &target);
    assert!(
        ((p - expected) / expected).abs() < 1e-12,
        "psnr {p} vs {expected}"
    );
    let plain = loss_and_grad(&render, &target, w, h, 0.2, &mut scratch, &mut g2);
    assert_eq!(value, plain);
    assert_eq!(g1, g2);
    // A perfect render: infinite PSNR, as `psnr` says.
    let (_, p) = loss_grad_and_psnr(&target, &target, w, h, 0.2, &mut scratch, &mut g1);
    assert_eq!(p, f64::INFINITY);
}
