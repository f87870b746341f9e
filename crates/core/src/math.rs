//! Small fixed-size vector and matrix helpers for the generic reference code.
//!
//! Matrices are row-major `[[F; C]; R]`. These are deliberately plain: the reference pipeline favours
//! readability, and the fast paths use their own layouts.

use crate::Real;

pub type Vec3<F> = [F; 3];
pub type Mat3<F> = [[F; 3]; 3];

#[inline]
pub fn dot3<F: Real>(a: Vec3<F>, b: Vec3<F>) -> F {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// `a x b`.
#[inline]
pub fn cross<F: Real>(a: Vec3<F>, b: Vec3<F>) -> Vec3<F> {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

#[inline]
pub fn mat3_vec<F: Real>(m: &Mat3<F>, v: Vec3<F>) -> Vec3<F> {
    [dot3(m[0], v), dot3(m[1], v), dot3(m[2], v)]
}

/// `m^T v`.
#[inline]
pub fn mat3_t_vec<F: Real>(m: &Mat3<F>, v: Vec3<F>) -> Vec3<F> {
    let mut out = [F::zero(); 3];
    for i in 0..3 {
        for j in 0..3 {
            out[j] += m[i][j] * v[i];
        }
    }
    out
}

/// `a b` for `a: R x K`, `b: K x C`.
#[inline]
pub fn matmul<F: Real, const R: usize, const K: usize, const C: usize>(
    a: &[[F; K]; R],
    b: &[[F; C]; K],
) -> [[F; C]; R] {
    let mut out = [[F::zero(); C]; R];
    for i in 0..R {
        for j in 0..C {
            let mut s = F::zero();
            for k in 0..K {
                s += a[i][k] * b[k][j];
            }
            out[i][j] = s;
        }
    }
    out
}

#[inline]
pub fn transpose<F: Real, const R: usize, const C: usize>(a: &[[F; C]; R]) -> [[F; R]; C] {
    let mut out = [[F::zero(); R]; C];
    for i in 0..R {
        for j in 0..C {
            out[j][i] = a[i][j];
        }
    }
    out
}

/// Converts every entry of a matrix to another scalar type.
#[inline]
pub fn cast_mat3<A: Real, B: Real>(m: &Mat3<A>) -> Mat3<B> {
    m.map(|row| row.map(|x| B::c(x.as_f64())))
}

#[inline]
pub fn cast3<A: Real, B: Real>(v: Vec3<A>) -> Vec3<B> {
    v.map(|x| B::c(x.as_f64()))
}

/// Rotation matrix of a *normalized* quaternion `(w, x, y, z)`.
#[inline]
pub fn quat_to_mat<F: Real>(q: [F; 4]) -> Mat3<F> {
    let [w, x, y, z] = q;
    let one = F::one();
    let two = F::c(2.0);
    [
        [
            one - two * (y * y + z * z),
            two * (x * y - w * z),
            two * (x * z + w * y),
        ],
        [
            two * (x * y + w * z),
            one - two * (x * x + z * z),
            two * (y * z - w * x),
        ],
        [
            two * (x * z - w * y),
            two * (y * z + w * x),
            one - two * (x * x + y * y),
        ],
    ]
}

/// Gradient with respect to the normalized quaternion `(w, x, y, z)` given the gradient of the loss with
/// respect to every entry of the rotation matrix produced by [`quat_to_mat`].
#[inline]
pub fn quat_to_mat_backward<F: Real>(q: [F; 4], grad_r: &Mat3<F>) -> [F; 4] {
    let [w, x, y, z] = q;
    let g = grad_r;
    let two = F::c(2.0);
    let four = F::c(4.0);
    let gw =
        two * (-z * g[0][1] + y * g[0][2] + z * g[1][0] - x * g[1][2] - y * g[2][0] + x * g[2][1]);
    let gx = two
        * (y * g[0][1] + z * g[0][2] + y * g[1][0] - w * g[1][2] + z * g[2][0] + w * g[2][1])
        - four * x * (g[1][1] + g[2][2]);
    let gy = two
        * (x * g[0][1] + w * g[0][2] + x * g[1][0] + z * g[1][2] - w * g[2][0] + z * g[2][1])
        - four * y * (g[0][0] + g[2][2]);
    let gz = two
        * (-w * g[0][1] + x * g[0][2] + w * g[1][0] + y * g[1][2] + x * g[2][0] + y * g[2][1])
        - four * z * (g[0][0] + g[1][1]);
    [gw, gx, gy, gz]
}

/// Backward of `v / |v|`: given `n = v / |v|` and `grad_n`, returns `grad_v`.
#[inline]
pub fn normalize_backward<F: Real, const D: usize>(n: [F; D], norm: F, grad_n: [F; D]) -> [F; D] {
    let mut d = F::zero();
    for i in 0..D {
        d += n[i] * grad_n[i];
    }
    let mut out = [F::zero(); D];
    for i in 0..D {
        out[i] = (grad_n[i] - n[i] * d) / norm;
    }
    out
}

/// Normalized quaternion `(w, x, y, z)` of a rotation matrix (Shepperd's method; `w >= 0`).
pub fn mat_to_quat(m: &Mat3<f64>) -> [f64; 4] {
    let trace = m[0][0] + m[1][1] + m[2][2];
    let q = if trace > 0.0 {
        let s = (trace + 1.0).sqrt() * 2.0;
        [
            0.25 * s,
            (m[2][1] - m[1][2]) / s,
            (m[0][2] - m[2][0]) / s,
            (m[1][0] - m[0][1]) / s,
        ]
    } else if m[0][0] > m[1][1] && m[0][0] > m[2][2] {
        let s = (1.0 + m[0][0] - m[1][1] - m[2][2]).sqrt() * 2.0;
        [
            (m[2][1] - m[1][2]) / s,
            0.25 * s,
            (m[0][1] + m[1][0]) / s,
            (m[0][2] + m[2][0]) / s,
        ]
    } else if m[1][1] > m[2][2] {
        let s = (1.0 + m[1][1] - m[0][0] - m[2][2]).sqrt() * 2.0;
        [
            (m[0][2] - m[2][0]) / s,
            (m[0][1] + m[1][0]) / s,
            0.25 * s,
            (m[1][2] + m[2][1]) / s,
        ]
    } else {
        let s = (1.0 + m[2][2] - m[0][0] - m[1][1]).sqrt() * 2.0;
        [
            (m[1][0] - m[0][1]) / s,
            (m[0][2] + m[2][0]) / s,
            (m[1][2] + m[2][1]) / s,
            0.25 * s,
        ]
    };
    let n = q.iter().map(|v| v * v).sum::<f64>().sqrt();
    let sign = if q[0] < 0.0 { -1.0 } else { 1.0 };
    q.map(|v| sign * v / n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quaternion_round_trip() {
        for q in [
            [1.0, 0.0, 0.0, 0.0],
            [0.1, 0.9, -0.3, 0.2],
            [0.0, 0.0, 1.0, 0.0],
            [0.05, -0.2, 0.1, -0.97],
        ] {
            let n = q.iter().map(|v: &f64| v * v).sum::<f64>().sqrt();
            let q: [f64; 4] = q.map(|v| v / n);
            let back = mat_to_quat(&quat_to_mat(q));
            let s = if q[0] < 0.0 { -1.0 } else { 1.0 };
            for k in 0..4 {
                assert!((back[k] - s * q[k]).abs() < 1e-12, "{q:?} -> {back:?}");
            }
        }
    }
}
