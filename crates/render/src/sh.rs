//! The SH stage: view-dependent colour of each Gaussian, and its backward.
//!
//! `rgb = max(0, 0.5 + sum_{k < K} coeff_k basis_k(dir))` with `dir = (mean - camera centre) / |...|` and `K`
//! the number of coefficients of the *active* degree (training raises it over time). Clamped channels are
//! remembered: their gradient is zero.

use splat_core::math::{normalize_backward, Vec3};
use splat_core::{sh, sh_coeffs_for_degree, Real};

/// Unit direction from the camera centre to `mean`, and the distance.
#[inline]
pub fn view_dir<F: Real>(mean: Vec3<F>, center: Vec3<F>) -> (Vec3<F>, F) {
    let v = [
        mean[0] - center[0],
        mean[1] - center[1],
        mean[2] - center[2],
    ];
    let norm = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    ([v[0] / norm, v[1] / norm, v[2] / norm], norm)
}

/// Number of coefficients per channel used for an active degree, bounded by what is stored.
#[inline]
pub fn active_coeffs(active_degree: usize, stored_degree: usize) -> usize {
    sh_coeffs_for_degree(active_degree.min(stored_degree))
}

/// Colour of one Gaussian; `sh_rest` is its `[coefficient][channel]` slice.
#[inline]
pub fn color<F: Real>(
    mean: Vec3<F>,
    sh_dc: [F; 3],
    sh_rest: &[F],
    coeffs: usize,
    center: Vec3<F>,
) -> ([F; 3], [bool; 3]) {
    let (dir, _) = view_dir(mean, center);
    let mut b = [F::zero(); 16];
    sh::basis(dir, coeffs, &mut b);
    let mut rgb = [F::zero(); 3];
    let mut clamped = [false; 3];
    for ch in 0..3 {
        let mut c = F::c(0.5) + b[0] * sh_dc[ch];
        for k in 1..coeffs {
            c += b[k] * sh_rest[(k - 1) * 3 + ch];
        }
        if c < F::zero() {
            clamped[ch] = true;
            c = F::zero();
        }
        rgb[ch] = c;
    }
    (rgb, clamped)
}

/// Backward of [`color`]: adds the gradients of the coefficients into `grad_sh_dc` / `grad_sh_rest` (the
/// latter left out when that slice is empty: see [`sh_rest_grad`]) and returns the gradient with respect to the mean
/// (through the view direction).
#[inline]
pub fn color_backward<F: Real>(
    mean: Vec3<F>,
    sh_dc: [F; 3],
    sh_rest: &[F],
    coeffs: usize,
    center: Vec3<F>,
    grad_color: [F; 3],
    clamped: [bool; 3],
    grad_sh_dc: &mut [F; 3],
    grad_sh_rest: &mut [F],
) -> Vec3<F> {
    let g = masked(grad_color, clamped);
    let (dir, norm) = view_dir(mean, center);
    let mut b = [F::zero(); 16];
    sh::basis(dir, coeffs, &mut b);
    // Gradient of the loss with respect to each basis value.
    let mut grad_basis = [F::zero(); 16];
    let write_rest = !grad_sh_rest.is_empty();
    for ch in 0..3 {
        grad_sh_dc[ch] += b[0] * g[ch];
        grad_basis[0] += sh_dc[ch] * g[ch];
        for k in 1..coeffs {
            if write_rest {
                grad_sh_rest[(k - 1) * 3 + ch] += b[k] * g[ch];
            }
            grad_basis[k] += sh_rest[(k - 1) * 3 + ch] * g[ch];
        }
    }
    if coeffs <= 1 {
        return [F::zero(); 3];
    }
    let grad_dir = sh::basis_backward(dir, coeffs, &grad_basis);
    normalize_backward(dir, norm, grad_dir)
}

/// Clamped channels pass no gradient.
#[inline]
fn masked<F: Real>(grad_color: [F; 3], clamped: [bool; 3]) -> [F; 3] {
    [0, 1, 2].map(|ch| {
        if clamped[ch] {
            F::zero()
        } else {
            grad_color[ch]
        }
    })
}

/// The SH-DC gradient of one Gaussian seen in one view: exactly what [`color_backward`] adds into zeros
/// (`0 + basis_0 x` the masked colour gradient; zero for a culled Gaussian). With [`sh_rest_grad`], what
/// an optimizer forms while it updates when project backward did not store these gradients
/// ([`crate::RenderSettings::sh_grads`] off).
#[inline]
pub fn sh_dc_grad<F: Real>(visible: bool, grad_color: [F; 3], clamped: [bool; 3]) -> [F; 3] {
    if !visible {
        return [F::zero(); 3];
    }
    let g = masked(grad_color, clamped);
    let b0 = F::c(sh::SH_C0);
    // `0 + x`, as the accumulation does: a product that is -0 becomes +0.
    g.map(|v| F::zero() + b0 * v)
}

/// The SH-rest gradient of one Gaussian seen in one view, written into `out` (`[coefficient][channel]`,
/// coefficients 1..): exactly what [`color_backward`] adds into a zeroed slice, `basis_k(dir) x` the colour
/// gradient with clamped channels masked, zero past the active `coeffs` and for a culled Gaussian.
#[inline]
pub fn sh_rest_grad<F: Real>(
    mean: Vec3<F>,
    center: Vec3<F>,
    coeffs: usize,
    visible: bool,
    grad_color: [F; 3],
    clamped: [bool; 3],
    out: &mut [F],
) {
    out.fill(F::zero());
    if !visible || coeffs <= 1 {
        return;
    }
    let g = masked(grad_color, clamped);
    let (dir, _) = view_dir(mean, center);
    let mut b = [F::zero(); 16];
    sh::basis(dir, coeffs, &mut b);
    for k in 1..coeffs.min(out.len() / 3 + 1) {
        for ch in 0..3 {
            out[(k - 1) * 3 + ch] = F::zero() + b[k] * g[ch];
        }
    }
}
