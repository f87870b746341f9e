//! Scenes and comparisons shared by the format tests.

use rand::{Rng, SeedableRng};
use splat_core::Gaussians;
use splat_io::formats::quant::unit_quat;

/// A scene whose values reach the edges of every format's range.
pub fn extreme_scene(seed: u64, degree: usize, n: usize) -> Gaussians<f32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut g = Gaussians::new(degree);
    let rest_len = g.sh_rest_len();
    for i in 0..n {
        let far = i % 17 == 3;
        let mean = std::array::from_fn(|_| {
            let v: f32 = rng.random_range(-5.0..5.0);
            if far {
                v * 300.0
            } else if i % 13 == 1 {
                v * 1e-3
            } else {
                v
            }
        });
        let log_scale = std::array::from_fn(|_| match i % 11 {
            0 => rng.random_range(-25.0..-15.0),
            1 => rng.random_range(3.0..8.0),
            _ => rng.random_range(-8.0..0.5),
        });
        let rotation = if i % 19 == 5 {
            [0.0; 4]
        } else {
            std::array::from_fn(|_| rng.random_range(-3.0..3.0))
        };
        let opacity = match i % 7 {
            0 => rng.random_range(-16.0..-9.0),
            1 => rng.random_range(9.0..16.0),
            _ => rng.random_range(-4.0..4.0),
        };
        let dc = std::array::from_fn(|_| rng.random_range(-2.5..2.5));
        let rest: Vec<f32> = (0..rest_len)
            .map(|_| {
                if i % 23 == 2 {
                    rng.random_range(-6.0..6.0)
                } else {
                    rng.random_range(-0.6..0.6)
                }
            })
            .collect();
        g.push(mean, log_scale, rotation, opacity, dc, &rest);
    }
    g
}

/// Largest |a - b| over components, after turning `b` to the same hemisphere as `a`.
pub fn quat_error(a: [f32; 4], b: [f32; 4]) -> f64 {
    let (a, b) = (unit_quat(a), unit_quat(b));
    let dot: f64 = (0..4).map(|k| a[k] * b[k]).sum();
    let s = if dot < 0.0 { -1.0 } else { 1.0 };
    (0..4).map(|k| (a[k] - s * b[k]).abs()).fold(0.0, f64::max)
}
