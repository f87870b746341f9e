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
