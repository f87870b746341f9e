//! Which tiles, rows and pixels a Gaussian can reach: the bounding box of its `alpha >= alpha_min`
//! ellipse, widened so that f32 rounding never culls a visible Gaussian, and the per-Gaussian records
//! ([`CullTable`]) the rasterizer reads, made once per pass.

use rayon::prelude::*;

use super::simd::TileGaussian;
use crate::types::Projected;

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
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct RasterRecord {
    pub(super) mean: [f32; 2],
    pub(super) conic: [f32; 3],
    pub(super) opacity: f32,
    pub(super) color: [f32; 3],
    /// See [`power_skip`].
    pub(super) power_skip: f32,
    /// The pixels the cull box reaches ([`cull_pixels`]).
    pub(super) pixels: PixelRange,
}

const _: () = assert!(std::mem::size_of::<RasterRecord>() == 48);
const _: () = assert!(std::mem::size_of::<TileGaussian>() == 48);

/// Per-Gaussian rasterizer records, built once per pass with sequential reads (and one `ln` and two square
/// roots per Gaussian instead of per tile intersection).
#[derive(Debug, Default)]
pub struct CullTable {
    pub(super) records: Vec<RasterRecord>,
    /// The `alpha_min` the records' cull data were made for (none before the first fill).
    alpha_min: Option<f64>,
}

impl CullTable {
    /// Makes the records of `projected`. A record whose mean, conic and opacity are bit for bit those it
    /// already holds (the backward after the forward of the same projection) keeps its cull data instead
    /// of recomputing the logarithms and square roots; the check reads what the build would read.
    pub(super) fn fill(&mut self, projected: &Projected<f32>, alpha_min: f64) {
        const CHUNK: usize = 4096;
        let reuse = self.alpha_min.map(f64::to_bits) == Some(alpha_min.to_bits());
        self.alpha_min = Some(alpha_min);
        let made = self.records.len();
        self.records
            .resize(projected.len(), RasterRecord::default());
        self.records
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, records)| {
                for (j, r) in records.iter_mut().enumerate() {
                    let i = c * CHUNK + j;
                    let (mean, conic) = (projected.means2d[i], projected.conics[i]);
                    let opacity = projected.opacities[i];
                    let same = reuse
                        && i < made
                        && r.mean.map(f32::to_bits) == mean.map(f32::to_bits)
                        && r.conic.map(f32::to_bits) == conic.map(f32::to_bits)
                        && r.opacity.to_bits() == opacity.to_bits();
                    r.color = projected.colors[i];
                    if same {
                        continue;
                    }
                    r.mean = mean;
                    r.conic = conic;
                    r.opacity = opacity;
                    r.power_skip = power_skip(opacity, alpha_min);
                    r.pixels = cull_pixels(mean, conic, opacity, alpha_min);
                }
            });
    }
}

/// The pixels whose centres lie in a Gaussian's cull box (the box of [`tile_cull`]), as inclusive pixel
/// index ranges: `left..=right` by `top..=bottom`. Computed once per Gaussian in f64, so the per-tile
/// cull and the rows a Gaussian visits are integer compares (the gather runs them on every list entry,
/// and float clamps and rounding compiled to branches and library calls there).
///
/// In 16 bits, so a record stays 48 bytes: every bound is clamped to `-1..=REACHES_ON`, and a `right` or
/// `bottom` of [`REACHES_ON`] means "this pixel or any beyond", so the tests stay conservative on images
/// of any size (pixels past 32,766 are simply never culled by that side).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PixelRange {
    pub left: i16,
    pub top: i16,
    pub right: i16,
    pub bottom: i16,
}

/// A `right` or `bottom` of this reaches every pixel from it on.
pub const REACHES_ON: i16 = i16::MAX;

/// [`PixelRange`] of a Gaussian: pixel `p` has its centre `p + 0.5` in `[m - e, m + e]` exactly when
/// `ceil(m - e - 0.5) <= p <= floor(m + e - 0.5)`. Clamping `left`/`top` up to -1 culls nothing more
/// (no pixel is left of -1); clamping them down to 32,767 only widens the range.
pub fn cull_pixels(mean: [f32; 2], conic: [f32; 3], opacity: f32, alpha_min: f64) -> PixelRange {
    let [ex, ey] = cull_half_widths(conic, opacity, alpha_min);
    let (u, v) = (mean[0] as f64, mean[1] as f64);
    let bound = |x: f64| x.clamp(-1.0, REACHES_ON as f64) as i16;
    PixelRange {
        left: bound((u - ex - 0.5).ceil()),
        top: bound((v - ey - 0.5).ceil()),
        right: bound((u + ex - 0.5).floor()),
        bottom: bound((v + ey - 0.5).floor()),
    }
}

/// The far bound as the tests use it: [`REACHES_ON`] is unbounded.
#[inline]
fn far(bound: i16) -> i64 {
    if bound == REACHES_ON {
        i64::MAX
    } else {
        bound as i64
    }
}

/// The tile cull the rasterizer runs per intersection: true when `range` holds no pixel of the tile
/// `[x0, x1) x [y0, y1)`.
#[inline]
pub fn range_misses_tile(range: &PixelRange, rect: (u32, u32, u32, u32)) -> bool {
    let (x0, y0, x1, y1) = rect;
    let (x0, y0, x1, y1) = (x0 as i64, y0 as i64, x1 as i64, y1 as i64);
    // `|`, not `||`: four compares and no branches.
    (far(range.right) < x0)
        | (range.left as i64 >= x1)
        | (far(range.bottom) < y0)
        | (range.top as i64 >= y1)
}

/// The tile rows `top..=bottom` (0-based within the tile of rows `y0..y1`) that `range` reaches, for a
/// tile it does not miss.
#[inline]
pub fn visible_rows(range: &PixelRange, y0: u32, y1: u32) -> (u8, u8) {
    let last_row = (y1 - y0 - 1) as i64;
    let top = (range.top as i64 - y0 as i64).clamp(0, last_row);
    let bottom = far(range.bottom)
        .saturating_sub(y0 as i64)
        .min(last_row)
        .max(top);
    (top as u8, bottom as u8)
}
