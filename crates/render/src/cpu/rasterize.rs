//! Parallel rasterization over bands of 16 image rows, with per-tile culling and per-intersection gradients.

use rayon::prelude::*;
use splat_core::{TileGrid, TILE_SIZE};

use super::simd::{self, Cut, SimdLevel, TileGaussian, TileGradIn, TileOut};
use crate::rasterize_fwd::{gaussian_power, CutoffsF};
use crate::types::{Bins, Projected, ProjectedGrads, RasterOutput, RenderSettings};

pub use super::cull::{
    cull_half_widths, cull_pixels, range_misses_tile, tile_cull, visible_extent, visible_rows,
    CullTable, Extent, PixelRange, REACHES_ON,
};

const PREFETCH_AHEAD: usize = 8;

/// Gathers the entries of a tile's list that survive the tile cull into `out`. Branch-free (about a
/// quarter are culled on fern, in no predictable pattern): each block of the list is written whole to a
/// small buffer, the count advancing by whether an entry survived, and only the survivors are appended,
/// so `out` grows (and its pages are touched) no further than the survivors need.
fn gather(
    culls: &CullTable,
    list: &[u32],
    rect: (u32, u32, u32, u32),
    out: &mut Vec<TileGaussian>,
) {
    const BLOCK: usize = 64;
    let (_, y0, _, y1) = rect;
    out.clear();
    let mut block = [TileGaussian::default(); BLOCK];
    for (b, ids) in list.chunks(BLOCK).enumerate() {
        let mut n = 0;
        for (j, &id) in ids.iter().enumerate() {
            let pos = b * BLOCK + j;
            // The records are read in depth order, so at random: ask for one a few entries ahead.
            if let Some(&ahead) = list.get(pos + PREFETCH_AHEAD) {
                simd::prefetch(&culls.records[ahead as usize]);
            }
            let r = &culls.records[id as usize];
            let (top, bottom) = visible_rows(&r.pixels, y0, y1);
            block[n.min(j)] = TileGaussian {
                mean: r.mean,
                conic: r.conic,
                opacity: r.opacity,
                color: r.color,
                power_skip: r.power_skip,
                pos: pos as u32,
                rows: [top, bottom],
            };
            n += !range_misses_tile(&r.pixels, rect) as usize;
        }
        out.extend_from_slice(&block[..n]);
    }
}

fn cut_of(settings: &RenderSettings) -> Cut {
    let c = CutoffsF::<f32>::new(&settings.cutoffs);
    Cut {
        alpha_min: c.alpha_min,
        alpha_max: c.alpha_max,
        t_min: c.transmittance_min,
        bg: settings.background,
    }
}

/// Reusable scratch of one band (row of tiles): a steady-state step allocates nothing.
#[derive(Default)]
pub struct BandScratch {
    /// Gathered entries of the current tile (capacity for the band's longest list).
    gathered: Vec<TileGaussian>,
    acc: Vec<[f32; 9]>,
    acc_abs: Vec<[f32; 2]>,
    tile_out: Box<TileOut>,
    grad_in: Box<TileGradIn>,
}

impl std::fmt::Debug for BandScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BandScratch")
            .field("capacity", &self.gathered.capacity())
            .finish()
    }
}

/// One scratch per band (row of tiles), each with room for the longest tile list of its band plus a
/// quarter (so lists that grow slowly during training do not reallocate every few steps).
fn ensure_scratch(scratch: &mut Vec<BandScratch>, grid: &TileGrid, bins: &Bins) {
    let (tiles_x, bands) = (grid.tiles_x as usize, grid.tiles_y as usize);
    if scratch.len() < bands {
        scratch.resize_with(bands, BandScratch::default);
    }
    for (band, sc) in scratch.iter_mut().take(bands).enumerate() {
        let longest = bins.tile_ranges[band * tiles_x..(band + 1) * tiles_x]
            .iter()
            .map(|r| (r[1] - r[0]) as usize)
            .max()
            .unwrap_or(0);
        if sc.gathered.capacity() < longest || sc.acc.capacity() < longest {
            // Reserved, not written: pages no tile reaches cost no memory.
            let room = longest + longest / 4;
            sc.gathered.reserve(room.saturating_sub(sc.gathered.len()));
            sc.acc.reserve(room.saturating_sub(sc.acc.len()));
        }
    }
}

/// Forward with the kernels of `level`; the `Scalar` level is the reference's per-pixel arithmetic and
/// bit-identical to it.
pub fn forward(
    level: SimdLevel,
    projected: &Projected<f32>,
    bins: &Bins,
    grid: &TileGrid,
    settings: &RenderSettings,
    culls: &mut CullTable,
    scratch: &mut Vec<BandScratch>,
    out: &mut RasterOutput<f32>,
) {
    out.resize(grid.width, grid.height);
    culls.fill(projected, settings.cutoffs.alpha_min);
    let culls = &*culls;
    ensure_scratch(scratch, grid, bins);
    let simd_cut = cut_of(settings);
    let cut = CutoffsF::<f32>::new(&settings.cutoffs);
    let w = grid.width as usize;
    let band = TILE_SIZE as usize * w;
    let RasterOutput {
        image,
        final_transmittance,
        n_contrib,
        ..
    } = out;
    image
        .par_chunks_mut(band * 3)
        .zip(final_transmittance.par_chunks_mut(band))
        .zip(n_contrib.par_chunks_mut(band))
        .zip(scratch.par_iter_mut())
        .enumerate()
        .for_each(|(ty, (((img, trans), contrib), sc))| {
            for tx in 0..grid.tiles_x as usize {
                let tile = ty * grid.tiles_x as usize + tx;
                let [start, end] = bins.tile_ranges[tile];
                let list = &bins.gaussian_ids[start as usize..end as usize];
                let rect = grid.tile_pixels(tile);
                let (x0, y0, x1, y1) = rect;
                gather(culls, list, rect, &mut sc.gathered);
                let gs = &sc.gathered[..];
                if level == SimdLevel::Scalar {
                    forward_tile_scalar(
                        gs,
                        rect,
                        &cut,
                        settings.background,
                        w,
                        img,
                        trans,
                        contrib,
                    );
                    continue;
                }
                let (tw, th) = ((x1 - x0) as usize, (y1 - y0) as usize);
                simd::forward(level, gs, x0, y0, tw, th, &simd_cut, &mut sc.tile_out);
                let to = &sc.tile_out;
                // Row by row: contiguous copies for the transmittance and counts, the colour planes
                // interleaved into the image's RGB.
                for ly in 0..th {
                    let (src, dst) = (ly * 16, ly * w + x0 as usize);
                    trans[dst..dst + tw].copy_from_slice(&to.t[src..src + tw]);
                    contrib[dst..dst + tw].copy_from_slice(&to.last[src..src + tw]);
                    let rgb = &mut img[dst * 3..(dst + tw) * 3];
                    for (lx, px) in rgb.chunks_exact_mut(3).enumerate() {
                        px.copy_from_slice(&[
                            to.rgb[0][src + lx],
                            to.rgb[1][src + lx],
                            to.rgb[2][src + lx],
                        ]);
                    }
                }
            }
        });
}

/// One tile, one pixel at a time, with the reference's arithmetic. `img`, `trans` and `contrib` are the
/// band's rows.
#[allow(clippy::too_many_arguments)]
fn forward_tile_scalar(
    local: &[TileGaussian],
    rect: (u32, u32, u32, u32),
    cut: &CutoffsF<f32>,
    bg: [f32; 3],
    w: usize,
    img: &mut [f32],
    trans: &mut [f32],
    contrib: &mut [u32],
) {
    let (x0, y0, x1, y1) = rect;
    for py in y0..y1 {
        for px in x0..x1 {
            let pix = [px as f32 + 0.5, py as f32 + 0.5];
            let mut t = 1.0f32;
            let mut rgb = [0.0f32; 3];
            let mut last = 0u32;
            for gs in local {
                let power = gaussian_power(gs.conic, [gs.mean[0] - pix[0], gs.mean[1] - pix[1]]);
                if power > 0.0 || power < gs.power_skip {
                    continue;
                }
                let alpha = (gs.opacity * power.exp()).min(cut.alpha_max);
                if alpha < cut.alpha_min {
                    continue;
                }
                let next_t = t * (1.0 - alpha);
                if next_t < cut.transmittance_min {
                    break;
                }
                for ch in 0..3 {
                    rgb[ch] += gs.color[ch] * alpha * t;
                }
                t = next_t;
                last = gs.pos + 1;
            }
            let p = (py - y0) as usize * w + px as usize;
            for ch in 0..3 {
                img[p * 3 + ch] = rgb[ch] + t * bg[ch];
            }
            trans[p] = t;
            contrib[p] = last;
        }
    }
}

/// Range of intersections covered by tile row `ty`.
fn band_range(bins: &Bins, grid: &TileGrid, ty: usize) -> (usize, usize) {
    let tx = grid.tiles_x as usize;
    let mut lo = usize::MAX;
    let mut hi = 0usize;
    for r in &bins.tile_ranges[ty * tx..(ty + 1) * tx] {
        if r[1] > r[0] {
            lo = lo.min(r[0] as usize);
            hi = hi.max(r[1] as usize);
        }
    }
    if lo == usize::MAX {
        (0, 0)
    } else {
        (lo, hi)
    }
}

/// A band's intersection records: the gradients and, with absgrad, the absolute mean2d sums (else
/// empty).
struct Slots<'a> {
    grads: &'a mut [[f32; 9]],
    abs: &'a mut [[f32; 2]],
}

impl<'a> Slots<'a> {
    fn split_at_mut(self, at: usize) -> (Slots<'a>, Slots<'a>) {
        let (gl, gr) = self.grads.split_at_mut(at);
        let (al, ar) = if self.abs.is_empty() {
            (Default::default(), Default::default())
        } else {
            self.abs.split_at_mut(at)
        };
        (Slots { grads: gl, abs: al }, Slots { grads: gr, abs: ar })
    }
}

/// Calls `f(band, slots, scratch)` in parallel for consecutive parts of `data` (band `i` owns
/// `bounds[i]..bounds[i + 1]`), splitting recursively with `rayon::join`: no heap allocation.
fn for_each_band<F>(
    data: Slots<'_>,
    bounds: &[usize],
    scratch: &mut [BandScratch],
    first: usize,
    f: &F,
) where
    F: Fn(usize, Slots<'_>, &mut BandScratch) + Sync,
{
    let parts = bounds.len() - 1;
    match parts {
        0 => {}
        1 => f(first, data, &mut scratch[0]),
        _ => {
            let mid = parts / 2;
            let (dl, dr) = data.split_at_mut(bounds[mid] - bounds[0]);
            let (sl, sr) = scratch.split_at_mut(mid);
            rayon::join(
                || for_each_band(dl, &bounds[..=mid], sl, first, f),
                || for_each_band(dr, &bounds[mid..], sr, first + mid, f),
            );
        }
    }
}

/// Reusable buffers of the backward.
#[derive(Debug, Default)]
pub struct BackwardScratch {
    /// Per intersection: grad mean2d (2), conic (3), colour (3), opacity (1).
    pub intersection_grads: Vec<[f32; 9]>,
    /// Per intersection with absgrad: the sums of |grad mean2d| over the tile's pixels.
    pub intersection_abs: Vec<[f32; 2]>,
    band_bounds: Vec<usize>,
}

#[allow(clippy::too_many_arguments)]
pub fn backward(
    level: SimdLevel,
    projected: &Projected<f32>,
    bins: &Bins,
    grid: &TileGrid,
    settings: &RenderSettings,
    raster: &RasterOutput<f32>,
    grad_image: &[f32],
    culls: &mut CullTable,
    bwd: &mut BackwardScratch,
    scratch: &mut Vec<BandScratch>,
    out: &mut ProjectedGrads<f32>,
) {
    culls.fill(projected, settings.cutoffs.alpha_min);
    let culls = &*culls;
    assert_eq!(grad_image.len(), raster.image.len(), "grad_image size");
    let tiles_y = grid.tiles_y as usize;
    ensure_scratch(scratch, grid, bins);
    let simd_cut = cut_of(settings);
    let cut = CutoffsF::<f32>::new(&settings.cutoffs);
    let bg = settings.background;
    let w = grid.width as usize;
    let total = bins.gaussian_ids.len();
    bwd.intersection_grads.clear();
    bwd.intersection_grads.resize(total, [0.0; 9]);
    let absgrad = settings.absgrad;
    bwd.intersection_abs.clear();
    if absgrad {
        bwd.intersection_abs.resize(total, [0.0; 2]);
    }

    band_bounds(&mut bwd.band_bounds, bins, grid);

    let bounds = &bwd.band_bounds;
    let band_fn = |ty: usize, mut slots: Slots<'_>, sc: &mut BandScratch| {
        let band_start = bounds[ty];
        for tx in 0..grid.tiles_x as usize {
            let tile = ty * grid.tiles_x as usize + tx;
            let [start, end] = bins.tile_ranges[tile];
            if end == start {
                continue;
            }
            let list = &bins.gaussian_ids[start as usize..end as usize];
            let rect = grid.tile_pixels(tile);
            let base = start as usize - band_start;
            gather(culls, list, rect, &mut sc.gathered);
            let gs = &sc.gathered[..];
            let n = gs.len();
            sc.acc.clear();
            sc.acc.resize(n, [0.0; 9]);
            sc.acc_abs.clear();
            if absgrad {
                sc.acc_abs.resize(n, [0.0; 2]);
            }
            if level == SimdLevel::Scalar {
                let acc = (&mut sc.acc[..], &mut sc.acc_abs[..]);
                backward_tile_scalar(gs, rect, &cut, bg, w, raster, grad_image, acc);
                store_tile(gs, base, sc, &mut slots);
                continue;
            }
            let (x0, y0, _, _) = rect;
            load_tile_inputs(&mut sc.grad_in, rect, raster, grad_image, w);
            let (inp, acc, acc_abs) = (&sc.grad_in, &mut sc.acc, &mut sc.acc_abs);
            if absgrad {
                simd::backward::<true>(level, gs, x0, y0, &simd_cut, inp, acc, acc_abs);
            } else {
                simd::backward::<false>(level, gs, x0, y0, &simd_cut, inp, acc, acc_abs);
            }
            store_tile(gs, base, sc, &mut slots);
        }
    };
    let slots = Slots {
        grads: &mut bwd.intersection_grads,
        abs: &mut bwd.intersection_abs,
    };
    for_each_band(slots, bounds, &mut scratch[..tiles_y], 0, &band_fn);

    sum_per_gaussian(bins, bwd, projected.len(), absgrad, out);
}

/// The first intersection of each row of tiles, and the end: tile lists are in tile order, so each
/// row of tiles owns a contiguous run of intersections.
fn band_bounds(bounds: &mut Vec<usize>, bins: &Bins, grid: &TileGrid) {
    bounds.clear();
    bounds.push(0);
    for ty in 0..grid.tiles_y as usize {
        let prev = *bounds.last().expect("non-empty");
        let (lo, hi) = band_range(bins, grid, ty);
        if hi == lo {
            bounds.push(prev);
        } else {
            assert_eq!(lo, prev, "tile lists are not in tile order");
            bounds.push(hi);
        }
    }
    assert_eq!(
        *bounds.last().expect("non-empty"),
        bins.gaussian_ids.len(),
        "intersections outside the tiles"
    );
}

/// The vector backward's per-pixel inputs of the tile `rect`, row by row; slots outside the image get
/// zero gradient and no contributors.
#[inline]
fn load_tile_inputs(
    inp: &mut TileGradIn,
    rect: (u32, u32, u32, u32),
    raster: &RasterOutput<f32>,
    grad_image: &[f32],
    w: usize,
) {
    let (x0, y0, x1, y1) = rect;
    let (tw, th) = ((x1 - x0) as usize, (y1 - y0) as usize);
    for ly in 0..16 {
        let (src, dst) = (ly * 16, (y0 as usize + ly) * w + x0 as usize);
        let cols = if ly < th { tw } else { 0 };
        if cols > 0 {
            inp.t_final[src..src + cols]
                .copy_from_slice(&raster.final_transmittance[dst..dst + cols]);
            inp.n_contrib[src..src + cols].copy_from_slice(&raster.n_contrib[dst..dst + cols]);
            let rgb = &grad_image[dst * 3..(dst + cols) * 3];
            for (lx, px) in rgb.chunks_exact(3).enumerate() {
                for ch in 0..3 {
                    inp.grad[ch][src + lx] = px[ch];
                }
            }
        }
        inp.t_final[src + cols..src + 16].fill(0.0);
        inp.n_contrib[src + cols..src + 16].fill(0);
        for ch in 0..3 {
            inp.grad[ch][src + cols..src + 16].fill(0.0);
        }
    }
}

/// Sums the intersections' gradients per Gaussian, in intersection order (the same bits on any
/// number of threads).
fn sum_per_gaussian(
    bins: &Bins,
    bwd: &BackwardScratch,
    n: usize,
    absgrad: bool,
    out: &mut ProjectedGrads<f32>,
) {
    out.reset_for(n, absgrad);
    // Sequentially, in intersection order (absgrad only: a statistic, not on the hot path by default).
    for (&id, a) in bins.gaussian_ids.iter().zip(&bwd.intersection_abs) {
        let sum = &mut out.abs_grad_means2d[id as usize];
        sum[0] += a[0];
        sum[1] += a[1];
    }
    // One range per thread: each range reads every intersection's gradients, so more ranges cost bandwidth.
    let parts = rayon::current_num_threads();
    let ProjectedGrads {
        grad_means2d,
        grad_conics,
        grad_colors,
        grad_opacities,
        ..
    } = out;
    reduce_ranges(
        &bins.gaussian_ids,
        &bwd.intersection_grads,
        GradRange {
            start: 0,
            means2d: grad_means2d,
            conics: grad_conics,
            colors: grad_colors,
            opacities: grad_opacities,
        },
        n.div_ceil(parts).max(1),
    );
}

/// Writes a tile's accumulated records into its intersections' slots (list order).
fn store_tile(gs: &[TileGaussian], base: usize, sc: &BandScratch, slots: &mut Slots<'_>) {
    for (k, g) in gs.iter().enumerate() {
        slots.grads[base + g.pos as usize] = sc.acc[k];
    }
    if !slots.abs.is_empty() {
        for (k, g) in gs.iter().enumerate() {
            slots.abs[base + g.pos as usize] = sc.acc_abs[k];
        }
    }
}

/// The gradients of Gaussians `start..start + len`.
struct GradRange<'a> {
    start: usize,
    means2d: &'a mut [[f32; 2]],
    conics: &'a mut [[f32; 3]],
    colors: &'a mut [[f32; 3]],
    opacities: &'a mut [f32],
}

/// Sums the intersections' gradients into their Gaussians' in intersection order. Ranges of Gaussians
/// of at most `chunk` are summed in parallel, each scanning every intersection for its own: a Gaussian's
/// sum is the same sequence of additions whatever the split, so the bits do not depend on the threads.
fn reduce_ranges(ids: &[u32], grads: &[[f32; 9]], r: GradRange<'_>, chunk: usize) {
    let len = r.opacities.len();
    if len > chunk {
        let mid = len / 2;
        let (m0, m1) = r.means2d.split_at_mut(mid);
        let (k0, k1) = r.conics.split_at_mut(mid);
        let (c0, c1) = r.colors.split_at_mut(mid);
        let (o0, o1) = r.opacities.split_at_mut(mid);
        let lo = GradRange {
            start: r.start,
            means2d: m0,
            conics: k0,
            colors: c0,
            opacities: o0,
        };
        let hi = GradRange {
            start: r.start + mid,
            means2d: m1,
            conics: k1,
            colors: c1,
            opacities: o1,
        };
        rayon::join(
            || reduce_ranges(ids, grads, lo, chunk),
            || reduce_ranges(ids, grads, hi, chunk),
        );
        return;
    }
    // Which intersections are this range's is a coin toss per entry, too random to branch on: each
    // block's are first listed without branches, then summed.
    const BLOCK: usize = 2048;
    let mut mine = [0u16; BLOCK];
    for (ids, grads) in ids.chunks(BLOCK).zip(grads.chunks(BLOCK)) {
        let mut n = 0;
        for (k, &id) in ids.iter().enumerate() {
            mine[n] = k as u16;
            // Wraps for ids below `start`, so one compare tests both ends.
            n += ((id as usize).wrapping_sub(r.start) < len) as usize;
        }
        for &k in &mine[..n] {
            let (i, g) = (ids[k as usize] as usize - r.start, &grads[k as usize]);
            r.means2d[i][0] += g[0];
            r.means2d[i][1] += g[1];
            r.conics[i][0] += g[2];
            r.conics[i][1] += g[3];
            r.conics[i][2] += g[4];
            r.colors[i][0] += g[5];
            r.colors[i][1] += g[6];
            r.colors[i][2] += g[7];
            r.opacities[i] += g[8];
        }
    }
}

/// One tile of the backward, one pixel at a time, with the reference's arithmetic.
#[allow(clippy::too_many_arguments)]
fn backward_tile_scalar(
    local: &[TileGaussian],
    rect: (u32, u32, u32, u32),
    cut: &CutoffsF<f32>,
    bg: [f32; 3],
    w: usize,
    raster: &RasterOutput<f32>,
    grad_image: &[f32],
    (acc, acc_abs): (&mut [[f32; 9]], &mut [[f32; 2]]),
) {
    let (x0, y0, x1, y1) = rect;
    for py in y0..y1 {
        for px in x0..x1 {
            let pixel = py as usize * w + px as usize;
            let pix = [px as f32 + 0.5, py as f32 + 0.5];
            let g_pix = [
                grad_image[pixel * 3],
                grad_image[pixel * 3 + 1],
                grad_image[pixel * 3 + 2],
            ];
            let t_final = raster.final_transmittance[pixel];
            let n = raster.n_contrib[pixel];
            let mut t = t_final;
            let mut behind = [bg[0] * t_final, bg[1] * t_final, bg[2] * t_final];
            // Entries blended at this pixel are those before position n.
            let count = local.partition_point(|g| g.pos < n);
            for (k, gs) in local[..count].iter().enumerate().rev() {
                let d = [gs.mean[0] - pix[0], gs.mean[1] - pix[1]];
                let power = gaussian_power(gs.conic, d);
                if power > 0.0 || power < gs.power_skip {
                    continue;
                }
                let g = power.exp();
                let alpha_raw = gs.opacity * g;
                let alpha = alpha_raw.min(cut.alpha_max);
                if alpha < cut.alpha_min {
                    continue;
                }
                let one_minus = 1.0 - alpha;
                let t_i = t / one_minus;
                let a = &mut acc[k];
                let mut grad_alpha = 0.0f32;
                for ch in 0..3 {
                    a[5 + ch] += alpha * t_i * g_pix[ch];
                    grad_alpha += g_pix[ch] * (gs.color[ch] * t_i - behind[ch] / one_minus);
                    behind[ch] += gs.color[ch] * alpha * t_i;
                }
                t = t_i;
                if alpha_raw > cut.alpha_max {
                    continue;
                }
                a[8] += grad_alpha * g;
                let grad_power = grad_alpha * gs.opacity * g;
                let c = gs.conic;
                let gm = [
                    grad_power * (-c[0] * d[0] - c[1] * d[1]),
                    grad_power * (-c[2] * d[1] - c[1] * d[0]),
                ];
                a[0] += gm[0];
                a[1] += gm[1];
                if let Some(sum) = acc_abs.get_mut(k) {
                    sum[0] += gm[0].abs();
                    sum[1] += gm[1].abs();
                }
                a[2] += grad_power * -0.5 * d[0] * d[0];
                a[3] -= grad_power * d[0] * d[1];
                a[4] += grad_power * -0.5 * d[1] * d[1];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random_projected(rng: &mut ChaCha8Rng, n: usize) -> Projected<f32> {
        let mut p = Projected::default();
        p.resize(n);
        for i in 0..n {
            p.means2d[i] = [
                rng.random_range(-20.0..200.0),
                rng.random_range(-20.0..200.0),
            ];
            let (sx, sy, r): (f32, f32, f32) = (
                rng.random_range(0.5..20.0),
                rng.random_range(0.5..20.0),
                rng.random_range(-0.9..0.9),
            );
            let det = sx * sx * sy * sy * (1.0 - r * r);
            p.conics[i] = [sy * sy / det, -r * sx * sy / det, sx * sx / det];
            p.opacities[i] = rng.random_range(0.001..1.0);
            p.colors[i] = [rng.random(), rng.random(), rng.random()];
        }
        p
    }

    /// A table refilled after its Gaussians changed (each input alone, the count up and down, another
    /// `alpha_min`) holds what a fresh table would: the reuse test misses nothing.
    #[test]
    fn refilled_cull_table_matches_a_fresh_one() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut p = random_projected(&mut rng, 300);
        let mut table = CullTable::default();
        table.fill(&p, 1.0 / 255.0);
        let check = |table: &CullTable, p: &Projected<f32>, alpha_min: f64, what: &str| {
            let mut fresh = CullTable::default();
            fresh.fill(p, alpha_min);
            assert_eq!(table.records, fresh.records, "{what}");
        };
        for i in (0..300).step_by(7) {
            p.means2d[i][0] += 37.0;
        }
        table.fill(&p, 1.0 / 255.0);
        check(&table, &p, 1.0 / 255.0, "means x");
        for i in (0..300).step_by(5) {
            p.means2d[i][1] -= 41.0;
        }
        table.fill(&p, 1.0 / 255.0);
        check(&table, &p, 1.0 / 255.0, "means y");
        for (k, i) in (0..300).step_by(11).enumerate() {
            p.conics[i][k % 3] *= 0.25;
        }
        table.fill(&p, 1.0 / 255.0);
        check(&table, &p, 1.0 / 255.0, "conics");
        for i in (0..300).step_by(3) {
            p.opacities[i] *= 0.5;
            p.colors[i][1] += 0.5;
        }
        table.fill(&p, 1.0 / 255.0);
        check(&table, &p, 1.0 / 255.0, "opacities and colours");
        table.fill(&p, 0.1);
        check(&table, &p, 0.1, "alpha_min");
        let q = random_projected(&mut rng, 120);
        table.fill(&q, 0.1);
        check(&table, &q, 0.1, "fewer");
        // A new Gaussian that looks like a blank record (all zero) must not pass for one.
        p.means2d[299] = [0.0; 2];
        p.conics[299] = [0.0; 3];
        p.opacities[299] = 0.0;
        table.fill(&p, 0.1);
        check(&table, &p, 0.1, "more");
    }
}
