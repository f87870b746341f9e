//! How close estimated camera poses are to known ones, after the similarity (scale, rotation,
//! translation) that structure from motion cannot know: its world frame and scale are arbitrary.
//!
//! The similarity is Horn's closed form on the camera centres (Horn 1987, "Closed-form solution of
//! absolute orientation using unit quaternions"): the rotation is the eigenvector of the largest
//! eigenvalue of a 4 x 4 symmetric matrix built from the centred point pairs (found here by Jacobi
//! rotations), the scale the least-squares one given that rotation; centres are compared after it.
//! Orientations are compared after the mean of the frame rotations the cameras' orientations imply
//! (a quaternion mean), so that a small misfit of the centre alignment (noisy centres, a ring of
//! cameras that pins some axes weakly) does not show up as the same error on every camera; the angle
//! between the two rotations is reported too.

use splat_core::math::{mat_to_quat, matmul, quat_to_mat, transpose};

/// A camera's pose: world-to-camera rotation and the camera centre in world coordinates.
#[derive(Clone, Copy, Debug)]
pub struct Pose {
    pub rotation: [[f64; 3]; 3],
    pub center: [f64; 3],
}

impl Pose {
    /// From COLMAP's world-to-camera `R`, `t` (centre `-R^T t`).
    pub fn from_world_to_camera(rotation: [[f64; 3]; 3], t: [f64; 3]) -> Pose {
        let c = splat_core::math::mat3_t_vec(&rotation, t);
        Pose {
            rotation,
            center: c.map(|v| -v),
        }
    }
}

/// `dst ≈ scale * rotation * src + translation`.
#[derive(Clone, Copy, Debug)]
pub struct Similarity {
    pub scale: f64,
    pub rotation: [[f64; 3]; 3],
    pub translation: [f64; 3],
}

impl Similarity {
    pub fn apply(&self, p: [f64; 3]) -> [f64; 3] {
        let r = splat_core::math::mat3_vec(&self.rotation, p);
        std::array::from_fn(|k| self.scale * r[k] + self.translation[k])
    }
}

/// The similarity that maps `src` onto `dst` best in least squares (at least 3 points, not all on
/// one line).
pub fn fit_similarity(src: &[[f64; 3]], dst: &[[f64; 3]]) -> Option<Similarity> {
    let n = src.len();
    if n < 3 || n != dst.len() {
        return None;
    }
    let mean = |p: &[[f64; 3]]| -> [f64; 3] {
        std::array::from_fn(|k| p.iter().map(|v| v[k]).sum::<f64>() / n as f64)
    };
    let (ms, md) = (mean(src), mean(dst));
    let a: Vec<[f64; 3]> = src
        .iter()
        .map(|p| std::array::from_fn(|k| p[k] - ms[k]))
        .collect();
    let b: Vec<[f64; 3]> = dst
        .iter()
        .map(|p| std::array::from_fn(|k| p[k] - md[k]))
        .collect();
    // S = sum a b^T.
    let mut s = [[0.0; 3]; 3];
    for (x, y) in a.iter().zip(&b) {
        for i in 0..3 {
            for j in 0..3 {
                s[i][j] += x[i] * y[j];
            }
        }
    }
    let (sxx, sxy, sxz) = (s[0][0], s[0][1], s[0][2]);
    let (syx, syy, syz) = (s[1][0], s[1][1], s[1][2]);
    let (szx, szy, szz) = (s[2][0], s[2][1], s[2][2]);
    let m = [
        [sxx + syy + szz, syz - szy, szx - sxz, sxy - syx],
        [syz - szy, sxx - syy - szz, sxy + syx, szx + sxz],
        [szx - sxz, sxy + syx, -sxx + syy - szz, syz + szy],
        [sxy - syx, szx + sxz, syz + szy, -sxx - syy + szz],
    ];
    let q = largest_eigenvector(m);
    let rotation = quat_to_mat(q);
    let spread: f64 = a.iter().map(|p| p.iter().map(|v| v * v).sum::<f64>()).sum();
    if !(spread > 1e-18) {
        return None;
    }
    let fit: f64 = a
        .iter()
        .zip(&b)
        .map(|(x, y)| {
            let r = splat_core::math::mat3_vec(&rotation, *x);
            (0..3).map(|k| r[k] * y[k]).sum::<f64>()
        })
        .sum();
    let scale = fit / spread;
    let rm = splat_core::math::mat3_vec(&rotation, ms);
    let translation = std::array::from_fn(|k| md[k] - scale * rm[k]);
    Some(Similarity {
        scale,
        rotation,
        translation,
    })
}

/// Eigenvector of the largest eigenvalue of a symmetric 4 x 4 matrix (cyclic Jacobi).
fn largest_eigenvector(mut a: [[f64; 4]; 4]) -> [f64; 4] {
    let mut v = [[0.0; 4]; 4];
    for (i, row) in v.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for _sweep in 0..50 {
        let off: f64 = (0..4)
            .flat_map(|i| (0..4).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum();
        if off < 1e-30 {
            break;
        }
        for p in 0..4 {
            for q in p + 1..4 {
                if a[p][q].abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..4 {
                    let (akp, akq) = (a[k][p], a[k][q]);
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for k in 0..4 {
                    let (apk, aqk) = (a[p][k], a[q][k]);
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for row in v.iter_mut() {
                    let (vp, vq) = (row[p], row[q]);
                    row[p] = c * vp - s * vq;
                    row[q] = s * vp + c * vq;
                }
            }
        }
    }
    let best = (0..4)
        .max_by(|&i, &j| a[i][i].total_cmp(&a[j][j]))
        .expect("four");
    let q = [v[0][best], v[1][best], v[2][best], v[3][best]];
    let n = q.iter().map(|x| x * x).sum::<f64>().sqrt();
    q.map(|x| x / n)
}

/// Errors of estimated poses against known ones, after alignment.
#[derive(Clone, Debug)]
pub struct PoseErrors {
    pub matched: usize,
    /// The similarity fitted to the camera centres (positions are compared after it).
    pub similarity: Similarity,
    /// Angle between that similarity's rotation and the mean rotation of the orientations (what the
    /// orientations are compared after): how well centres and orientations agree on the frame.
    pub alignment_gap_deg: f64,
    /// Orientation error per camera after the mean frame rotation, degrees.
    pub rotation_deg: Vec<f64>,
    /// Centre error per camera, in the known poses' units.
    pub position: Vec<f64>,
    /// Largest distance of a known centre from their mean (to read `position` against).
    pub extent: f64,
}

impl PoseErrors {
    pub fn median(v: &[f64]) -> f64 {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        if s.is_empty() {
            f64::NAN
        } else if s.len() % 2 == 1 {
            s[s.len() / 2]
        } else {
            0.5 * (s[s.len() / 2 - 1] + s[s.len() / 2])
        }
    }
    pub fn max(v: &[f64]) -> f64 {
        v.iter().copied().fold(0.0, f64::max)
    }
}

/// Aligns `estimated` to `known` (pairs with the same name) and measures the errors; `None` with
/// fewer than 3 common names.
pub fn compare(estimated: &[(String, Pose)], known: &[(String, Pose)]) -> Option<PoseErrors> {
    let known: std::collections::HashMap<&str, &Pose> =
        known.iter().map(|(n, p)| (n.as_str(), p)).collect();
    let pairs: Vec<(&Pose, &Pose)> = estimated
        .iter()
        .filter_map(|(n, e)| known.get(n.as_str()).map(|k| (e, *k)))
        .collect();
    let src: Vec<[f64; 3]> = pairs.iter().map(|(e, _)| e.center).collect();
    let dst: Vec<[f64; 3]> = pairs.iter().map(|(_, k)| k.center).collect();
    let sim = fit_similarity(&src, &dst)?;
    let n = dst.len() as f64;
    let mean: [f64; 3] = std::array::from_fn(|k| dst.iter().map(|p| p[k]).sum::<f64>() / n);
    let extent = dst
        .iter()
        .map(|p| (0..3).map(|k| (p[k] - mean[k]).powi(2)).sum::<f64>().sqrt())
        .fold(0.0, f64::max);
    // The frame rotation seen by each camera's orientation: known c2w = A estimated c2w, so
    // A_i = R_k^T R_e; their mean (quaternions on one hemisphere, normalised) is the rotation the
    // orientation errors are measured after.
    let per_camera: Vec<[f64; 4]> = pairs
        .iter()
        .map(|(e, k)| mat_to_quat(&matmul(&transpose(&k.rotation), &e.rotation)))
        .collect();
    let mut sum = [0.0; 4];
    for q in &per_camera {
        let sign = if (0..4).map(|i| q[i] * per_camera[0][i]).sum::<f64>() < 0.0 {
            -1.0
        } else {
            1.0
        };
        (0..4).for_each(|i| sum[i] += sign * q[i]);
    }
    let norm = sum.iter().map(|v| v * v).sum::<f64>().sqrt();
    let frame_rotation = quat_to_mat(sum.map(|v| v / norm));
    let angle_of = |m: &[[f64; 3]; 3]| (2.0 * mat_to_quat(m)[0].abs().min(1.0).acos()).to_degrees();
    let alignment_gap_deg = angle_of(&matmul(&transpose(&frame_rotation), &sim.rotation));
    let mut rotation_deg = Vec::new();
    let mut position = Vec::new();
    for (e, k) in &pairs {
        // Known w2c against the estimate's carried into the known frame: R_k A R_e^T is identity
        // when they agree.
        let diff = matmul(
            &k.rotation,
            &matmul(&frame_rotation, &transpose(&e.rotation)),
        );
        rotation_deg.push(angle_of(&diff));
        let c = sim.apply(e.center);
        position.push(
            (0..3)
                .map(|i| (c[i] - k.center[i]).powi(2))
                .sum::<f64>()
                .sqrt(),
        );
    }
    Some(PoseErrors {
        matched: pairs.len(),
        alignment_gap_deg,
        similarity: sim,
        rotation_deg,
        position,
        extent,
    })
}

/// The poses of a COLMAP model folder, by image name.
pub fn read_poses(model: &std::path::Path) -> Result<Vec<(String, Pose)>, crate::PrepareError> {
    let recon = splat_io::dataset::colmap::read_model(model)?;
    Ok(recon
        .images
        .iter()
        .map(|im| {
            let r = splat_io::dataset::colmap::qvec_to_rotation(im.qvec);
            (im.name.clone(), Pose::from_world_to_camera(r, im.tvec))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rot(axis: [f64; 3], angle: f64) -> [[f64; 3]; 3] {
        let n = axis.iter().map(|v| v * v).sum::<f64>().sqrt();
        let (s, c) = ((angle / 2.0).sin(), (angle / 2.0).cos());
        quat_to_mat([c, s * axis[0] / n, s * axis[1] / n, s * axis[2] / n])
    }

    #[test]
    fn a_known_similarity_is_recovered_and_errors_vanish() {
        let a = rot([0.3, -1.0, 0.4], 2.1);
        let sim = Similarity {
            scale: 3.7,
            rotation: a,
            translation: [1.0, -2.0, 0.5],
        };
        let mut est = Vec::new();
        let mut known = Vec::new();
        for i in 0..12 {
            let f = i as f64;
            let r = rot([f.sin(), 1.0, f.cos()], 0.3 * f);
            let c = [f.cos() * 2.0, f.sin() * 2.0, 0.1 * f];
            est.push((
                format!("{i}"),
                Pose {
                    rotation: r,
                    center: c,
                },
            ));
            // Known frame: centre s A c + t; camera-to-world A R^T, so world-to-camera R A^T.
            known.push((
                format!("{i}"),
                Pose {
                    rotation: matmul(&r, &transpose(&a)),
                    center: sim.apply(c),
                },
            ));
        }
        let e = compare(&est, &known).unwrap();
        assert_eq!(e.matched, 12);
        assert!(
            (e.similarity.scale - 3.7).abs() < 1e-9,
            "{}",
            e.similarity.scale
        );
        assert!(
            PoseErrors::max(&e.rotation_deg) < 1e-5,
            "{:?}",
            e.rotation_deg
        );
        assert!(PoseErrors::max(&e.position) < 1e-9);
        assert!(e.alignment_gap_deg < 1e-5);
        // A camera turned by 5 degrees shows most of it; the mean frame rotation takes ~1/12 of it,
        // which the others show.
        est[3].1.rotation = matmul(&rot([0.0, 0.0, 1.0], 5f64.to_radians()), &est[3].1.rotation);
        let e = compare(&est, &known).unwrap();
        let others = e.rotation_deg.iter().enumerate().filter(|(i, _)| *i != 3);
        assert!(
            (e.rotation_deg[3] - 5.0 * 11.0 / 12.0).abs() < 0.05,
            "{:?}",
            e.rotation_deg
        );
        assert!(
            others.clone().all(|(_, &r)| (r - 5.0 / 12.0).abs() < 0.05),
            "{:?}",
            e.rotation_deg
        );
    }

    #[test]
    fn too_few_or_degenerate_points() {
        assert!(fit_similarity(&[[0.0; 3]; 2], &[[0.0; 3]; 2]).is_none());
        assert!(fit_similarity(&[[1.0; 3]; 4], &[[0.0; 3]; 4]).is_none());
    }
}
