//! Adam on the GPU against `splat_train::adam::AdamState` over several steps, with binding limits lowered
//! so the group is updated in chunks.

mod common;

use common::context;
use rand::{Rng, SeedableRng};
use splat_gpu::GpuAdam;
use splat_train::adam::{AdamState, BETA1, BETA2, EPS};

#[test]
fn adam_matches_the_cpu_update() {
    // 16 KiB bindings: 4,096 floats per chunk, so 50,000 values take 13 chunks.
    let Some(ctx) = context(|l| l.max_storage_buffer_binding_size = 16 * 1024) else {
        return;
    };
    let adam = GpuAdam::new(&ctx);
    let n = 50_000;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let start: Vec<f32> = (0..n).map(|_| rng.random_range(-2.0..2.0)).collect();
    let mut cpu_values = start.clone();
    let mut cpu = AdamState::zeros(n);
    let mut gpu_values = start;
    let (mut m, mut v) = (vec![0.0f32; n], vec![0.0f32; n]);
    for step in 1..=5u64 {
        let grads: Vec<f32> = (0..n)
            .map(|i| {
                if i % 11 == 0 {
                    0.0
                } else {
                    rng.random_range(-1.0..1.0)
                }
            })
            .collect();
        cpu.update_with_betas(&mut cpu_values, &grads, 0.01, (BETA1, BETA2));
        adam.update(
            &ctx,
            &mut gpu_values,
            &grads,
            &mut m,
            &mut v,
            0.01,
            (BETA1, BETA2),
            EPS,
            step,
        )
        .expect("GPU Adam");
    }
    for i in 0..n {
        let (a, b) = (gpu_values[i], cpu_values[i]);
        assert!(
            (a - b).abs() <= 1e-6 * b.abs().max(1.0),
            "value {i}: gpu {a} vs cpu {b}"
        );
        // m = b1 m + (1 - b1) g can cancel: its rounding is on the scale of the terms (|g| <= 1, so
        // 0.1), whichever way a GPU contracts the products (NVIDIA fuses them).
        assert!(
            (m[i] - cpu.m[i]).abs() <= 1e-6 * cpu.m[i].abs().max(0.1),
            "m {i}: gpu {} vs cpu {}",
            m[i],
            cpu.m[i]
        );
        assert!(
            (v[i] - cpu.v[i]).abs() <= 1e-6 * cpu.v[i].abs().max(1e-6),
            "v {i}: gpu {} vs cpu {}",
            v[i],
            cpu.v[i]
        );
    }
}
