//! Parallel rasterization over bands of 16 image rows, with per-tile culling and per-intersection gradients.

use rayon::prelude::*;
use splat_core::{TileGrid, TILE_SIZE};

use super::simd::{self, Cut, SimdLevel, TileData, TileGradIn, TileOut, TILE_PIXELS};
use crate::rasterize_fwd::{gaussian_power, CutoffsF};
use crate::types::{Bins, Projected, ProjectedGrads, RasterOutput, RenderSettings};

/// One Gaussian of a tile's list, gathered for cache-friendly access.
#[derive(Clone, Copy, Debug)]
struct TileGaussian {
    /// Position in the tile's full list (what `n_contrib` counts).
    pos: u32,
    mean: [f32; 2],
    conic: [f32; 3],
    opacity: f32,
    color: [f32; 3],
    /// Below this `power` the alpha is certainly under the 1/255 cut (with margin), so `exp` is skipped.
    power_skip: f32,
}

/// Where a Gaussian can reach `alpha >= alpha_min`.
pub enum Extent {
    /// Everywhere (no cut, or a degenerate conic).
    Unbounded,
    /// Nowhere (opacity below the cut).
    Invisible,
    /// Within these half-widths (x, y) of its centre, widened for rounding.
    Box(f64, f64),
}

/// The bounding box of the `alpha >= alpha_min` ellipse (see [`tile_cull`]).
pub fn visible_extent(conic: [f32; 3], opacity: f32, alpha_min: f64) -> Extent {
    if alpha_min <= 0.0 {
        return Extent::Unbounded;
    }
    let o = opacity as f64;
    if o < alpha_min {
        return Extent::Invisible;
    }
    let t2 = 2.0 * (o / alpha_min).ln();
    let [a, b, c] = conic.map(|v| v as f64);
    let det = a * c - b * b;
    if !(det > 0.0) {
        return Extent::Unbounded;
    }
    Extent::Box(
        (t2 * c / det).sqrt() * 1.01 + 0.01,
        (t2 * a / det).sqrt() * 1.01 + 0.01,
    )
}

/// Half-widths of the box where the Gaussian can reach `alpha_min`: infinite when unbounded, negative
/// infinite when invisible everywhere (so [`box_misses_tile`] always culls it).
pub fn cull_half_widths(conic: [f32; 3], opacity: f32, alpha_min: f64) -> [f64; 2] {
    match visible_extent(conic, opacity, alpha_min) {
        Extent::Unbounded => [f64::INFINITY; 2],
        Extent::Invisible => [f64::NEG_INFINITY; 2],
        Extent::Box(ex, ey) => [ex, ey],
    }
}

/// True when the box of half-widths `ext` around `mean` contains no pixel centre of `[x0, x1) x [y0, y1)`.
#[inline]
fn box_misses_tile(mean: [f32; 2], ext: [f64; 2], rect: (u32, u32, u32, u32)) -> bool {
    let (x0, y0, x1, y1) = rect;
    let (u, v) = (mean[0] as f64, mean[1] as f64);
    u + ext[0] < x0 as f64 + 0.5
        || u - ext[0] > x1 as f64 - 0.5
        || v + ext[1] < y0 as f64 + 0.5
        || v - ext[1] > y1 as f64 - 0.5
}

/// True when the Gaussian's alpha is below `alpha_min` at every pixel centre of the tile `[x0, x1) x [y0, y1)`.
///
/// `alpha >= alpha_min` needs `d^T Q d <= t2 = 2 ln(opacity / alpha_min)`, an ellipse whose bounding box has
/// half-widths `sqrt(t2 (Q^-1)_xx)` and `sqrt(t2 (Q^-1)_yy)`. The box is widened by 1% + 0.01 px so f32
/// rounding in the per-pixel test can never make a culled Gaussian visible. With `alpha_min = 0` nothing is
/// culled.
#[allow(clippy::too_many_arguments)]
pub fn tile_cull(
    mean: [f32; 2],
    conic: [f32; 3],
    opacity: f32,
    alpha_min: f64,
    x0: u32,
    y0: u32,
    x1: u32,
    y1: u32,
) -> bool {
    box_misses_tile(
        mean,
        cull_half_widths(conic, opacity, alpha_min),
        (x0, y0, x1, y1),
    )
}

/// `alpha < alpha_min` exactly when `power < ln(alpha_min / opacity)`; 0.01 of margin keeps f32 rounding of
/// the exact test on the same side, so skipping below this power never changes a result.
fn power_skip(opacity: f32, alpha_min: f64) -> f32 {
    if alpha_min > 0.0 {
        ((alpha_min / opacity as f64).ln() - 0.01) as f32
    } else {
        f32::NEG_INFINITY
    }
}

/// What the rasterizer reads of one Gaussian, packed into 48 bytes so that gathering a tile's list costs
/// one or two cache lines per entry instead of one per array (the lists are in depth order, so these reads
/// are random once a scene has more Gaussians than the caches hold).
#[derive(Clone, Copy, Debug, Default)]
struct RasterRecord {
    mean: [f32; 2],
    conic: [f32; 3],
    opacity: f32,
    color: [f32; 3],
    /// See [`power_skip`].
    power_skip: f32,
    /// Cull box half-widths ([`cull_half_widths`]) rounded up to f32 (still conservative).
    half_widths: [f32; 2],
}

/// Per-Gaussian rasterizer records, built once per pass with sequential reads (and one `ln` and two square
/// roots per Gaussian instead of per tile intersection).
#[derive(Debug, Default)]
pub struct CullTable {
    records: Vec<RasterRecord>,
}

/// Rounds up to f32 (infinities stay).
fn f32_up(x: f64) -> f32 {
    let y = x as f32;
    if (y as f64) < x {
        y.next_up()
    } else {
        y
    }
}

impl CullTable {
    fn fill(&mut self, projected: &Projected<f32>, alpha_min: f64) {
        const CHUNK: usize = 4096;
        self.records
            .resize(projected.len(), RasterRecord::default());
        self.records
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, records)| {
                for (j, r) in records.iter_mut().enumerate() {
                    let i = c * CHUNK + j;
                    let (conic, opacity) = (projected.conics[i], projected.opacities[i]);
                    let [ex, ey] = cull_half_widths(conic, opacity, alpha_min);
                    *r = RasterRecord {
                        mean: projected.means2d[i],
                        conic,
                        opacity,
                        color: projected.colors[i],
                        power_skip: power_skip(opacity, alpha_min),
                        half_widths: [f32_up(ex), f32_up(ey)],
                    };
                }
            });
    }
}

/// [`cull_half_widths`] rounded up to f32, as the rasterizer keeps them per Gaussian.
pub fn cull_half_widths_f32(conic: [f32; 3], opacity: f32, alpha_min: f64) -> [f32; 2] {
    cull_half_widths(conic, opacity, alpha_min).map(f32_up)
}

/// The tile cull the rasterizer runs per intersection, in f32: true when the box of half-widths `ext`
/// ([`cull_half_widths_f32`]) around `mean` contains no pixel centre of the tile. The half-widths carry
/// 1% + 0.01 px of margin over the true extent, far above f32's rounding of pixel coordinates, so it
/// stays conservative (tested against every pixel's alpha, like [`tile_cull`]).
#[inline]
pub fn box_misses_tile_f32(mean: [f32; 2], ext: [f32; 2], rect: (u32, u32, u32, u32)) -> bool {
    let (x0, y0, x1, y1) = rect;
    let ([u, v], [ex, ey]) = (mean, ext);
    u + ex < x0 as f32 + 0.5
        || u - ex > x1 as f32 - 0.5
        || v + ey < y0 as f32 + 0.5
        || v - ey > y1 as f32 - 0.5
}

/// The tile rows `top..=bottom` (0-based within the tile) whose pixel centres the box of half-height
/// `ey` around `mean_y` reaches, for a tile of rows `y0..y1` (all of them when unbounded). In f32, as
/// conservative as [`box_misses_tile_f32`].
#[inline]
pub fn visible_rows(mean_y: f32, ey: f32, y0: u32, y1: u32) -> (u8, u8) {
    let last_row = (y1 - y0 - 1) as f32;
    let my = mean_y - (y0 as f32 + 0.5);
    let top = (my - ey).ceil().clamp(0.0, last_row);
    let bottom = (my + ey).floor().min(last_row).max(top);
    (top as u8, bottom as u8)
}

/// Calls `f(position in the list, record)` for each entry of a tile's list that survives the tile cull.
fn for_each_survivor(
    culls: &CullTable,
    list: &[u32],
    rect: (u32, u32, u32, u32),
    mut f: impl FnMut(u32, &RasterRecord),
) {
    for (pos, &id) in list.iter().enumerate() {
        let r = &culls.records[id as usize];
        if !box_misses_tile_f32(r.mean, r.half_widths, rect) {
            f(pos as u32, r);
        }
    }
}

fn gather(
    culls: &CullTable,
    list: &[u32],
    rect: (u32, u32, u32, u32),
    out: &mut Vec<TileGaussian>,
) {
    out.clear();
    for_each_survivor(culls, list, rect, |pos, r| {
        out.push(TileGaussian {
            pos,
            mean: r.mean,
            conic: r.conic,
            opacity: r.opacity,
            color: r.color,
            power_skip: r.power_skip,
        });
    });
}

/// Like `gather`, into a structure of arrays for the vector kernels, with each Gaussian's visible rows.
fn gather_soa(culls: &CullTable, list: &[u32], rect: (u32, u32, u32, u32), td: &mut TileData) {
    td.clear();
    let (_, y0, _, y1) = rect;
    for_each_survivor(culls, list, rect, |pos, r| {
        let (top, bottom) = visible_rows(r.mean[1], r.half_widths[1], y0, y1);
        td.row0.push(top);
        td.row1.push(bottom);
        td.pos.push(pos);
        td.mx.push(r.mean[0]);
        td.my.push(r.mean[1]);
        td.ca.push(r.conic[0]);
        td.cb.push(r.conic[1]);
        td.cc.push(r.conic[2]);
        td.opacity.push(r.opacity);
        td.power_skip.push(r.power_skip);
        td.r.push(r.color[0]);
        td.g.push(r.color[1]);
        td.b.push(r.color[2]);
    });
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
    td: TileData,
    local: Vec<TileGaussian>,
    acc: Vec<[f32; 9]>,
    tile_out: Box<TileOut>,
    grad_in: Box<TileGradIn>,
}

impl std::fmt::Debug for BandScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BandScratch")
            .field("gathered", &self.td.len())
            .finish()
    }
}

/// One scratch per band, each with room for the longest tile list of `bins` (plus a quarter, so lists
/// that grow slowly during training do not reallocate every few steps).
fn ensure_scratch(scratch: &mut Vec<BandScratch>, bands: usize, bins: &Bins) {
    if scratch.len() < bands {
        scratch.resize_with(bands, BandScratch::default);
    }
    let longest = bins
        .tile_ranges
        .iter()
        .map(|r| (r[1] - r[0]) as usize)
        .max()
        .unwrap_or(0);
    for sc in scratch.iter_mut() {
        if sc.local.capacity() < longest
            || sc.td.pos.capacity() < longest
            || sc.acc.capacity() < longest
        {
            let room = longest + longest / 4;
            sc.local.reserve(room.saturating_sub(sc.local.len()));
            sc.acc.reserve(room.saturating_sub(sc.acc.len()));
            sc.td.reserve(room);
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
    ensure_scratch(scratch, grid.tiles_y as usize, bins);
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
                if level == SimdLevel::Scalar {
                    gather(culls, list, rect, &mut sc.local);
                    forward_tile_scalar(
                        &sc.local,
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
                gather_soa(culls, list, rect, &mut sc.td);
                let (tw, th) = ((x1 - x0) as usize, (y1 - y0) as usize);
                simd::forward(level, &sc.td, x0, y0, tw, th, &simd_cut, &mut sc.tile_out);
                let to = &sc.tile_out;
                for ly in 0..th {
                    for lx in 0..tw {
                        let i = ly * 16 + lx;
                        let p = ly * w + x0 as usize + lx;
                        for ch in 0..3 {
                            img[p * 3 + ch] = to.rgb[ch][i];
                        }
                        trans[p] = to.t[i];
                        contrib[p] = to.last[i];
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

/// Calls `f(band, slots, scratch)` in parallel for consecutive parts of `data` (band `i` owns
/// `bounds[i]..bounds[i + 1]`), splitting recursively with `rayon::join`: no heap allocation.
fn for_each_band<F>(
    data: &mut [[f32; 9]],
    bounds: &[usize],
    scratch: &mut [BandScratch],
    first: usize,
    f: &F,
) where
    F: Fn(usize, &mut [[f32; 9]], &mut BandScratch) + Sync,
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
    ensure_scratch(scratch, tiles_y, bins);
    let simd_cut = cut_of(settings);
    let cut = CutoffsF::<f32>::new(&settings.cutoffs);
    let bg = settings.background;
    let w = grid.width as usize;
    let total = bins.gaussian_ids.len();
    bwd.intersection_grads.clear();
    bwd.intersection_grads.resize(total, [0.0; 9]);

    // Tile lists are in tile order, so each row of tiles owns a contiguous run of intersections.
    bwd.band_bounds.clear();
    bwd.band_bounds.push(0);
    for ty in 0..tiles_y {
        let prev = *bwd.band_bounds.last().expect("non-empty");
        let (lo, hi) = band_range(bins, grid, ty);
        if hi == lo {
            bwd.band_bounds.push(prev);
        } else {
            assert_eq!(lo, prev, "tile lists are not in tile order");
            bwd.band_bounds.push(hi);
        }
    }
    assert_eq!(
        *bwd.band_bounds.last().expect("non-empty"),
        total,
        "intersections outside the tiles"
    );

    let bounds = &bwd.band_bounds;
    let band_fn = |ty: usize, slots: &mut [[f32; 9]], sc: &mut BandScratch| {
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
            if level == SimdLevel::Scalar {
                gather(culls, list, rect, &mut sc.local);
                sc.acc.clear();
                sc.acc.resize(sc.local.len(), [0.0; 9]);
                backward_tile_scalar(
                    &sc.local,
                    rect,
                    &cut,
                    bg,
                    w,
                    raster,
                    grad_image,
                    &mut sc.acc,
                );
                for (k, gs) in sc.local.iter().enumerate() {
                    slots[base + gs.pos as usize] = sc.acc[k];
                }
                continue;
            }
            gather_soa(culls, list, rect, &mut sc.td);
            let (x0, y0, x1, y1) = rect;
            let inp = &mut sc.grad_in;
            for i in 0..TILE_PIXELS {
                let (px, py) = (x0 as usize + i % 16, y0 as usize + i / 16);
                if px < x1 as usize && py < y1 as usize {
                    let pixel = py * w + px;
                    for ch in 0..3 {
                        inp.grad[ch][i] = grad_image[pixel * 3 + ch];
                    }
                    inp.t_final[i] = raster.final_transmittance[pixel];
                    inp.n_contrib[i] = raster.n_contrib[pixel];
                } else {
                    for ch in 0..3 {
                        inp.grad[ch][i] = 0.0;
                    }
                    inp.t_final[i] = 0.0;
                    inp.n_contrib[i] = 0;
                }
            }
            sc.acc.clear();
            sc.acc.resize(sc.td.len(), [0.0; 9]);
            simd::backward(level, &sc.td, x0, y0, &simd_cut, &sc.grad_in, &mut sc.acc);
            for (k, &pos) in sc.td.pos.iter().enumerate() {
                slots[base + pos as usize] = sc.acc[k];
            }
        }
    };
    for_each_band(
        &mut bwd.intersection_grads,
        bounds,
        &mut scratch[..tiles_y],
        0,
        &band_fn,
    );

    out.reset(projected.len());
    for (k, &id) in bins.gaussian_ids.iter().enumerate() {
        let g = &bwd.intersection_grads[k];
        let id = id as usize;
        out.grad_means2d[id][0] += g[0];
        out.grad_means2d[id][1] += g[1];
        out.grad_conics[id][0] += g[2];
        out.grad_conics[id][1] += g[3];
        out.grad_conics[id][2] += g[4];
        out.grad_colors[id][0] += g[5];
        out.grad_colors[id][1] += g[6];
        out.grad_colors[id][2] += g[7];
        out.grad_opacities[id] += g[8];
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
    acc: &mut [[f32; 9]],
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
                a[0] += grad_power * (-c[0] * d[0] - c[1] * d[1]);
                a[1] += grad_power * (-c[2] * d[1] - c[1] * d[0]);
                a[2] += grad_power * -0.5 * d[0] * d[0];
                a[3] -= grad_power * d[0] * d[1];
                a[4] += grad_power * -0.5 * d[1] * d[1];
            }
        }
    }
}
