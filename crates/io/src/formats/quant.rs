//! Pieces the compressed formats share: activations, quaternion normalization, a Morton order that
//! keeps neighbours together (chunked formats quantize within a chunk's box, so a chunk must be
//! compact), and a 256-entry 1-D codebook.

use splat_core::Gaussians;

/// `1 / (1 + e^-x)` in f64, the way every format stores opacity.
pub fn sigmoid(x: f32) -> f64 {
    1.0 / (1.0 + (-(x as f64)).exp())
}

/// The logit of a stored opacity, kept off the asymptotes so that 0 and 1 decode to finite logits.
pub fn logit(p: f64) -> f32 {
    let p = p.clamp(1e-6, 1.0 - 1e-6);
    (p / (1.0 - p)).ln() as f32
}

/// The unit quaternion `(w, x, y, z)` of a stored rotation; a zero or non-finite one is the identity.
pub fn unit_quat(q: [f32; 4]) -> [f64; 4] {
    let q = q.map(|v| v as f64);
    let n = q.iter().map(|v| v * v).sum::<f64>().sqrt();
    if !(n > 1e-30) || !n.is_finite() {
        return [1.0, 0.0, 0.0, 0.0];
    }
    q.map(|v| v / n)
}

/// `log(s)` of a stored linear scale; zero, negative and non-finite scales become the smallest
/// log-scale a 32-bit float holds, rather than `-inf` or NaN.
pub fn log_of_linear(s: f32) -> f32 {
    if s > f32::MIN_POSITIVE && s.is_finite() {
        s.ln()
    } else if s == f32::INFINITY {
        f32::MAX.ln()
    } else {
        f32::MIN_POSITIVE.ln()
    }
}

/// Rounds `t` in [0, 1] to an unsigned integer of `bits` bits.
pub fn unorm(t: f64, bits: u32) -> u32 {
    let top = ((1u64 << bits) - 1) as f64;
    (t * top + 0.5).floor().clamp(0.0, top) as u32
}

/// `(v - lo) / (hi - lo)` clamped to [0, 1]; 0 for an empty range.
pub fn normalize(v: f64, lo: f64, hi: f64) -> f64 {
    if !(hi - lo > 1e-12) {
        return 0.0;
    }
    ((v - lo) / (hi - lo)).clamp(0.0, 1.0)
}

/// The order that sorts the Gaussians along a 3-D Morton (Z-order) curve over their bounding box,
/// ties by index (so the order is deterministic).
pub fn morton_order(means: &[[f32; 3]]) -> Vec<u32> {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for m in means {
        for k in 0..3 {
            if m[k].is_finite() {
                lo[k] = lo[k].min(m[k]);
                hi[k] = hi[k].max(m[k]);
            }
        }
    }
    let spread = |v: u32| -> u64 {
        // 21 bits -> every third bit of 63.
        let mut x = v as u64 & 0x1f_ffff;
        x = (x | x << 32) & 0x1f00000000ffff;
        x = (x | x << 16) & 0x1f0000ff0000ff;
        x = (x | x << 8) & 0x100f00f00f00f00f;
        x = (x | x << 4) & 0x10c30c30c30c30c3;
        (x | x << 2) & 0x1249249249249249
    };
    let mut keyed: Vec<(u64, u32)> = means
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let q = |k: usize| unorm(normalize(m[k] as f64, lo[k] as f64, hi[k] as f64), 21);
            (
                spread(q(0)) | spread(q(1)) << 1 | spread(q(2)) << 2,
                i as u32,
            )
        })
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// The scene with Gaussian `order[j]` at place `j`.
pub fn permuted(g: &Gaussians<f32>, order: &[u32]) -> Gaussians<f32> {
    let mut out = Gaussians::new(g.sh_degree);
    out.antialiased = g.antialiased;
    for &i in order {
        let i = i as usize;
        out.push(
            g.means[i],
            g.log_scales[i],
            g.rotations[i],
            g.opacity_logits[i],
            g.sh_dc[i],
            g.sh_rest_of(i),
        );
    }
    out
}

/// A sorted codebook of at most 256 values fitted to `values` by 1-D k-means (Lloyd's iterations
/// from quantiles), with the smallest and largest value kept as its ends, so that every value lies
/// between two entries and quantizes within half their gap. Fewer distinct values than 256 are
/// kept exactly. Non-finite values are ignored.
pub fn fit_codebook(values: &[f32]) -> Vec<f32> {
    const K: usize = 256;
    let mut v: Vec<f32> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_unstable_by(f32::total_cmp);
    if v.is_empty() {
        return vec![0.0];
    }
    let mut distinct = v.clone();
    distinct.dedup();
    if distinct.len() <= K {
        return distinct;
    }
    let n = v.len();
    let prefix: Vec<f64> = std::iter::once(0.0)
        .chain(v.iter().scan(0.0f64, |s, &x| {
            *s += x as f64;
            Some(*s)
        }))
        .collect();
    let mut c: Vec<f64> = (0..K)
        .map(|k| v[((k as f64 + 0.5) / K as f64 * n as f64) as usize % n] as f64)
        .collect();
    for _ in 0..24 {
        c.sort_unstable_by(f64::total_cmp);
        c[0] = v[0] as f64;
        c[K - 1] = v[n - 1] as f64;
        // Cell k holds the values nearer to c[k] than to its neighbours.
        let bounds: Vec<usize> = (0..=K)
            .map(|k| match k {
                0 => 0,
                k if k == K => n,
                k => v.partition_point(|&x| (x as f64) < 0.5 * (c[k - 1] + c[k])),
            })
            .collect();
        for k in 1..K - 1 {
            let (a, b) = (bounds[k], bounds[k + 1]);
            if b > a {
                c[k] = (prefix[b] - prefix[a]) / (b - a) as f64;
            }
        }
    }
    let mut out: Vec<f32> = c.into_iter().map(|x| x as f32).collect();
    out.sort_unstable_by(f32::total_cmp);
    out[0] = v[0];
    out[K - 1] = v[n - 1];
    out
}

/// The index of the codebook entry nearest to `x` (the codebook is sorted).
pub fn nearest(codebook: &[f32], x: f32) -> u8 {
    let i = codebook.partition_point(|&c| c < x);
    let best = if i == 0 {
        0
    } else if i >= codebook.len() {
        codebook.len() - 1
    } else if (x - codebook[i - 1]) <= (codebook[i] - x) {
        i - 1
    } else {
        i
    };
    best as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn codebook_values_quantize_within_half_the_gap() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let values: Vec<f32> = (0..20_000)
            .map(|i| {
                let x: f32 = rng.random_range(-1.0..1.0);
                if i % 97 == 0 {
                    x * 40.0
                } else {
                    x * x * x
                }
            })
            .collect();
        let cb = fit_codebook(&values);
        assert_eq!(cb.len(), 256);
        assert!(cb.windows(2).all(|w| w[0] <= w[1]));
        for &x in &values {
            let q = cb[nearest(&cb, x) as usize];
            let i = cb.partition_point(|&c| c < x).clamp(1, 255);
            let gap = cb[i] - cb[i - 1];
            assert!((q - x).abs() <= 0.5 * gap + 1e-6, "{x} -> {q}");
        }
    }

    #[test]
    fn few_distinct_values_are_exact() {
        let values = [3.0f32, -1.0, 3.0, 0.5, f32::NAN];
        let cb = fit_codebook(&values);
        assert_eq!(cb, vec![-1.0, 0.5, 3.0]);
        for x in [3.0f32, -1.0, 0.5] {
            assert_eq!(cb[nearest(&cb, x) as usize], x);
        }
    }

    #[test]
    fn morton_order_is_a_permutation_that_groups_neighbours() {
        let means: Vec<[f32; 3]> = (0..64)
            .map(|i| [(i % 4) as f32, ((i / 4) % 4) as f32, (i / 16) as f32])
            .collect();
        let order = morton_order(&means);
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, (0..64).collect::<Vec<u32>>());
        // The first 8 form the 2x2x2 corner cube.
        for &i in &order[..8] {
            let m = means[i as usize];
            assert!(m.iter().all(|&c| c < 2.0), "{m:?}");
        }
    }
}
