//! Initial Gaussians from a point cloud, as the original: SH DC from the point colour (rest 0), isotropic
//! log-scale `log(sqrt(mean squared distance to the 3 nearest neighbours))` (at least 1e-7 before the
//! square root), identity rotation, opacity 0.1.

use std::collections::HashMap;

use splat_core::sh::rgb_to_dc;
use splat_core::{logit, Gaussians};
use splat_io::dataset::Points;

/// Mean squared distance of each point to its `k` nearest other points, by a uniform grid search
/// (exact: shells are searched until no closer point can exist).
pub fn mean_sq_dist_knn(points: &[[f64; 3]], k: usize) -> Vec<f64> {
    let n = points.len();
    if n <= 1 {
        return vec![0.0; n];
    }
    let k = k.min(n - 1);
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for p in points {
        for a in 0..3 {
            lo[a] = lo[a].min(p[a]);
            hi[a] = hi[a].max(p[a]);
        }
    }
    let span: Vec<f64> = (0..3).map(|a| (hi[a] - lo[a]).max(1e-9)).collect();
    let volume = span.iter().product::<f64>();
    // About 2 points per cell on average; never fewer than 1/64 of the largest span per cell.
    let largest = span.iter().cloned().fold(0.0, f64::max);
    let cell = (2.0 * volume / n as f64)
        .cbrt()
        .max(largest / 1024.0)
        .max(1e-12);
    let key = |p: &[f64; 3]| -> [i64; 3] {
        std::array::from_fn(|a| ((p[a] - lo[a]) / cell).floor() as i64)
    };
    let mut grid: HashMap<[i64; 3], Vec<u32>> = HashMap::new();
    for (i, p) in points.iter().enumerate() {
        grid.entry(key(p)).or_default().push(i as u32);
    }
    let max_shell = (largest / cell).ceil() as i64 + 1;
    let mut out = vec![0.0; n];
    let mut best: Vec<f64> = Vec::with_capacity(k + 1);
    for (i, p) in points.iter().enumerate() {
        let c = key(p);
        best.clear();
        let mut r = 0i64;
        loop {
            for dx in -r..=r {
                for dy in -r..=r {
                    for dz in -r..=r {
                        if dx.abs().max(dy.abs()).max(dz.abs()) != r {
                            continue;
                        }
                        let Some(list) = grid.get(&[c[0] + dx, c[1] + dy, c[2] + dz]) else {
                            continue;
                        };
                        for &j in list {
                            if j as usize == i {
                                continue;
                            }
                            let q = &points[j as usize];
                            let d = (0..3).map(|a| (p[a] - q[a]).powi(2)).sum::<f64>();
                            if best.len() < k || d < best[k - 1] {
                                let pos = best.partition_point(|&b| b <= d);
                                best.insert(pos, d);
                                best.truncate(k);
                            }
                        }
                    }
                }
            }
            // Any point outside shells 0..=r is at least r * cell away.
            let reach = r as f64 * cell;
            if (best.len() == k && best[k - 1] <= reach * reach) || r > max_shell {
                break;
            }
            r += 1;
        }
        out[i] = best.iter().sum::<f64>() / best.len().max(1) as f64;
    }
    out
}

/// Gaussians of SH degree `sh_degree` at the points.
pub fn gaussians_from_points(points: &Points, sh_degree: usize) -> Gaussians<f32> {
    let d2 = mean_sq_dist_knn(&points.positions, 3);
    let mut g = Gaussians::new(sh_degree);
    let rest = vec![0.0f32; g.sh_rest_len()];
    let opacity = logit(0.1f32);
    for (i, p) in points.positions.iter().enumerate() {
        let s = (0.5 * d2[i].max(1e-7).ln()) as f32; // log(sqrt(d2))
        let c = points.colors[i];
        g.push(
            p.map(|v| v as f32),
            [s, s, s],
            [1.0, 0.0, 0.0, 0.0],
            opacity,
            c.map(|v| rgb_to_dc(v as f32 / 255.0)),
            &rest,
        );
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn grid_knn_equals_brute_force() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut pts: Vec<[f64; 3]> = (0..500)
            .map(|_| {
                [
                    rng.random_range(-1.0..1.0),
                    rng.random_range(-1.0..1.0),
                    rng.random_range(-0.01..0.01),
                ]
            })
            .collect();
        pts.push([5.0, 5.0, 5.0]); // an outlier far from everything
        pts.push(pts[0]); // a duplicate
        let fast = mean_sq_dist_knn(&pts, 3);
        for (i, p) in pts.iter().enumerate() {
            let mut d: Vec<f64> = pts
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, q)| (0..3).map(|a| (p[a] - q[a]).powi(2)).sum())
                .collect();
            d.sort_by(f64::total_cmp);
            let brute = (d[0] + d[1] + d[2]) / 3.0;
            assert!(
                (fast[i] - brute).abs() <= 1e-12 * brute.max(1.0),
                "{i}: {} vs {brute}",
                fast[i]
            );
        }
    }
}
