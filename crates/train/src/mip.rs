//! Mip-Splatting's 3D smoothing filter (Yu et al. 2024): a Gaussian may not be smaller than what the
//! training cameras can resolve. Each Gaussian gets a filter size
//! `sigma_i = sqrt(0.2) d_i / f`, `d_i` the smallest camera-space depth over the training cameras that
//! see its centre (`z`, the distance for a fisheye; depth > 0.2, the projection inside the image with a
//! 15% margin; a Gaussian no camera
//! sees takes the largest `d` of those seen) and `f` the largest focal length in pixels. What is
//! rendered is the Gaussian convolved with an isotropic Gaussian of that size: per axis
//! `s_eff = sqrt(s^2 + sigma^2)` (exact for the isotropic filter: the covariance gains `sigma^2 I`, whose
//! eigenvectors are any) and opacity `o_eff = o sqrt(prod s^2 / prod (s^2 + sigma^2))`, which keeps
//! the Gaussian's integral.
//!
//! The trainer renders the effective parameters in place of the raw ones ([`apply`] overwrites the
//! log-scales and opacity logits, [`restore`] puts them back) and maps their gradients back with the
//! chain rule ([`chain_gradients`]):
//! `d ln s_eff / d ln s = s^2 / (s^2 + sigma^2)`, and with `c = o_eff / o`,
//! `d logit_eff / d logit = (1 - o) / (1 - o_eff)`, `d logit_eff / d ln s_k = sigma^2 / ((s_k^2 + sigma^2)
//! (1 - o_eff))`. The sizes are recomputed after every densification (or MCMC refine) and every 100
//! steps after densification stops (not in the last 100), as Mip-Splatting does; they are part of the
//! checkpoint. Exported files hold the effective values ([`baked`]): other renderers need no filter.

use splat_core::{logit, sigmoid, Gaussians, Real};
use splat_io::dataset::View;

/// `sigma = FILTER_SCALE * depth / focal`: sqrt(0.2).
pub const FILTER_VARIANCE: f64 = 0.2;
/// Depths at or below this do not count (the renderer's near plane).
pub const MIN_DEPTH: f64 = 0.2;
/// The image is widened by this fraction on every side for the visibility test.
pub const SCREEN_MARGIN: f64 = 0.15;

/// The filter size of every Gaussian for the training views.
pub fn filter_sizes(g: &Gaussians<f32>, views: &[View]) -> Vec<f32> {
    let n = g.len();
    let mut nearest = vec![f64::INFINITY; n];
    let mut focal = 0.0f64;
    for v in views {
        let c = &v.camera;
        focal = focal.max(c.fx).max(c.fy);
        let (w, h) = (c.width as f64, c.height as f64);
        for (i, m) in g.means.iter().enumerate() {
            let p = c.to_camera_space(m.map(|x| x as f64));
            let Some(([u, v], depth)) = c.project_camera_space(p) else {
                continue;
            };
            if !(depth > MIN_DEPTH) {
                continue;
            }
            let inside = u >= -SCREEN_MARGIN * w
                && u <= (1.0 + SCREEN_MARGIN) * w
                && v >= -SCREEN_MARGIN * h
                && v <= (1.0 + SCREEN_MARGIN) * h;
            if inside && depth < nearest[i] {
                nearest[i] = depth;
            }
        }
    }
    let farthest_seen = nearest
        .iter()
        .cloned()
        .filter(|d| d.is_finite())
        .fold(0.0f64, f64::max);
    let k = FILTER_VARIANCE.sqrt() / focal.max(f64::MIN_POSITIVE);
    nearest
        .iter()
        .map(|&d| (k * if d.is_finite() { d } else { farthest_seen }) as f32)
        .collect()
}

/// One Gaussian under a filter, with what the chain rule needs; computed in log space so that tiny
/// Gaussians under a wide filter (effective opacity far below f32's range) stay finite.
struct Filtered<F> {
    log_scales: [F; 3],
    logit: F,
    /// `s^2 / (s^2 + sigma^2)` per axis.
    kept: [F; 3],
    /// `1 - o` and `1 - o_eff`.
    one_minus_o: F,
    one_minus_o_eff: F,
}

fn filtered<F: Real>(log_scales: [F; 3], opacity_logit: F, sigma: F) -> Filtered<F> {
    let s2 = sigma * sigma;
    let half = F::c(0.5);
    let mut ln_c = F::zero();
    let mut kept = [F::zero(); 3];
    let mut eff = [F::zero(); 3];
    for k in 0..3 {
        let ls = log_scales[k];
        let var = (ls + ls).exp();
        let total = var + s2;
        kept[k] = var / total;
        // ln(var / total) = 2 ls - ln(total), finite even where var underflows.
        ln_c += half * (ls + ls - total.ln());
        eff[k] = half * total.ln();
    }
    let l = opacity_logit;
    // ln sigmoid(l) and 1 - sigmoid(l) = sigmoid(-l), both stable.
    let ln_o = l.min(F::zero()) - (F::one() + (-l.abs()).exp()).ln();
    let one_minus_o = sigmoid(-l);
    // 1 - o c = (1 - o) + o (1 - c).
    let one_minus_o_eff = one_minus_o + ln_o.exp() * -ln_c.exp_m1();
    Filtered {
        log_scales: eff,
        logit: ln_o + ln_c - one_minus_o_eff.ln(),
        kept,
        one_minus_o,
        one_minus_o_eff,
    }
}

/// The effective log-scales and opacity logit of one Gaussian under a filter of size `sigma`.
pub fn effective<F: Real>(log_scales: [F; 3], opacity_logit: F, sigma: F) -> ([F; 3], F) {
    let f = filtered(log_scales, opacity_logit, sigma);
    (f.log_scales, f.logit)
}

/// The raw values [`apply`] replaced, to put back with [`restore`] (buffers reused between steps).
#[derive(Clone, Debug, Default)]
pub struct Saved {
    log_scales: Vec<[f32; 3]>,
    opacity_logits: Vec<f32>,
}

/// Replaces the log-scales and opacity logits of `g` by their filtered values, keeping the raw ones in
/// `saved`.
pub fn apply(g: &mut Gaussians<f32>, sizes: &[f32], saved: &mut Saved) {
    assert_eq!(sizes.len(), g.len(), "a filter size per Gaussian");
    saved.log_scales.clone_from(&g.log_scales);
    saved.opacity_logits.clone_from(&g.opacity_logits);
    for (i, &sigma) in sizes.iter().enumerate() {
        let (ls, l) = effective(g.log_scales[i], g.opacity_logits[i], sigma);
        g.log_scales[i] = ls;
        g.opacity_logits[i] = l;
    }
}

/// Puts back what [`apply`] replaced.
pub fn restore(g: &mut Gaussians<f32>, saved: &Saved) {
    g.log_scales.copy_from_slice(&saved.log_scales);
    g.opacity_logits.copy_from_slice(&saved.opacity_logits);
}

/// Turns gradients with respect to the effective log-scales and opacity logits (of raw parameters
/// `log_scales`, `opacity_logits` with filter sizes `sizes`) into gradients with respect to the raw
/// ones, in place.
pub fn chain_gradients<F: Real>(
    log_scales: &[[F; 3]],
    opacity_logits: &[F],
    sizes: &[F],
    grad_log_scales: &mut [[F; 3]],
    grad_opacity_logits: &mut [F],
) {
    for i in 0..sizes.len() {
        let f = filtered(log_scales[i], opacity_logits[i], sizes[i]);
        let g_l = grad_opacity_logits[i];
        // d logit_eff / d ln c = 1 / (1 - o_eff); d ln c / d ln s_k = 1 - kept_k.
        let per_ln_c = g_l / f.one_minus_o_eff;
        for k in 0..3 {
            let kept = f.kept[k];
            grad_log_scales[i][k] = grad_log_scales[i][k] * kept + per_ln_c * (F::one() - kept);
        }
        grad_opacity_logits[i] = g_l * f.one_minus_o / f.one_minus_o_eff;
    }
}

/// The scene with the filter baked in (a copy; the input when there are no sizes).
pub fn baked(g: &Gaussians<f32>, sizes: &[f32]) -> Gaussians<f32> {
    let mut out = g.clone();
    if !sizes.is_empty() {
        let mut saved = Saved::default();
        apply(&mut out, sizes, &mut saved);
    }
    out
}

/// The opacity reset under the filter (Mip-Splatting's): the effective opacity becomes at most 0.01.
pub fn reset_opacity(g: &mut Gaussians<f32>, sizes: &[f32]) {
    for (i, &sigma) in sizes.iter().enumerate() {
        let (_, l_eff) = effective(g.log_scales[i], g.opacity_logits[i], sigma);
        let ratio = sigmoid(l_eff) / sigmoid(g.opacity_logits[i]);
        let target = sigmoid(l_eff).min(0.01) / ratio;
        g.opacity_logits[i] = logit(target.min(1.0 - f32::EPSILON));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_values_keep_the_integral_and_widen_to_the_filter() {
        let (ls, l) = effective([-6.0f64, -1.0, 0.5], 1.2, 0.05);
        let s = [-6.0f64, -1.0, 0.5].map(f64::exp);
        for k in 0..3 {
            let want = (s[k] * s[k] + 0.0025).sqrt();
            assert!((ls[k].exp() - want).abs() < 1e-14 * want);
        }
        // Opacity times volume is kept: o prod s = o_eff prod s_eff.
        let before = sigmoid(1.2f64) * s.iter().product::<f64>();
        let after = sigmoid(l) * ls.iter().map(|v| v.exp()).product::<f64>();
        assert!((before - after).abs() < 1e-12 * before);
        // No filter: nothing changes.
        let (ls0, l0) = effective([-1.0f64, 0.2, 0.3], -0.4, 0.0);
        assert!((ls0[0] + 1.0).abs() < 1e-15 && (l0 + 0.4).abs() < 1e-12);
    }

    #[test]
    fn tiny_gaussians_under_a_wide_filter_stay_finite() {
        let (ls, l) = effective([-60.0f32, -55.0, -70.0], -3.0, 0.01);
        assert!(
            ls.iter().all(|v| v.is_finite()) && l.is_finite() && l < -150.0,
            "{ls:?} {l}"
        );
        let (_, l1) = effective([0.0f32; 3], 20.0, 1e-6);
        assert!(l1.is_finite() && l1 > 15.0, "{l1}");
        let mut g = ([[1.0f32; 3]], [1.0f32]);
        chain_gradients(
            &[[-60.0, -55.0, -70.0]],
            &[-3.0],
            &[0.01],
            &mut g.0,
            &mut g.1,
        );
        assert!(g.0[0].iter().chain(&g.1).all(|v| v.is_finite()), "{g:?}");
    }

    #[test]
    fn chained_gradients_match_finite_differences() {
        // L = sum_k a_k ls_eff_k + b logit_eff: its raw gradient by the chain rule and by differences.
        let (a, b) = ([0.7f64, -1.3, 0.4], -0.9f64);
        let f = |ls: [f64; 3], l: f64, sigma: f64| {
            let (e, le) = effective(ls, l, sigma);
            a[0] * e[0] + a[1] * e[1] + a[2] * e[2] + b * le
        };
        for (ls, l, sigma) in [
            ([-3.0, -2.5, -4.0], 0.3, 0.04),
            ([-1.0, -6.0, -2.0], -2.0, 0.01),
            ([0.0, 0.1, -0.2], 3.0, 0.5),
        ] {
            let mut gls = [a];
            let mut gl = [b];
            chain_gradients(&[ls], &[l], &[sigma], &mut gls, &mut gl);
            let h = 1e-6;
            for k in 0..3 {
                let (mut p, mut m) = (ls, ls);
                p[k] += h;
                m[k] -= h;
                let fd = (f(p, l, sigma) - f(m, l, sigma)) / (2.0 * h);
                assert!(
                    (fd - gls[0][k]).abs() < 1e-8 * (1.0 + fd.abs()),
                    "{k}: {fd} vs {}",
                    gls[0][k]
                );
            }
            let fd = (f(ls, l + h, sigma) - f(ls, l - h, sigma)) / (2.0 * h);
            assert!(
                (fd - gl[0]).abs() < 1e-8 * (1.0 + fd.abs()),
                "logit: {fd} vs {}",
                gl[0]
            );
        }
    }
}
