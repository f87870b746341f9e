//! A brute-force renderer, the twin of the tiled path: no binning, no ranges; every pixel visits every
//! visible Gaussian in global depth order.
//!
//! It implements the same image function as the tiled path. That function includes the original 3DGS's
//! support rule: a Gaussian reaches a pixel only when the pixel's tile is inside the Gaussian's tile
//! rectangle (its 3-sigma square rounded out to tiles). The 3-sigma cut is part of the original algorithm
//! (a Gaussian can still have alpha >= 1/255 beyond it), so the twin must apply it too to agree. The
//! bin's exact ellipse test ([`splat_core::Footprint`]) is not applied here: it only leaves out tiles
//! where no pixel blends the Gaussian, and the tiled path matching this twin is what shows it.

use std::cmp::Ordering;

use splat_core::{Real, TileGrid, TILE_SIZE};

use crate::types::{Projected, RasterOutput, RenderSettings};

/// Renders `projected` by brute force into `out` (image and final transmittance; `n_contrib` is left at 0,
/// since list positions do not exist here).
pub fn render_brute_force<F: Real>(
    projected: &Projected<F>,
    grid: &TileGrid,
    settings: &RenderSettings,
    out: &mut RasterOutput<F>,
) {
    out.resize(grid.width, grid.height);
    let mut order: Vec<usize> = (0..projected.len())
        .filter(|&i| projected.radii[i] > 0)
        .collect();
    order.sort_by(|&a, &b| {
        projected.depths[a]
            .partial_cmp(&projected.depths[b])
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(&b))
    });
    let alpha_min = F::c(settings.cutoffs.alpha_min);
    let alpha_max = F::c(settings.cutoffs.alpha_max);
    let t_min = F::c(settings.cutoffs.transmittance_min);
    for py in 0..grid.height {
        for px in 0..grid.width {
            let (tx, ty) = (px / TILE_SIZE, py / TILE_SIZE);
            let (cx, cy) = (F::c(px as f64 + 0.5), F::c(py as f64 + 0.5));
            let mut transmittance = F::one();
            let mut acc = [F::zero(); 3];
            for &i in &order {
                if !projected.tile_rects[i].contains(tx, ty) {
                    continue;
                }
                let [mx, my] = projected.means2d[i];
                let (dx, dy) = (mx - cx, my - cy);
                let [a, b, c] = projected.conics[i];
                let power = -(a * dx * dx + c * dy * dy) / F::c(2.0) - b * dx * dy;
                if power > F::zero() {
                    continue;
                }
                let alpha = alpha_max.min(projected.opacities[i] * power.exp());
                if alpha < alpha_min {
                    continue;
                }
                let after = transmittance * (F::one() - alpha);
                if after < t_min {
                    break;
                }
                for ch in 0..3 {
                    acc[ch] += projected.colors[i][ch] * alpha * transmittance;
                }
                transmittance = after;
            }
            let p = (py * grid.width + px) as usize;
            for ch in 0..3 {
                out.image[3 * p + ch] =
                    acc[ch] + transmittance * F::c(settings.background[ch] as f64);
            }
            out.final_transmittance[p] = transmittance;
            out.n_contrib[p] = 0;
        }
    }
}
