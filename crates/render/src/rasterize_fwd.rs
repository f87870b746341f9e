//! The rasterize forward stage: front-to-back alpha blending, tile by tile.
//!
//! For each pixel (centre `p`) and each Gaussian of its tile's list in order, with `d = mean2d - p` and conic
//! `(a, b, c)`:
//! `power = -0.5 (a dx^2 + c dy^2) - b dx dy`; skip if `power > 0`;
//! `alpha = min(0.99, opacity exp(power))`; skip if `alpha < 1/255` (decided without `exp` where the
//! power is under the Gaussian's floor, see [`CutoffsF::power_floor`]: the same result, much faster on
//! trained scenes, where most pairs lie far outside the ellipse or belong to faint Gaussians);
//! stop before the step that would bring `T` below `1e-4`; otherwise `C += colour alpha T`, `T *= 1 - alpha`.
//! Finally `C += T background`. The final `T` and the count of list entries up to the last blended one are
//! kept for the backward.

use rayon::prelude::*;
use splat_core::{Real, TileGrid, TILE_SIZE};

use crate::types::{Bins, Cutoffs, Projected, RasterOutput, RenderSettings};

/// Floating-point operations per evaluated (pixel, Gaussian) pair, a fused multiply-add counting 2 as in
/// the measured peak: offset 2, power 8, exp 20 (as the fast kernels compute it, `simd::exp_neg`: the
/// reduction in 3 multiply-adds and a subtraction, a degree-6 polynomial in 6 multiply-adds, the scale
/// multiply), alpha 1, transmittance 2, colour 7 (`alpha T`, 3 multiply-adds). Pairs skipped after the
/// power test cost less, so FLOPs estimated with this are an upper bound. (Sessions before the 5th
/// counted 32, with exp as 10.)
pub const FLOPS_PER_PAIR: f64 = 40.0;

/// The cutoffs converted to the stage's scalar type.
#[derive(Clone, Copy, Debug)]
pub struct CutoffsF<F> {
    pub alpha_min: F,
    pub alpha_max: F,
    pub transmittance_min: F,
}

/// The margin of [`CutoffsF::power_floor`]: a factor `e^-0.01 = 0.990` on alpha, far above the rounding
/// of `ln`, `exp` and the products (a few units in the last place of the scalar type).
const FLOOR_MARGIN: f64 = 0.01;

impl<F: Real> CutoffsF<F> {
    pub fn new(c: &Cutoffs) -> Self {
        CutoffsF {
            alpha_min: F::c(c.alpha_min),
            alpha_max: F::c(c.alpha_max),
            transmittance_min: F::c(c.transmittance_min),
        }
    }

    /// The power below which a Gaussian of this opacity is sure to fail the `alpha_min` test, however
    /// `exp` rounds: `ln(alpha_min / opacity)` less [`FLOOR_MARGIN`], so under it `opacity exp(power)` is
    /// at most `0.99 alpha_min`. A pair under its Gaussian's floor is skipped without calling `exp`,
    /// with the same bits: on a trained scene most pairs of a tile's list lie outside the Gaussian's
    /// ellipse, and after an opacity reset (opacity 0.01, floor -0.95) most of the rest too. A zero
    /// opacity gives `+inf` (every pair skipped: its alpha is 0); NaN or negative opacities give NaN
    /// and `alpha_min = 0` gives `-inf`, which skip nothing (the full test decides).
    #[inline]
    pub fn power_floor(&self, opacity: F) -> F {
        (self.alpha_min / opacity).ln() - F::c(FLOOR_MARGIN)
    }

    /// [`Self::power_floor`] of every Gaussian of `projected`, indexed by Gaussian id.
    pub fn power_floors(&self, projected: &Projected<F>) -> Vec<F> {
        projected
            .opacities
            .par_iter()
            .map(|&o| self.power_floor(o))
            .collect()
    }
}

/// `power` of a Gaussian at offset `d = mean2d - pixel`.
#[inline(always)]
pub fn gaussian_power<F: Real>(conic: [F; 3], d: [F; 2]) -> F {
    F::c(-0.5) * (conic[0] * d[0] * d[0] + conic[2] * d[1] * d[1]) - conic[1] * d[0] * d[1]
}

/// Renders `projected` with the tile lists in `bins` into `out`, writing every pixel.
///
/// Rows of tiles run in parallel (each owns its 16 image rows, which are contiguous in every output
/// array); every pixel is computed by the same code as on one thread, so the result does not depend on
/// the thread count (tested bitwise).
pub fn rasterize_forward<F: Real>(
    projected: &Projected<F>,
    bins: &Bins,
    grid: &TileGrid,
    settings: &RenderSettings,
    out: &mut RasterOutput<F>,
) {
    out.resize(grid.width, grid.height);
    let cut = CutoffsF::<F>::new(&settings.cutoffs);
    let floors = cut.power_floors(projected);
    let bg = settings.background.map(|v| F::c(v as f64));
    let w = grid.width as usize;
    let band = (TILE_SIZE as usize * w).max(1);
    out.image
        .par_chunks_mut(band * 3)
        .zip(out.final_transmittance.par_chunks_mut(band))
        .zip(out.n_contrib.par_chunks_mut(band))
        .enumerate()
        .for_each(|(ty, ((image, final_t), n_contrib))| {
            let first_row = ty * TILE_SIZE as usize;
            for tx in 0..grid.tiles_x as usize {
                let tile = ty * grid.tiles_x as usize + tx;
                let [start, end] = bins.tile_ranges[tile];
                let list = &bins.gaussian_ids[start as usize..end as usize];
                let (x0, y0, x1, y1) = grid.tile_pixels(tile);
                for py in y0..y1 {
                    for px in x0..x1 {
                        let (rgb, t, last) = blend_pixel(projected, &floors, list, &cut, px, py);
                        let pixel = (py as usize - first_row) * w + px as usize;
                        for ch in 0..3 {
                            image[pixel * 3 + ch] = rgb[ch] + t * bg[ch];
                        }
                        final_t[pixel] = t;
                        n_contrib[pixel] = last;
                    }
                }
            }
        });
}

/// One pixel's front-to-back blend over its tile's `list`: colour (before the background), final
/// transmittance, and the count of list entries up to the last one blended.
#[inline]
fn blend_pixel<F: Real>(
    projected: &Projected<F>,
    power_floors: &[F],
    list: &[u32],
    cut: &CutoffsF<F>,
    px: u32,
    py: u32,
) -> ([F; 3], F, u32) {
    let pix = [F::c(px as f64 + 0.5), F::c(py as f64 + 0.5)];
    let mut t = F::one();
    let mut rgb = [F::zero(); 3];
    let mut last = 0u32;
    for (k, &id) in list.iter().enumerate() {
        let id = id as usize;
        let m = projected.means2d[id];
        let power = gaussian_power(projected.conics[id], [m[0] - pix[0], m[1] - pix[1]]);
        if power > F::zero() {
            continue;
        }
        if power < power_floors[id] {
            continue;
        }
        let o = projected.opacities[id];
        let alpha = (o * power.exp()).min(cut.alpha_max);
        if alpha < cut.alpha_min {
            continue;
        }
        let next_t = t * (F::one() - alpha);
        if next_t < cut.transmittance_min {
            break;
        }
        let c = projected.colors[id];
        for ch in 0..3 {
            rgb[ch] += c[ch] * alpha * t;
        }
        t = next_t;
        last = k as u32 + 1;
    }
    (rgb, t, last)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The floor's promise, checked where it is tightest (powers from just under the floor down by
    /// 2%, in relative steps of 1e-6, a few f32 ulps), for both scalar types, a few cutoffs and
    /// opacities from subnormal to above 1: a pair under its floor fails the alpha test. Opacities it
    /// cannot vouch for skip nothing.
    fn pairs_under_the_floor_fail_the_alpha_test<F: Real>() {
        for alpha_min in [1.0 / 255.0, 0.01, 0.5, 1e-6] {
            let cut = CutoffsF::<F>::new(&Cutoffs {
                alpha_min,
                ..Cutoffs::default()
            });
            for o in [
                1e-42, 1e-30, 1e-6, 0.003, 0.01, 0.3, 0.999_999, 1.0, 1.000_001, 7.0, 1e3,
            ] {
                let o = F::c(o);
                let floor = cut.power_floor(o);
                if !floor.is_finite() {
                    // `alpha_min / o` overflowed: o is subnormal, and so is its alpha.
                    assert!(floor == F::c(f64::INFINITY) && o < cut.alpha_min);
                    continue;
                }
                // A floor above 0 skips every pair with power <= 0 (those above 0 are skipped first).
                let mut power = floor.min(F::zero());
                for _ in 0..20_000 {
                    power = power - power.abs().max(F::c(1e-30)) * F::c(1e-6);
                    let alpha = (o * power.exp()).min(cut.alpha_max);
                    assert!(
                        alpha < cut.alpha_min,
                        "alpha_min {alpha_min}, opacity {o:?}: alpha {alpha:?} at {power:?}"
                    );
                }
                // Over the floor by twice the margin, the pair passes (the floor is not far too low).
                let above = floor + F::c(2.0 * FLOOR_MARGIN);
                if above <= F::zero() {
                    assert!((o * above.exp()).min(cut.alpha_max) >= cut.alpha_min);
                }
            }
            assert_eq!(cut.power_floor(F::zero()), F::c(f64::INFINITY));
            for o in [f64::NAN, -0.5, -0.0, f64::INFINITY] {
                let floor = cut.power_floor(F::c(o));
                assert!(!(F::c(-1e30) < floor), "opacity {o}: floor {floor:?}");
            }
        }
        let no_cutoff = CutoffsF::<F>::new(&Cutoffs {
            alpha_min: 0.0,
            ..Cutoffs::default()
        });
        assert_eq!(no_cutoff.power_floor(F::c(0.5)), F::c(f64::NEG_INFINITY));
    }

    #[test]
    fn pairs_under_the_floor_fail_the_alpha_test_f32() {
        pairs_under_the_floor_fail_the_alpha_test::<f32>();
    }

    #[test]
    fn pairs_under_the_floor_fail_the_alpha_test_f64() {
        pairs_under_the_floor_fail_the_alpha_test::<f64>();
    }
}
