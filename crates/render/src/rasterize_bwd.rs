//! The rasterize backward stage: per pixel, walk the blended list back to front, recovering the
//! transmittance before each Gaussian from the final one (`T_i = T_{i+1} / (1 - alpha_i)`).
//!
//! With `S_i = sum_{j > i} c_j alpha_j T_j + T_final bg` (everything behind Gaussian `i`), the pixel colour
//! `C` has `dC/dc_i = alpha_i T_i` and `dC/dalpha_i = c_i T_i - S_i / (1 - alpha_i)`. Then
//! `alpha = min(0.99, o G)`, `G = exp(power)`: where the clamp is active alpha is constant, so its gradient
//! is exactly zero there (the original code ignores the clamp; we do not). The gradient of `power` goes to
//! the 2D mean (`d = mean2d - pixel`) and the conic.

use rayon::prelude::*;
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
///
/// Every (pixel, Gaussian) pair's terms are added to the Gaussian's gradients in one fixed order: tile by
/// tile, pixel by pixel, back to front. With more than one thread, rows of tiles compute their pairs'
/// terms in parallel into lists (a window of rows at a time), which are then added in that same order
/// on one thread: the same additions of the same values in the same order, so the same bits whatever the
/// thread count (tested).
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
    out.reset_for(projected.len(), settings.absgrad);
    let cut = CutoffsF::<F>::new(&settings.cutoffs);
    let sweep = Sweep {
        projected,
        power_floors: cut.power_floors(projected),
        bins,
        grid,
        raster,
        grad_image,
        cut,
        bg: settings.background.map(|v| F::c(v as f64)),
    };
    let threads = rayon::current_num_threads();
    if threads <= 1 {
        for tile in 0..grid.num_tiles() {
            sweep.tile(tile, |pair| pair.add_to(out));
        }
        return;
    }
    let (tiles_x, tiles_y) = (grid.tiles_x as usize, grid.tiles_y as usize);
    // A window of a few rows per thread bounds the lists' memory.
    let window = 2 * threads;
    let mut lists: Vec<Vec<PairGrads<F>>> = (0..window).map(|_| Vec::new()).collect();
    for first in (0..tiles_y).step_by(window) {
        let rows = window.min(tiles_y - first);
        lists[..rows]
            .par_iter_mut()
            .enumerate()
            .for_each(|(r, list)| {
                list.clear();
                let ty = first + r;
                for tile in ty * tiles_x..(ty + 1) * tiles_x {
                    sweep.tile(tile, |pair| list.push(pair));
                }
            });
        for list in &lists[..rows] {
            for pair in list {
                pair.add_to(out);
            }
        }
    }
}

/// What one (pixel, Gaussian) pair adds to the Gaussian's gradients.
#[derive(Clone, Copy, Debug)]
struct PairGrads<F> {
    id: u32,
    color: [F; 3],
    /// Whether alpha is below its clamp: only then do the opacity, mean and conic terms exist.
    free: bool,
    opacity: F,
    mean2d: [F; 2],
    /// Added to the conic gradient, except the middle term, which is subtracted.
    conic: [F; 3],
}

impl<F: Real> PairGrads<F> {
    #[inline]
    fn add_to(&self, out: &mut ProjectedGrads<F>) {
        let id = self.id as usize;
        for ch in 0..3 {
            out.grad_colors[id][ch] += self.color[ch];
        }
        if !self.free {
            return;
        }
        out.grad_opacities[id] += self.opacity;
        let gm = &mut out.grad_means2d[id];
        gm[0] += self.mean2d[0];
        gm[1] += self.mean2d[1];
        if let Some(ga) = out.abs_grad_means2d.get_mut(id) {
            ga[0] += self.mean2d[0].abs();
            ga[1] += self.mean2d[1].abs();
        }
        let gc = &mut out.grad_conics[id];
        gc[0] += self.conic[0];
        gc[1] -= self.conic[1];
        gc[2] += self.conic[2];
    }
}

/// What every tile's backward sweep reads.
struct Sweep<'a, F> {
    projected: &'a Projected<F>,
    /// [`CutoffsF::power_floor`] per Gaussian, as in the forward (the two skip alike).
    power_floors: Vec<F>,
    bins: &'a Bins,
    grid: &'a TileGrid,
    raster: &'a RasterOutput<F>,
    grad_image: &'a [F],
    cut: CutoffsF<F>,
    bg: [F; 3],
}

impl<F: Real> Sweep<'_, F> {
    /// Hands `emit` every pair of `tile`'s pixels, pixel by pixel, each pixel's list back to front.
    fn tile(&self, tile: usize, mut emit: impl FnMut(PairGrads<F>)) {
        let (projected, cut) = (self.projected, &self.cut);
        let [start, _] = self.bins.tile_ranges[tile];
        let (x0, y0, x1, y1) = self.grid.tile_pixels(tile);
        for py in y0..y1 {
            for px in x0..x1 {
                let pixel = py as usize * self.grid.width as usize + px as usize;
                let pix = [F::c(px as f64 + 0.5), F::c(py as f64 + 0.5)];
                let g_pix = [0, 1, 2].map(|ch| self.grad_image[pixel * 3 + ch]);
                let t_final = self.raster.final_transmittance[pixel];
                let n = self.raster.n_contrib[pixel] as usize;
                let list = &self.bins.gaussian_ids[start as usize..start as usize + n];
                let mut t = t_final;
                let mut behind = self.bg.map(|b| b * t_final);
                for &id in list.iter().rev() {
                    let m = projected.means2d[id as usize];
                    let conic = projected.conics[id as usize];
                    let d = [m[0] - pix[0], m[1] - pix[1]];
                    let power = gaussian_power(conic, d);
                    if power > F::zero() {
                        continue;
                    }
                    if power < self.power_floors[id as usize] {
                        continue;
                    }
                    let o = projected.opacities[id as usize];
                    let g = power.exp();
                    let alpha_raw = o * g;
                    let alpha = alpha_raw.min(cut.alpha_max);
                    if alpha < cut.alpha_min {
                        continue;
                    }
                    let one_minus = F::one() - alpha;
                    let t_i = t / one_minus;
                    let c = projected.colors[id as usize];
                    let mut pair = PairGrads {
                        id,
                        color: [F::zero(); 3],
                        free: false,
                        opacity: F::zero(),
                        mean2d: [F::zero(); 2],
                        conic: [F::zero(); 3],
                    };
                    let mut grad_alpha = F::zero();
                    for ch in 0..3 {
                        pair.color[ch] = alpha * t_i * g_pix[ch];
                        grad_alpha += g_pix[ch] * (c[ch] * t_i - behind[ch] / one_minus);
                        behind[ch] += c[ch] * alpha * t_i;
                    }
                    t = t_i;
                    // Not `<=`: a NaN alpha_raw (clamped to alpha_max by `min`) keeps its terms.
                    if !(alpha_raw > cut.alpha_max) {
                        pair.free = true;
                        pair.opacity = grad_alpha * g;
                        let grad_power = grad_alpha * o * g;
                        pair.mean2d = [
                            grad_power * (-conic[0] * d[0] - conic[1] * d[1]),
                            grad_power * (-conic[2] * d[1] - conic[1] * d[0]),
                        ];
                        pair.conic = [
                            grad_power * F::c(-0.5) * d[0] * d[0],
                            grad_power * d[0] * d[1],
                            grad_power * F::c(-0.5) * d[1] * d[1],
                        ];
                    }
                    emit(pair);
                }
            }
        }
    }
}
