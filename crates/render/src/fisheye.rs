//! The ideal equidistant fisheye: a camera-space point's pixel, the Jacobian the EWA splatting of its
//! covariance needs, and the backward of both.
//!
//! A point `p = (x, y, z)` at angle `theta = atan2(r, z)` from the optical axis (`r = sqrt(x^2 + y^2)`)
//! lands at `theta` focal lengths from the principal point: `u = fx rho x + cx`, `v = fy rho y + cy`
//! with `rho = theta / r`. Unlike the pinhole, this holds a field of view of 180 degrees and more, which is
//! why fisheye photos are resampled to it (COLMAP's fisheye models are this camera followed by a
//! distortion of `theta`, [`splat_core::lens`]) and not to a pinhole.
//!
//! With `w = r^2`, `s = w + z^2` and `a = (z / s - rho) / w` (so `d rho / dx = x a`, `d rho / dy = y a`,
//! `d rho / dz = -1 / s`), the Jacobian `d(u, v) / dp` is
//!
//! ```text
//! J = [ fx (rho + x^2 a)   fx x y a           -fx x / s ]
//!     [ fy x y a           fy (rho + y^2 a)   -fy y / s ]
//! ```
//!
//! (the pinhole's `fx / z`, `-fx x / z^2` at the axis). The backward takes `G_J` (the gradient of the
//! loss with respect to `J`) to the point through `J`'s own derivatives: with `A = fx G00`,
//! `B = fx G01 + fy G10`, `C = fy G11`, `D = fx G02`, `E = fy G12`, the loss through `J` is
//! `(A + C) rho + a (A x^2 + B x y + C y^2) - (D x + E y) / s`, and `da/dx = x b`, `da/dy = y b`,
//! `da/dz = 2 / s^2` with `b = (-2 z / s^2 - 3 a) / w`.
//!
//! `rho`, `a` and `b` are differences of nearly equal terms near the axis (`b`'s error in `f32` grows as
//! `1 / t^2`, `t = w / z^2`): for `t < 0.1` (within 17.5 degrees of the axis) they come from their series
//! in `t` (`atan(q) / q` and its derivatives), truncated where the next term is under 1e-15 of the first.

use splat_core::math::Vec3;
use splat_core::Real;

/// Below this `t = (r / z)^2` the series are used.
const SERIES_T: f64 = 0.1;
/// Terms of the series: the first left out is under 1e-15 of the first (`0.1^16` times at most 35).
const SERIES_TERMS: usize = 16;

/// `rho`, `a`, `b` and `1 / s` of the point (see the module docs).
#[derive(Clone, Copy, Debug)]
pub struct Radial<F> {
    pub rho: F,
    pub a: F,
    pub b: F,
    pub inv_s: F,
}

/// The radial functions of `p`; the point must not be at the camera centre.
#[inline]
pub fn radial<F: Real>(p: Vec3<F>) -> Radial<F> {
    let [x, y, z] = p;
    let w = x * x + y * y;
    let s = w + z * z;
    let inv_s = F::one() / s;
    if z > F::zero() && w < F::c(SERIES_T) * z * z {
        let t = w / (z * z);
        let iz = F::one() / z;
        let (sr, sa, sb) = series(t);
        let iz3 = iz * iz * iz;
        return Radial {
            rho: sr * iz,
            a: sa * iz3,
            b: sb * iz3 * iz * iz,
            inv_s,
        };
    }
    let r = w.sqrt();
    let rho = r.atan2(z) / r;
    let a = (z * inv_s - rho) / w;
    let b = (F::c(-2.0) * z * inv_s * inv_s - F::c(3.0) * a) / w;
    Radial { rho, a, b, inv_s }
}

/// `z rho`, `z^3 a`, `z^5 b` as series in `t`: `sum (-t)^n / (2n + 1)`, its derivative times 2 and its
/// second derivative times 4 (`rho` is `atan(q) / (q z)`, `q^2 = t`).
#[inline]
fn series<F: Real>(t: F) -> (F, F, F) {
    let (mut sr, mut sa, mut sb) = (F::zero(), F::zero(), F::zero());
    // Horner from the highest term down.
    for n in (0..SERIES_TERMS).rev() {
        let nf = n as f64;
        let sign = if n % 2 == 0 { 1.0 } else { -1.0 };
        sr = sr * t + F::c(sign / (2.0 * nf + 1.0));
        // a: n >= 1 terms (-1)^n 2n / (2n + 1) t^(n - 1), indexed here by n - 1.
        let n1 = nf + 1.0;
        let sign1 = -sign;
        sa = sa * t + F::c(sign1 * 2.0 * n1 / (2.0 * n1 + 1.0));
        // b: 2 (-1)^n (n - 1) 2n / (2n + 1) t^(n - 2) for n >= 2, indexed by n - 2.
        let n2 = nf + 2.0;
        sb = sb * t + F::c(2.0 * sign * (n2 - 1.0) * 2.0 * n2 / (2.0 * n2 + 1.0));
    }
    (sr, sa, sb)
}

/// The pixel of `p` and the Jacobian `d(u, v) / dp` (module docs), from its [`radial`] functions.
#[inline]
pub fn project<F: Real>(
    p: Vec3<F>,
    f: [F; 2],
    c: [F; 2],
    rad: &Radial<F>,
) -> ([F; 2], [[F; 3]; 2]) {
    let [x, y, _] = p;
    let [fx, fy] = f;
    let Radial { rho, a, inv_s, .. } = *rad;
    let uv = [fx * rho * x + c[0], fy * rho * y + c[1]];
    let j = [
        [fx * (rho + x * x * a), fx * x * y * a, -fx * x * inv_s],
        [fy * x * y * a, fy * (rho + y * y * a), -fy * y * inv_s],
    ];
    (uv, j)
}

/// The gradient at `p` of a loss with gradients `g_uv` with respect to the pixel and `g_j` with respect
/// to the Jacobian (module docs).
#[inline]
pub fn project_backward<F: Real>(
    p: Vec3<F>,
    f: [F; 2],
    rad: &Radial<F>,
    g_uv: [F; 2],
    g_j: &[[F; 3]; 2],
) -> Vec3<F> {
    let [x, y, z] = p;
    let [fx, fy] = f;
    let Radial { rho, a, b, inv_s } = *rad;
    let two = F::c(2.0);
    // Through the pixel: J^T g_uv.
    let (gu, gv) = (g_uv[0] * fx, g_uv[1] * fy);
    let mut gp = [
        gu * (rho + x * x * a) + gv * x * y * a,
        gu * x * y * a + gv * (rho + y * y * a),
        -(gu * x + gv * y) * inv_s,
    ];
    // Through the Jacobian's entries.
    let ca = fx * g_j[0][0];
    let cb = fx * g_j[0][1] + fy * g_j[1][0];
    let cc = fy * g_j[1][1];
    let cd = fx * g_j[0][2];
    let ce = fy * g_j[1][2];
    let quad = ca * x * x + cb * x * y + cc * y * y;
    let lin = cd * x + ce * y;
    let inv_s2 = inv_s * inv_s;
    gp[0] += (ca + cc) * x * a + a * (two * ca * x + cb * y) + quad * x * b - cd * inv_s
        + lin * two * x * inv_s2;
    gp[1] += (ca + cc) * y * a + a * (cb * x + two * cc * y) + quad * y * b - ce * inv_s
        + lin * two * y * inv_s2;
    gp[2] += -(ca + cc) * inv_s + quad * two * inv_s2 + lin * two * z * inv_s2;
    gp
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: [f64; 2] = [300.0, 280.0];
    const C: [f64; 2] = [160.0, 120.0];

    fn pixel(p: Vec3<f64>) -> [f64; 2] {
        project(p, F, C, &radial(p)).0
    }

    /// Points near the axis (series), off it (closed form), at 90 degrees and behind the camera.
    fn points() -> Vec<Vec3<f64>> {
        vec![
            [0.01, -0.02, 2.0],
            [1e-7, 2e-7, 1.0],
            [0.3, 0.2, 1.5],
            [0.61, 0.0, 2.0],
            [-0.63, 0.1, 2.0],
            [1.0, -2.0, 0.5],
            [1.5, 0.5, 0.0],
            [0.7, -0.4, -0.3],
        ]
    }

    #[test]
    fn pixel_is_theta_focal_lengths_from_the_centre() {
        for p in points() {
            let r = (p[0] * p[0] + p[1] * p[1]).sqrt();
            let theta = r.atan2(p[2]);
            let [u, v] = pixel(p);
            let want = [
                F[0] * theta * p[0] / r + C[0],
                F[1] * theta * p[1] / r + C[1],
            ];
            assert!(
                (u - want[0]).abs() < 1e-9 && (v - want[1]).abs() < 1e-9,
                "{p:?}"
            );
        }
        // On the axis the pinhole and the fisheye agree to first order.
        let [u, _] = pixel([1e-4, 0.0, 2.0]);
        assert!((u - (F[0] * 1e-4 / 2.0 + C[0])).abs() < 1e-9);
    }

    #[test]
    fn jacobian_matches_finite_differences() {
        let h = 1e-6;
        for p in points() {
            let (_, j) = project(p, F, C, &radial(p));
            for k in 0..3 {
                let (mut lo, mut hi) = (p, p);
                lo[k] -= h;
                hi[k] += h;
                let (a, b) = (pixel(lo), pixel(hi));
                for row in 0..2 {
                    let fd = (b[row] - a[row]) / (2.0 * h);
                    let tol = 1e-6 * (1.0 + fd.abs());
                    assert!(
                        (j[row][k] - fd).abs() < tol,
                        "{p:?} J[{row}][{k}] {} vs {fd}",
                        j[row][k]
                    );
                }
            }
        }
    }

    #[test]
    fn backward_matches_finite_differences_of_pixel_and_jacobian() {
        // L = <g_uv, uv> + <g_j, J> for fixed weights.
        let g_uv = [0.7, -1.3];
        let g_j = [[0.4, -0.9, 0.25], [1.1, 0.35, -0.6]];
        let loss = |p: Vec3<f64>| {
            let (uv, j) = project(p, F, C, &radial(p));
            let mut l = g_uv[0] * uv[0] + g_uv[1] * uv[1];
            for r in 0..2 {
                for c in 0..3 {
                    l += g_j[r][c] * j[r][c];
                }
            }
            l
        };
        let h = 1e-6;
        for p in points() {
            let got = project_backward(p, F, &radial(p), g_uv, &g_j);
            for k in 0..3 {
                let (mut lo, mut hi) = (p, p);
                lo[k] -= h;
                hi[k] += h;
                let fd = (loss(hi) - loss(lo)) / (2.0 * h);
                let tol = 2e-6 * (1.0 + fd.abs());
                assert!(
                    (got[k] - fd).abs() < tol,
                    "{p:?} d/dp{k}: {} vs {fd}",
                    got[k]
                );
            }
        }
    }

    #[test]
    fn series_and_closed_form_agree_at_the_switch_and_f32_stays_close() {
        // Just inside and just outside t = 0.1.
        for t in [0.0999, 0.1001, 1e-3, 1e-6] {
            let z = 1.7f64;
            let x = (t * z * z).sqrt();
            let s = radial([x, 0.0, z]);
            let w = x * x;
            let ss = w + z * z;
            let r = w.sqrt();
            let rho = r.atan2(z) / r;
            let a = (z / ss - rho) / w;
            let b = (-2.0 * z / (ss * ss) - 3.0 * a) / w;
            // The closed form loses digits as t shrinks (b as 1 / t^2): compare where it still has them.
            let tol = |v: f64, lost: f64| 1e-14 * lost * v.abs().max(1.0);
            assert!((s.rho - rho).abs() < tol(rho, 1.0 / t), "t {t}");
            assert!((s.a - a).abs() < tol(a, 1.0 / t), "t {t}: {} vs {a}", s.a);
            assert!(
                (s.b - b).abs() < tol(b, 1.0 / (t * t)),
                "t {t}: {} vs {b}",
                s.b
            );
            // f32 against f64 relative to the value's own size.
            let s32 = radial([x as f32, 0.0, z as f32]);
            for (v32, v64) in [(s32.rho, s.rho), (s32.a, s.a), (s32.b, s.b)] {
                assert!(
                    ((v32 as f64) - v64).abs() < 1e-4 * v64.abs(),
                    "t {t}: f32 {v32} vs f64 {v64}"
                );
            }
        }
    }
}
