//! Differentiable tile-based rasterization of 3D Gaussians.
//!
//! The pipeline, one module per stage, each a plain reference implementation generic over the scalar type
//! ([`splat_core::Real`], so gradient tests run it in `f64`):
//!
//! 1. [`project`]: 3D covariance from scale and rotation, EWA projection with the clamped Jacobian, +0.3 px
//!    dilation, conic, 3-sigma radius, culling, and the tiles of the radius's square that the
//!    `alpha >= 1/255` box reaches; [`sh`] evaluates the view-dependent colour.
//! 2. [`bin`]: every visible Gaussian is listed in each 16 x 16 tile of its rect, sorted by
//!    (tile, depth); each tile gets a range of that list.
//! 3. [`rasterize_fwd`]: front-to-back alpha blending per pixel with the original rules.
//! 4. [`rasterize_bwd`], then [`project_bwd`] (with [`sh`]'s backward): exact gradients.
//!
//! [`brute`] renders without tiles (every pixel against every Gaussian in depth order) as the twin of the
//! tiled path. [`Backend`] is the interface at the level of these stages; [`ReferenceBackend`] implements it
//! with the reference functions, and faster backends are tested against it.

pub mod backend;
pub mod bin;
pub mod brute;
pub mod cpu;
pub mod fisheye;
pub mod pipeline;
pub mod project;
pub mod project_bwd;
pub mod rasterize_bwd;
pub mod rasterize_fwd;
pub mod reference;
pub mod sh;
pub mod types;

pub use backend::Backend;
pub use cpu::CpuBackend;
pub use pipeline::{backward, render, Buffers};
pub use reference::ReferenceBackend;
pub use types::{
    Bins, Cutoffs, GaussianGrads, PoseGrads, Projected, ProjectedGrads, RasterOutput,
    RenderSettings,
};
