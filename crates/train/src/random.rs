//! Stateless random numbers: a value is a pure function of the run's seed and a few counters (the step,
//! an index), computed in u32 arithmetic so that a GPU kernel computes the same (the WGSL twins are in
//! `crates/gpu/src/shaders/`). Nothing to carry in a checkpoint, no order dependence between threads or
//! devices, and the host and device trainers draw the same numbers.

use std::f32::consts::TAU;

/// A 32-bit integer hash with good avalanche (Wellons' "lowbias32").
pub fn mix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// The seed folded into 32 bits.
pub fn seed_word(seed: u64) -> u32 {
    mix32(seed as u32 ^ mix32((seed >> 32) as u32 ^ 0x9e37_79b9))
}

/// A 32-bit hash of `(seed, a, b, c)`.
pub fn hash(seed: u64, a: u32, b: u32, c: u32) -> u32 {
    mix32(seed_word(seed) ^ mix32(a ^ mix32(b ^ mix32(c))))
}

/// Uniform in (0, 1): the top 24 bits of `h`, centred in their interval (never 0, so `ln` is finite).
pub fn unit(h: u32) -> f32 {
    ((h >> 8) as f32 + 0.5) * (1.0 / 16_777_216.0)
}

/// A standard normal sample for `(seed, a, b, c)` by Box-Muller from two hashed uniforms; the cosine's
/// argument is kept in [-pi, pi], where GPU `cos` has its specified accuracy.
pub fn normal(seed: u64, a: u32, b: u32, c: u32) -> f32 {
    let u1 = unit(hash(seed, a, b, 2 * c));
    let u2 = unit(hash(seed, a, b, 2 * c + 1));
    -(-2.0 * u1.ln()).sqrt() * (TAU * (u2 - 0.5)).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_has_the_first_four_moments() {
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|i| normal(5, 1, i, 0) as f64).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let m = |p: i32| xs.iter().map(|x| (x - mean).powi(p)).sum::<f64>() / n as f64;
        let var = m(2);
        let skew = m(3) / var.powf(1.5);
        let kurt = m(4) / (var * var);
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.01, "variance {var}");
        assert!(skew.abs() < 0.03, "skewness {skew}");
        assert!((kurt - 3.0).abs() < 0.05, "kurtosis {kurt}");
        assert!(xs.iter().all(|x| x.is_finite()));
    }

    #[test]
    fn keys_are_independent() {
        assert_ne!(normal(1, 2, 3, 0), normal(1, 2, 3, 1));
        assert_ne!(normal(1, 2, 3, 0), normal(2, 2, 3, 0));
        assert_ne!(normal(1, 2, 3, 0), normal(1, 3, 3, 0));
        assert_eq!(normal(1, 2, 3, 0).to_bits(), normal(1, 2, 3, 0).to_bits());
    }
}
