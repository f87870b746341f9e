//! Real spherical harmonics up to degree 3, in the basis and sign convention of the original 3DGS release.
//!
//! Colour of one channel for view direction `d` (unit vector from the camera centre to the Gaussian):
//! `c = 0.5 + sum_k coeff_k * basis_k(d)`, then clamped at 0 by the renderer.

use crate::Real;

pub const SH_C0: f64 = 0.282_094_791_773_878_14;
pub const SH_C1: f64 = 0.488_602_511_902_919_9;
pub const SH_C2: [f64; 5] = [
    1.092_548_430_592_079_2,
    -1.092_548_430_592_079_2,
    0.315_391_565_252_520_05,
    -1.092_548_430_592_079_2,
    0.546_274_215_296_039_6,
];
pub const SH_C3: [f64; 7] = [
    -0.590_043_589_926_643_5,
    2.890_611_442_640_554,
    -0.457_045_799_464_465_8,
    0.373_176_332_590_115_4,
    -0.457_045_799_464_465_8,
    1.445_305_721_320_277,
    -0.590_043_589_926_643_5,
];

/// RGB of the DC term alone: `0.5 + C0 * dc` (what a degree-0 splat shows).
#[inline]
pub fn dc_to_rgb<F: Real>(dc: F) -> F {
    F::c(0.5) + F::c(SH_C0) * dc
}

/// Inverse of [`dc_to_rgb`].
#[inline]
pub fn rgb_to_dc<F: Real>(rgb: F) -> F {
    (rgb - F::c(0.5)) / F::c(SH_C0)
}

/// Evaluates the first `count` basis functions (1, 4, 9 or 16) at unit direction `d` into `out[..count]`.
#[inline]
pub fn basis<F: Real>(d: [F; 3], count: usize, out: &mut [F; 16]) {
    let [x, y, z] = d;
    out[0] = F::c(SH_C0);
    if count <= 1 {
        return;
    }
    let c1 = F::c(SH_C1);
    out[1] = -c1 * y;
    out[2] = c1 * z;
    out[3] = -c1 * x;
    if count <= 4 {
        return;
    }
    let (xx, yy, zz) = (x * x, y * y, z * z);
    let (xy, yz, xz) = (x * y, y * z, x * z);
    let c2 = SH_C2.map(F::c);
    out[4] = c2[0] * xy;
    out[5] = c2[1] * yz;
    out[6] = c2[2] * (F::c(2.0) * zz - xx - yy);
    out[7] = c2[3] * xz;
    out[8] = c2[4] * (xx - yy);
    if count <= 9 {
        return;
    }
    let c3 = SH_C3.map(F::c);
    let three = F::c(3.0);
    let four = F::c(4.0);
    out[9] = c3[0] * y * (three * xx - yy);
    out[10] = c3[1] * xy * z;
    out[11] = c3[2] * y * (four * zz - xx - yy);
    out[12] = c3[3] * z * (F::c(2.0) * zz - three * xx - three * yy);
    out[13] = c3[4] * x * (four * zz - xx - yy);
    out[14] = c3[5] * z * (xx - yy);
    out[15] = c3[6] * x * (xx - three * yy);
}

/// Gradient with respect to `d` (treating its components as independent) of `sum_k grad_basis[k] * basis_k(d)`
/// over the first `count` basis functions.
#[inline]
pub fn basis_backward<F: Real>(d: [F; 3], count: usize, grad_basis: &[F; 16]) -> [F; 3] {
    let [x, y, z] = d;
    let g = grad_basis;
    let mut out = [F::zero(); 3];
    if count <= 1 {
        return out;
    }
    let c1 = F::c(SH_C1);
    out[0] -= c1 * g[3];
    out[1] -= c1 * g[1];
    out[2] += c1 * g[2];
    if count <= 4 {
        return out;
    }
    let two = F::c(2.0);
    let c2 = SH_C2.map(F::c);
    // d/dx, d/dy, d/dz of each degree-2 term.
    let terms2: [(F, [F; 3]); 5] = [
        (g[4] * c2[0], [y, x, F::zero()]),
        (g[5] * c2[1], [F::zero(), z, y]),
        (g[6] * c2[2], [-two * x, -two * y, F::c(4.0) * z]),
        (g[7] * c2[3], [z, F::zero(), x]),
        (g[8] * c2[4], [two * x, -two * y, F::zero()]),
    ];
    for (w, dd) in terms2 {
        for i in 0..3 {
            out[i] += w * dd[i];
        }
    }
    if count <= 9 {
        return out;
    }
    let c3 = SH_C3.map(F::c);
    let (xx, yy, zz) = (x * x, y * y, z * z);
    let three = F::c(3.0);
    let four = F::c(4.0);
    let six = F::c(6.0);
    let eight = F::c(8.0);
    let terms3: [(F, [F; 3]); 7] = [
        (
            g[9] * c3[0],
            [six * x * y, three * xx - three * yy, F::zero()],
        ),
        (g[10] * c3[1], [y * z, x * z, x * y]),
        (
            g[11] * c3[2],
            [-two * x * y, four * zz - xx - three * yy, eight * y * z],
        ),
        (
            g[12] * c3[3],
            [
                -six * x * z,
                -six * y * z,
                six * zz - three * xx - three * yy,
            ],
        ),
        (
            g[13] * c3[4],
            [four * zz - three * xx - yy, -two * x * y, eight * x * z],
        ),
        (g[14] * c3[5], [two * x * z, -two * y * z, xx - yy]),
        (
            g[15] * c3[6],
            [three * xx - three * yy, -six * x * y, F::zero()],
        ),
    ];
    for (w, dd) in terms3 {
        for i in 0..3 {
            out[i] += w * dd[i];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basis_backward_matches_finite_differences() {
        let d = [0.3f64, -0.5, 0.7];
        let weights: [f64; 16] = std::array::from_fn(|k| ((k * 7 + 3) % 11) as f64 / 5.0 - 1.0);
        let f = |d: [f64; 3]| {
            let mut b = [0.0; 16];
            basis(d, 16, &mut b);
            (0..16).map(|k| b[k] * weights[k]).sum::<f64>()
        };
        let g = basis_backward(d, 16, &weights);
        for i in 0..3 {
            let h = 1e-6;
            let mut p = d;
            let mut m = d;
            p[i] += h;
            m[i] -= h;
            let fd = (f(p) - f(m)) / (2.0 * h);
            assert!(
                (fd - g[i]).abs() < 1e-8 * (1.0 + fd.abs()),
                "{i}: {fd} vs {}",
                g[i]
            );
        }
    }

    #[test]
    fn dc_roundtrip() {
        assert!((dc_to_rgb(rgb_to_dc(0.25f64)) - 0.25).abs() < 1e-15);
    }
}
