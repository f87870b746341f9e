//! Core types and conventions of `splat`.
//!
//! # Conventions
//! - **Camera frame**: OpenCV/COLMAP. x right, y down, z forward. A [`Camera`] holds the world-to-camera
//!   transform `x_cam = R x_world + t`.
//! - **Pixels**: pixel `(i, j)` (column `i`, row `j`) is sampled at `(i + 0.5, j + 0.5)`; projection is
//!   `u = fx x / z + cx`, `v = fy y / z + cy` in those continuous coordinates.
//! - **Quaternions**: `(w, x, y, z)`, stored unnormalized, normalized before use.
//! - **Gaussian parameters** ([`Gaussians`]) are stored the way they are optimized and written to the INRIA
//!   PLY: log-scales, opacity logits, SH coefficients with `sh_rest` laid out `[coefficient][channel]`.
//! - **Colour**: `rgb = 0.5 + sum_k sh_k * basis_k(dir)`, clamped at 0, where `dir` is the unit vector from the
//!   camera centre to the Gaussian mean ([`sh`]).
//! - **Images**: row-major, RGB interleaved, `f32` in `[0, 1]` nominally (not clamped by the renderer).
//! - **Tiles**: 16 x 16 pixels, row-major ids ([`TileGrid`]).

pub mod camera;
pub mod gaussians;
pub mod lens;
pub mod math;
pub mod real;
pub mod sh;
pub mod synthetic;
pub mod tiles;

pub use camera::{Camera, Projection};
pub use gaussians::{logit, sh_coeffs_for_degree, sigmoid, Gaussians, MAX_SH_DEGREE};
pub use real::Real;
pub use tiles::{footprint_threshold, Footprint, TileGrid, TileRect, TILE_SIZE};
