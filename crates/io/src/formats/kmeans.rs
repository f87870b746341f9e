//! k-means for SOG's SH palette: k-means++ seeding and Lloyd's iterations on a seeded sample, then one assignment of every
//! vector. Deterministic: the sample comes from a fixed-seed generator, assignments are independent
//! per vector (parallel without changing bits), and centroid sums run in index order in f64.

use rand::seq::index::sample;
use rand::SeedableRng;
use rayon::prelude::*;

/// The palette of `k` centroids (row-major, `dim` floats each) and each vector's label.
pub struct Palette {
    pub centroids: Vec<f32>,
    pub labels: Vec<u32>,
}

/// Clusters `n = data.len() / dim` vectors into at most `k` centroids. With `n <= k` every vector
/// is its own centroid (exact).
pub fn cluster(data: &[f32], dim: usize, k: usize, iterations: usize) -> Palette {
    let n = data.len().checked_div(dim).unwrap_or(0);
    if n <= k {
        return Palette {
            centroids: data.to_vec(),
            labels: (0..n as u32).collect(),
        };
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x5060);
    let fit_n = n.min(4 * k);
    let mut fit: Vec<usize> = sample(&mut rng, n, fit_n).into_vec();
    fit.sort_unstable();
    let fit_data: Vec<f32> = fit
        .iter()
        .flat_map(|&i| data[i * dim..(i + 1) * dim].iter().copied())
        .collect();
    let mut centroids = plus_plus(&fit_data, dim, k, &mut rng);
    for _ in 0..iterations {
        let labels = assign(&fit_data, dim, &centroids);
        let mut sums = vec![0.0f64; k * dim];
        let mut counts = vec![0usize; k];
        for (j, &l) in labels.iter().enumerate() {
            let l = l as usize;
            counts[l] += 1;
            for d in 0..dim {
                sums[l * dim + d] += fit_data[j * dim + d] as f64;
            }
        }
        for c in 0..k {
            // An empty cluster keeps its centroid.
            if counts[c] > 0 {
                for d in 0..dim {
                    centroids[c * dim + d] = (sums[c * dim + d] / counts[c] as f64) as f32;
                }
            }
        }
    }
    let labels = assign(data, dim, &centroids);
    Palette { centroids, labels }
}

/// k-means++ seeding: each next centroid drawn with probability proportional to its squared
/// distance from the nearest one chosen so far.
fn plus_plus(data: &[f32], dim: usize, k: usize, rng: &mut impl rand::Rng) -> Vec<f32> {
    let n = data.len() / dim;
    let first = rng.random_range(0..n);
    let mut centroids: Vec<f32> = data[first * dim..(first + 1) * dim].to_vec();
    let dist =
        |x: &[f32], c: &[f32]| -> f32 { x.iter().zip(c).map(|(a, b)| (a - b) * (a - b)).sum() };
    let mut nearest: Vec<f32> = data
        .par_chunks_exact(dim)
        .map(|x| dist(x, &centroids))
        .collect();
    while centroids.len() < k * dim {
        let total: f64 = nearest.iter().map(|&d| d as f64).sum();
        let pick = if total > 0.0 {
            let mut t = rng.random::<f64>() * total;
            nearest
                .iter()
                .position(|&d| {
                    t -= d as f64;
                    t < 0.0
                })
                .unwrap_or(n - 1)
        } else {
            rng.random_range(0..n)
        };
        let c = data[pick * dim..(pick + 1) * dim].to_vec();
        nearest
            .par_iter_mut()
            .zip(data.par_chunks_exact(dim))
            .for_each(|(d, x)| *d = d.min(dist(x, &c)));
        centroids.extend_from_slice(&c);
    }
    centroids
}

/// Centroids in blocks of [`LANES`], dimension-major inside a block, so that the distances to a
/// block's centroids are independent lanes the compiler vectorizes.
const LANES: usize = 8;

/// The nearest centroid of each vector (ties to the lower index).
fn assign(data: &[f32], dim: usize, centroids: &[f32]) -> Vec<u32> {
    let k = centroids.len() / dim;
    let blocks = k.div_ceil(LANES);
    let mut packed = vec![0.0f32; blocks * dim * LANES];
    // Padding lanes get an infinite norm: never nearest.
    let mut norms = vec![f32::INFINITY; blocks * LANES];
    for (c, cen) in centroids.chunks_exact(dim).enumerate() {
        let (b, l) = (c / LANES, c % LANES);
        for d in 0..dim {
            packed[(b * dim + d) * LANES + l] = cen[d];
        }
        norms[c] = cen.iter().map(|v| v * v).sum();
    }
    data.par_chunks_exact(dim)
        .map(|x| {
            let mut best = (f32::INFINITY, 0u32);
            for b in 0..blocks {
                let mut dot = [0.0f32; LANES];
                for d in 0..dim {
                    let row = &packed[(b * dim + d) * LANES..][..LANES];
                    for l in 0..LANES {
                        dot[l] += x[d] * row[l];
                    }
                }
                for l in 0..LANES {
                    let dist = norms[b * LANES + l] - 2.0 * dot[l];
                    if dist < best.0 {
                        best = (dist, (b * LANES + l) as u32);
                    }
                }
            }
            best.1
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separated_clusters_are_found_and_small_sets_are_exact() {
        // Three tight blobs in 2-D, 300 points.
        let centres = [[0.0f32, 0.0], [5.0, 5.0], [-5.0, 5.0]];
        let data: Vec<f32> = (0..300)
            .flat_map(|i| {
                let c = centres[i % 3];
                let e = (i as f32 * 0.618).fract() * 0.1;
                [c[0] + e, c[1] - e]
            })
            .collect();
        let p = cluster(&data, 2, 3, 10);
        for i in 0..300 {
            let c = &p.centroids[p.labels[i] as usize * 2..][..2];
            let x = &data[i * 2..i * 2 + 2];
            assert!((c[0] - x[0]).abs() < 0.2 && (c[1] - x[1]).abs() < 0.2);
        }
        let small = cluster(&data[..20], 2, 16, 10);
        assert_eq!(small.centroids, data[..20].to_vec());
        // Same input, same bits.
        let again = cluster(&data, 2, 3, 10);
        assert_eq!(again.labels, p.labels);
        assert_eq!(again.centroids, p.centroids);
    }
}
