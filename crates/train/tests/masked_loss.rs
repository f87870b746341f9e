//! The loss over a mask's kept pixels: exact gradients (finite differences in f64), nothing from the
//! left-out pixels, and the unmasked loss when the mask keeps everything.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use splat_train::loss::{loss_grad_and_psnr, loss_grad_and_psnr_masked, SsimScratch, LAMBDA_DSSIM};

/// A render, its target (apart by a margin everywhere so |x - y| is differentiable) and a mask with a
/// left-out disc and some scattered left-out pixels.
fn case(w: usize, h: usize, seed: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let target: Vec<f64> = (0..w * h * 3).map(|_| rng.random_range(0.1..0.9)).collect();
    let render = target
        .iter()
        .map(|&t| t + rng.random_range(0.05..0.2) * if rng.random() { 1.0 } else { -1.0 })
        .collect();
    let mask = (0..w * h)
        .map(|i| {
            let (x, y) = (
                (i % w) as f64 - 0.3 * w as f64,
                (i / w) as f64 - 0.5 * h as f64,
            );
            let out = x * x + y * y < 30.0 || rng.random_range(0.0..1.0) < 0.05;
            if out {
                0.0
            } else {
                1.0
            }
        })
        .collect();
    (render, target, mask)
}

fn masked(r: &[f64], t: &[f64], m: &[f64], w: usize, h: usize, g: &mut Vec<f64>) -> f64 {
    let mut s = SsimScratch::default();
    loss_grad_and_psnr_masked(r, t, Some(m), w, h, LAMBDA_DSSIM, &mut s, g)
        .0
        .loss
}

#[test]
fn masked_loss_gradient_matches_finite_differences() {
    let (w, h) = (19, 35);
    let (render, target, mask) = case(w, h, 5);
    let mut grad = Vec::new();
    masked(&render, &target, &mask, w, h, &mut grad);
    let step = 1e-6;
    let mut scratch = Vec::new();
    let mut worst = 0.0f64;
    for i in 0..render.len() {
        let mut p = render.clone();
        p[i] += step;
        let lp = masked(&p, &target, &mask, w, h, &mut scratch);
        p[i] -= 2.0 * step;
        let lm = masked(&p, &target, &mask, w, h, &mut scratch);
        let fd = (lp - lm) / (2.0 * step);
        let err = ((fd - grad[i]).abs() - 1e-10).max(0.0) / fd.abs().max(grad[i].abs()).max(1e-30);
        assert!(err <= 1e-6, "value {i}: analytic {} vs fd {fd}", grad[i]);
        worst = worst.max(err);
    }
    eprintln!("masked loss gradient: worst relative error {worst:.2e}");
}

#[test]
fn left_out_pixels_change_nothing_and_get_no_gradient() {
    let (w, h) = (40, 33);
    let (render, target, mask) = case(w, h, 6);
    let mut g0 = Vec::new();
    let mut s = SsimScratch::default();
    let (v0, p0) = loss_grad_and_psnr_masked(
        &render,
        &target,
        Some(&mask),
        w,
        h,
        LAMBDA_DSSIM,
        &mut s,
        &mut g0,
    );
    // Anything at all in the left-out pixels of either image.
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let (mut r2, mut t2) = (render.clone(), target.clone());
    for (i, &k) in mask.iter().enumerate() {
        if k == 0.0 {
            for c in 0..3 {
                r2[i * 3 + c] = rng.random_range(-1.0..2.0);
                t2[i * 3 + c] = rng.random_range(0.0..1.0);
            }
        }
    }
    let mut g1 = Vec::new();
    let (v1, p1) =
        loss_grad_and_psnr_masked(&r2, &t2, Some(&mask), w, h, LAMBDA_DSSIM, &mut s, &mut g1);
    assert_eq!((v0, p0), (v1, p1));
    assert_eq!(g0, g1);
    for (i, &k) in mask.iter().enumerate() {
        if k == 0.0 {
            assert_eq!(&g0[i * 3..i * 3 + 3], &[0.0; 3], "pixel {i}");
        }
    }
    // The PSNR is over the kept values only.
    let (mut se, mut n) = (0.0, 0.0);
    for (i, &k) in mask.iter().enumerate() {
        for c in 0..3 {
            let d = render[i * 3 + c].clamp(0.0, 1.0) - target[i * 3 + c];
            se += k * d * d;
            n += k;
        }
    }
    assert!((p0 - (-10.0 * (se / n).log10())).abs() < 1e-9);
    // A mask that keeps nothing: no loss, no gradient.
    let none = vec![0.0; w * h];
    let (v, _) =
        loss_grad_and_psnr_masked(&render, &target, Some(&none), w, h, 0.2, &mut s, &mut g1);
    assert_eq!(v.loss, 0.0);
    assert!(g1.iter().all(|&g| g == 0.0));
}

#[test]
fn a_mask_that_keeps_everything_is_no_mask() {
    let (w, h) = (45, 38);
    let (render, target, _) = case(w, h, 7);
    let (r, t): (Vec<f32>, Vec<f32>) = render
        .iter()
        .zip(&target)
        .map(|(&a, &b)| (a as f32, b as f32))
        .unzip();
    let ones = vec![1.0f32; w * h];
    let mut s = SsimScratch::default();
    let (mut g0, mut g1) = (Vec::new(), Vec::new());
    let a = loss_grad_and_psnr(&r, &t, w, h, LAMBDA_DSSIM, &mut s, &mut g0);
    let b = loss_grad_and_psnr_masked(&r, &t, Some(&ones), w, h, LAMBDA_DSSIM, &mut s, &mut g1);
    assert_eq!(a, b);
    assert_eq!(g0, g1);
}
