//! The rasterize backward stage: per pixel, walk the blended list back to front, recovering the
//! transmittance before each Gaussian from the final one (`T_i = T_{i+1} / (1 - alpha_i)`).
//!
//! With `S_i = sum_{j > i} c_j alpha_j T_j + T_final bg` (everything behind Gaussian `i`), the pixel colour
//! `C` has `dC/dc_i = alpha_i T_i` and `dC/dalpha_i = c_i T_i - S_i / (1 - alpha_i)`. Then
//! `alpha = min(0.99, o G)`, `G = exp(power)`: where the clamp is active alpha is constant, so its gradient
//! is exactly zero there (the original code ignores the clamp; we do not). The gradient of `power` goes to
//! the 2D mean (`d = mean2d - pixel`) and the conic.

use splat_core::{Real, TileGrid};

use crate::rasterize_fwd::{gaussian_power, CutoffsF};
use crate::types::{Bins, Projected, ProjectedGrads, RasterOutput, RenderSettings};

/// Floating-point operations per evaluated (pixel, Gaussian) pair, a fused multiply-add counting 2 as in
/// the measured peak: offset and power 10, exp 20 (see the forward's count), alpha 1, transmittance
/// recovery 3 (`1 - alpha`, its reciprocal, the product), `alpha T_i` 1, and per channel 9 (the colour
/// gradient's multiply-add, the alpha gradient's `c T_i - S / (1 - alpha)` and multiply-add, the `behind`
/// sum's multiply-add), then opacity and power 4, 2D mean 10, conic 11: 87. (Sessions before the 5th
/// counted 71.)
pub const FLOPS_PER_PAIR: f64 = 87.0;

/// Accumulates into `out` the gradients with respect to the projected quantities, given the gradient of the
/// loss with respect to every image value (`grad_image`, same layout as the image).
pub fn rasterize_backward<F: Real>(
    projected: &Projected<F>,
    bins: &Bins,
    grid: &TileGrid,
    settings: &RenderSettings,
    raster: &RasterOutput<F>,
    grad_image: &[F],
    out: &mut ProjectedGrads<F>,
) {
    assert_eq!(grad_image.len(), raster.image.len(), "grad_image size");
    out.reset(projected.len());
    let cut = CutoffsF::<F>::new(&settings.cutoffs);
    let bg = settings.background.map(|v| F::c(v as f64));
    for tile in 0..grid.num_tiles() {
        let [start, _] = bins.tile_ranges[tile];
        let (x0, y0, x1, y1) = grid.tile_pixels(tile);
        for py in y0..y1 {
            for px in x0..x1 {
                let pixel = py as usize * grid.width as usize + px as usize;
                let pix = [F::c(px as f64 + 0.5), F::c(py as f64 + 0.5)];
                let g_pix = [0, 1, 2].map(|ch| grad_image[pixel * 3 + ch]);
                let t_final = raster.final_transmittance[pixel];
                let n = raster.n_contrib[pixel] as usize;
                let list = &bins.gaussian_ids[start as usize..start as usize + n];
                let mut t = t_final;
                let mut behind = bg.map(|b| b * t_final);
                for &id in list.iter().rev() {
                    let id = id as usize;
                    let m = projected.means2d[id];
                    let conic = projected.conics[id];
                    let d = [m[0] - pix[0], m[1] - pix[1]];
                    let power = gaussian_power(conic, d);
                    if power > F::zero() {
                        continue;
                    }
                    let g = power.exp();
                    let o = projected.opacities[id];
                    let alpha_raw = o * g;
                    let alpha = alpha_raw.min(cut.alpha_max);
                    if alpha < cut.alpha_min {
                        continue;
                    }
                    let one_minus = F::one() - alpha;
                    let t_i = t / one_minus;
                    let c = projected.colors[id];
                    let mut grad_alpha = F::zero();
                    for ch in 0..3 {
                        out.grad_colors[id][ch] += alpha * t_i * g_pix[ch];
                        grad_alpha += g_pix[ch] * (c[ch] * t_i - behind[ch] / one_minus);
                        behind[ch] += c[ch] * alpha * t_i;
                    }
                    t = t_i;
                    if alpha_raw > cut.alpha_max {
                        continue;
                    }
                    out.grad_opacities[id] += grad_alpha * g;
                    let grad_power = grad_alpha * o * g;
                    let gm = &mut out.grad_means2d[id];
                    gm[0] += grad_power * (-conic[0] * d[0] - conic[1] * d[1]);
                    gm[1] += grad_power * (-conic[2] * d[1] - conic[1] * d[0]);
                    let gc = &mut out.grad_conics[id];
                    gc[0] += grad_power * F::c(-0.5) * d[0] * d[0];
                    gc[1] -= grad_power * d[0] * d[1];
                    gc[2] += grad_power * F::c(-0.5) * d[1] * d[1];
                }
            }
        }
    }
}
