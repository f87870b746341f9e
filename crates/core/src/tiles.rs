//! The 16 x 16 pixel tile grid that binning and rasterization work on.

/// Tile edge length in pixels.
pub const TILE_SIZE: u32 = 16;

/// Tiles covering an image, row-major: tile id = `ty * tiles_x + tx`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileGrid {
    pub width: u32,
    pub height: u32,
    pub tiles_x: u32,
    pub tiles_y: u32,
}

impl TileGrid {
    pub fn new(width: u32, height: u32) -> TileGrid {
        TileGrid {
            width,
            height,
            tiles_x: width.div_ceil(TILE_SIZE),
            tiles_y: height.div_ceil(TILE_SIZE),
        }
    }

    pub fn num_tiles(&self) -> usize {
        self.tiles_x as usize * self.tiles_y as usize
    }

    /// Pixel bounds `[x0, x1) x [y0, y1)` of a tile, clipped to the image.
    pub fn tile_pixels(&self, tile: usize) -> (u32, u32, u32, u32) {
        let tx = tile as u32 % self.tiles_x;
        let ty = tile as u32 / self.tiles_x;
        let x0 = tx * TILE_SIZE;
        let y0 = ty * TILE_SIZE;
        (
            x0,
            y0,
            (x0 + TILE_SIZE).min(self.width),
            (y0 + TILE_SIZE).min(self.height),
        )
    }
}

/// A rectangle of tiles `[x0, x1) x [y0, y1)`; empty when `x0 >= x1` or `y0 >= y1`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TileRect {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
}

impl TileRect {
    pub fn is_empty(&self) -> bool {
        self.x0 >= self.x1 || self.y0 >= self.y1
    }

    pub fn area(&self) -> usize {
        if self.is_empty() {
            0
        } else {
            (self.x1 - self.x0) as usize * (self.y1 - self.y0) as usize
        }
    }

    pub fn contains(&self, tx: u32, ty: u32) -> bool {
        tx >= self.x0 && tx < self.x1 && ty >= self.y0 && ty < self.y1
    }

    /// The tiles touched by the square `[u - r, u + r] x [v - r, v + r]` in continuous pixel coordinates,
    /// clipped to the grid. Tile `t` spans `[16 t, 16 (t + 1))`.
    pub fn around(u: f64, v: f64, radius: f64, grid: &TileGrid) -> TileRect {
        let ts = TILE_SIZE as f64;
        TileRect {
            x0: clip_tile(((u - radius) / ts).floor(), grid.tiles_x),
            y0: clip_tile(((v - radius) / ts).floor(), grid.tiles_y),
            x1: clip_tile(((u + radius) / ts).floor() + 1.0, grid.tiles_x),
            y1: clip_tile(((v + radius) / ts).floor() + 1.0, grid.tiles_y),
        }
    }

    /// The tiles whose span of pixel centres meets the box `[u - ex, u + ex] x [v - ey, v + ey]`
    /// (tile `t`'s centres span `16 t + 0.5 ..= 16 t + 15.5`; the last column's and row's past the image
    /// edge count too), clipped to the grid: every tile with a pixel centre in the box, and never fewer.
    pub fn reaching_centres(u: f64, v: f64, ex: f64, ey: f64, grid: &TileGrid) -> TileRect {
        let ts = TILE_SIZE as f64;
        let last = ts - 0.5;
        TileRect {
            x0: clip_tile(((u - ex - last) / ts).ceil(), grid.tiles_x),
            y0: clip_tile(((v - ey - last) / ts).ceil(), grid.tiles_y),
            x1: clip_tile(((u + ex - 0.5) / ts).floor() + 1.0, grid.tiles_x),
            y1: clip_tile(((v + ey - 0.5) / ts).floor() + 1.0, grid.tiles_y),
        }
    }

    /// The tiles in both rectangles.
    pub fn intersect(&self, other: &TileRect) -> TileRect {
        TileRect {
            x0: self.x0.max(other.x0),
            y0: self.y0.max(other.y0),
            x1: self.x1.min(other.x1),
            y1: self.y1.min(other.y1),
        }
    }
}

/// The `alpha >= alpha_min` ellipse of one projected Gaussian, tested exactly against tiles: a tile is
/// reached when the least `d^T Q d` over its pixel centres (`d` from the centre, `Q` the conic) is at
/// most `t2 = 2 ln(opacity / alpha_min)`, the power at which the rasterizers' `o exp(-d^T Q d / 2)`
/// falls under `alpha_min`.
///
/// The least value of a convex quadratic over a box that does not hold its centre lies on a side that
/// faces the centre (moving from the minimizer towards the centre lowers the quadratic, so it must leave
/// the box), so [`Footprint::reaches`] evaluates at most two sides, each at the clamped minimizer of a
/// parabola. Conservative: `t2` is widened by 2% + 0.01 (as [`TileRect::reaching_centres`]'s box) and by
/// `1e-5 S`, `S = (sqrt(a) |dx| + sqrt(c) |dy|)^2` at the tile's far corner, a bound on the f32 rounding
/// of any backend's per-pixel power (about 80 ulps of its terms), so a tile left out holds no pixel any
/// rasterizer blends; one kept may hold none (a decision within rounding of the threshold may go either
/// way between devices, never with a visible effect). All in f32, as the CPU and GPU bins compute it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Footprint {
    pub mean: [f32; 2],
    /// `(a, b, c)` of `Q = [[a, b], [b, c]]`, positive definite.
    pub conic: [f32; 3],
    /// The widened `t2`: infinite with `alpha_min = 0` (every tile reached).
    pub threshold: f32,
}

impl Footprint {
    pub fn new(mean: [f32; 2], conic: [f32; 3], opacity: f32, alpha_min: f32) -> Footprint {
        Footprint {
            mean,
            conic,
            threshold: footprint_threshold(opacity, alpha_min),
        }
    }

    /// Whether some pixel centre of tile `(tx, ty)` can have alpha at or above `alpha_min`.
    pub fn reaches(&self, tx: u32, ty: u32) -> bool {
        let (least, slack) = self.least_power(tx, ty);
        least <= self.threshold + slack
    }

    /// The least `d^T Q d` over the tile's pixel centres and the rounding slack allowed on it.
    pub fn least_power(&self, tx: u32, ty: u32) -> (f32, f32) {
        let ts = TILE_SIZE as f32;
        let x0 = (tx as f32 * ts + 0.5) - self.mean[0];
        let x1 = (tx as f32 * ts + (ts - 0.5)) - self.mean[0];
        let y0 = (ty as f32 * ts + 0.5) - self.mean[1];
        let y1 = (ty as f32 * ts + (ts - 0.5)) - self.mean[1];
        let [a, b, c] = self.conic;
        // The sides facing the centre; 0 on an axis whose span holds it.
        let ex = facing(x0, x1);
        let ey = facing(y0, y1);
        let mut least = if ex == 0.0 && ey == 0.0 {
            0.0
        } else {
            f32::INFINITY
        };
        if ex != 0.0 {
            let y = clamp(-b * ex / c, y0, y1);
            least = least.min(quadratic(self.conic, ex, y));
        }
        if ey != 0.0 {
            let x = clamp(-b * ey / a, x0, x1);
            least = least.min(quadratic(self.conic, x, ey));
        }
        let far = a.sqrt() * x0.abs().max(x1.abs()) + c.sqrt() * y0.abs().max(y1.abs());
        (least, 1e-5 * far * far)
    }
}

/// [`Footprint::threshold`]: `2 ln(opacity / alpha_min)` widened by 2% + 0.01; infinite when
/// `alpha_min <= 0`, -infinite when the opacity is under `alpha_min`.
pub fn footprint_threshold(opacity: f32, alpha_min: f32) -> f32 {
    if !(alpha_min > 0.0) {
        return f32::INFINITY;
    }
    if !(opacity >= alpha_min) {
        return f32::NEG_INFINITY;
    }
    2.0 * (opacity / alpha_min).ln() * 1.02 + 0.01
}

/// The end of `[lo, hi]` nearest 0, or 0 when the span holds 0.
fn facing(lo: f32, hi: f32) -> f32 {
    if lo > 0.0 {
        lo
    } else if hi < 0.0 {
        hi
    } else {
        0.0
    }
}

/// `x` clamped to `[lo, hi]` (NaN stays NaN, and then so does the quadratic: the tile is not reached).
fn clamp(x: f32, lo: f32, hi: f32) -> f32 {
    if x < lo {
        lo
    } else if x > hi {
        hi
    } else {
        x
    }
}

/// `a x^2 + 2 b x y + c y^2`.
fn quadratic([a, b, c]: [f32; 3], x: f32, y: f32) -> f32 {
    a * x * x + c * y * y + 2.0 * b * x * y
}

/// A tile coordinate `x` clipped to `0..=n` (NaN to 0).
fn clip_tile(x: f64, n: u32) -> u32 {
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= n as f64 {
        n
    } else {
        x as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The least of `a x^2 + 2 b x y + c y^2` over `[x0, x1] x [y0, y1]` in f64 by another route: 0
    /// when the box holds the centre, else the least over all four sides (each a clamped parabola).
    fn least_over_box(q: [f64; 3], x: [f64; 2], y: [f64; 2]) -> f64 {
        let [a, b, c] = q;
        let f = |x: f64, y: f64| a * x * x + 2.0 * b * x * y + c * y * y;
        if x[0] <= 0.0 && 0.0 <= x[1] && y[0] <= 0.0 && 0.0 <= y[1] {
            return 0.0;
        }
        let mut least = f64::INFINITY;
        for &xe in &x {
            least = least.min(f(xe, (-b * xe / c).clamp(y[0], y[1])));
        }
        for &ye in &y {
            least = least.min(f((-b * ye / a).clamp(x[0], x[1]), ye));
        }
        least
    }

    /// Random footprints, round to needle-thin, at all orientations, against tiles near and far: the
    /// least power is the box's true least (so the test is exact, not a box), and no tile holding a
    /// pixel centre with alpha >= alpha_min (in f32, as the rasterizers compute it) is left out.
    #[test]
    fn footprints_reach_exactly_the_tiles_their_ellipse_meets() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let alpha_min = 1.0f32 / 255.0;
        let (mut reached, mut left_out, mut in_box_left_out) = (0, 0, 0);
        for _ in 0..3000 {
            let sigma_major: f64 = 10f64.powf(rng.random_range(-0.5..2.0));
            let sigma_minor = sigma_major * 10f64.powf(rng.random_range(-2.5..0.0));
            let angle: f64 = rng.random_range(0.0..std::f64::consts::PI);
            let (s, co) = angle.sin_cos();
            let (l1, l2) = (sigma_major.powi(2) + 0.3, sigma_minor.powi(2) + 0.3);
            let cov = [
                co * co * l1 + s * s * l2,
                co * s * (l1 - l2),
                s * s * l1 + co * co * l2,
            ];
            let det = cov[0] * cov[2] - cov[1] * cov[1];
            let conic = [cov[2] / det, -cov[1] / det, cov[0] / det].map(|v| v as f32);
            let mean = [
                rng.random_range(0.0..160.0f32),
                rng.random_range(0.0..160.0f32),
            ];
            let opacity = rng.random_range(0.001..1.0f32);
            let fp = Footprint::new(mean, conic, opacity, alpha_min);
            let q = conic.map(|v| v as f64);
            // A tile within three of the centre's.
            let near = |m: f32, rng: &mut rand_chacha::ChaCha8Rng| {
                (m as i32 / 16 + rng.random_range(-3..=3)).clamp(0, 9) as u32
            };
            let (tx, ty) = (near(mean[0], &mut rng), near(mean[1], &mut rng));
            let (x0, y0) = ((16 * tx) as f64 + 0.5, (16 * ty) as f64 + 0.5);
            let box_x = [x0 - mean[0] as f64, x0 + 15.0 - mean[0] as f64];
            let box_y = [y0 - mean[1] as f64, y0 + 15.0 - mean[1] as f64];
            let truth = least_over_box(q, box_x, box_y);
            let (least, slack) = fp.least_power(tx, ty);
            assert!(
                (least as f64 - truth).abs() <= 1e-4 * truth + slack as f64 + 1e-4,
                "{fp:?} tile ({tx}, {ty}): least {least}, f64 {truth}"
            );
            // The alpha box's verdict too: the exact test may only cut further.
            let t2 = 2.0 * (opacity as f64 / alpha_min as f64).ln();
            let half = [cov[0], cov[2]].map(|d| (t2.max(0.0) * d).sqrt() * 1.01 + 0.01);
            let g = TileGrid::new(160, 160);
            let in_box =
                TileRect::reaching_centres(mean[0] as f64, mean[1] as f64, half[0], half[1], &g)
                    .contains(tx, ty);
            let blended = (0..256).any(|k| {
                let d = [
                    mean[0] - ((16 * tx + k % 16) as f32 + 0.5),
                    mean[1] - ((16 * ty + k / 16) as f32 + 0.5),
                ];
                let power = -(conic[0] * d[0] * d[0] + conic[2] * d[1] * d[1]) / 2.0
                    - conic[1] * d[0] * d[1];
                (opacity * power.exp()).min(0.99) >= alpha_min
            });
            if fp.reaches(tx, ty) {
                reached += 1;
            } else {
                assert!(
                    !blended,
                    "{fp:?} leaves out tile ({tx}, {ty}), which it blends into"
                );
                left_out += 1;
                in_box_left_out += usize::from(in_box);
            }
        }
        eprintln!("{reached} reached, {left_out} left out, {in_box_left_out} of them in the box");
        // Both verdicts occur, and the exact test leaves out tiles the box keeps.
        assert!(
            reached > 300 && left_out > 300,
            "{reached} reached, {left_out} left out"
        );
        assert!(
            in_box_left_out > 30,
            "only {in_box_left_out} tiles cut beyond the box"
        );
    }

    #[test]
    fn footprint_thresholds_at_the_ends() {
        assert_eq!(footprint_threshold(0.5, 0.0), f32::INFINITY);
        assert_eq!(footprint_threshold(0.001, 1.0 / 255.0), f32::NEG_INFINITY);
        assert_eq!(
            footprint_threshold(f32::NAN, 1.0 / 255.0),
            f32::NEG_INFINITY
        );
        let fp = Footprint::new([8.0, 8.0], [1.0, 0.0, 1.0], 0.5, 0.0);
        assert!(fp.reaches(1000, 1000));
        // The centre's own tile is reached at any opacity above the cut.
        let fp = Footprint::new([8.0, 8.0], [1e4, 0.0, 1e4], 0.0040, 1.0 / 255.0);
        assert!(fp.reaches(0, 0) && !fp.reaches(1, 0));
    }

    #[test]
    fn tiles_reaching_centres_are_those_whose_centres_span_meets_the_box() {
        let g = TileGrid::new(50, 40);
        for (u, ex) in [
            (8.0, 7.4),
            (8.0, 7.6),
            (15.9, 0.3),
            (16.4, 0.0),
            (16.6, 0.05),
            (-3.0, 2.0),
            (60.0, 20.0),
        ] {
            let r = TileRect::reaching_centres(u, 20.0, ex, 1.0, &g);
            for tx in 0..g.tiles_x {
                // The span of tile tx's centres meets the box.
                let (lo, hi) = ((16 * tx) as f64 + 0.5, (16 * tx) as f64 + 15.5);
                let reached = u + ex >= lo && u - ex <= hi;
                assert_eq!(
                    r.x0 <= tx && tx < r.x1,
                    reached,
                    "u {u} ex {ex} tile {tx}: {r:?}"
                );
            }
        }
        let inf = TileRect::reaching_centres(3.0, 3.0, f64::INFINITY, f64::INFINITY, &g);
        assert_eq!(
            inf,
            TileRect {
                x0: 0,
                y0: 0,
                x1: 4,
                y1: 3
            }
        );
        let none = TileRect::reaching_centres(8.0, 8.0, f64::NEG_INFINITY, f64::NEG_INFINITY, &g);
        assert!(none.is_empty(), "{none:?}");
        let r = TileRect::around(8.0, 8.0, 30.0, &g);
        assert_eq!(
            r.intersect(&TileRect::reaching_centres(8.0, 8.0, 9.0, 1.0, &g))
                .x1,
            2
        );
    }

    #[test]
    fn rect_around_clips_and_touches() {
        let g = TileGrid::new(40, 20); // 3 x 2 tiles
        assert_eq!((g.tiles_x, g.tiles_y), (3, 2));
        assert_eq!(
            TileRect::around(8.0, 8.0, 3.0, &g),
            TileRect {
                x0: 0,
                y0: 0,
                x1: 1,
                y1: 1
            }
        );
        // Touches the boundary at x = 16 exactly: the square is closed, so tile 1 is listed.
        assert_eq!(TileRect::around(13.0, 8.0, 3.0, &g).x1, 2);
        assert!(TileRect::around(-10.0, 8.0, 3.0, &g).is_empty());
        assert!(TileRect::around(8.0, 100.0, 3.0, &g).is_empty());
        assert_eq!(
            TileRect::around(20.0, 10.0, 1000.0, &g),
            TileRect {
                x0: 0,
                y0: 0,
                x1: 3,
                y1: 2
            }
        );
        assert_eq!(g.tile_pixels(5), (32, 16, 40, 20));
    }
}
