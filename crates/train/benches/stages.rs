//! The training stages outside the renderer: loss (L1 + D-SSIM with its gradient) at 504 x 378 and Adam
//! over the parameters of 10,000 Gaussians at SH degree 3: `cargo bench -p splat-train`.

use divan::Bencher;
use splat_train::adam::AdamState;
use splat_train::loss::{loss_and_grad, SsimScratch, LAMBDA_DSSIM};

fn main() {
    divan::main();
}

fn image(seed: u32, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32 / 16_777_216.0
        })
        .collect()
}

#[divan::bench]
fn loss(bencher: Bencher) {
    let (w, h) = (504, 378);
    let render = image(1, w * h * 3);
    let target = image(2, w * h * 3);
    let mut scratch = SsimScratch::default();
    let mut grad = Vec::new();
    bencher.bench_local(|| {
        loss_and_grad(
            &render,
            &target,
            w,
            h,
            LAMBDA_DSSIM,
            &mut scratch,
            &mut grad,
        )
    });
}

#[divan::bench]
fn adam(bencher: Bencher) {
    let n = 10_000 * 59;
    let mut params = image(3, n);
    let grads = image(4, n);
    let mut state = AdamState::zeros(n);
    bencher.bench_local(|| state.update(&mut params, &grads, 1e-3));
}
