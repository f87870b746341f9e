//! The fast CPU backend: the same image function and gradients as the reference, organized for the
//! hardware. Project and project-backward are the reference stages (about 1% of a step); binning is a
//! counting sort with per-tile depth sorts; both rasterize stages run tile rows in parallel (rayon), gather
//! each tile's Gaussians into a compact array first, and drop Gaussians whose alpha is below 1/255 on every
//! pixel centre of the tile (a conservative test, see [`rasterize::tile_cull`]), which removes most of the
//! work without changing a single output bit of the forward.
//!
//! The backward writes one gradient record per (tile, Gaussian) intersection, then sums each Gaussian's
//! records in intersection order. That order is fixed, so results are deterministic and independent of the
//! thread count, and no atomics are needed.

pub mod bin;
pub mod peak;
pub mod rasterize;

use splat_core::{Camera, Gaussians, TileGrid};

use crate::backend::Backend;
use crate::types::{Bins, GaussianGrads, Projected, ProjectedGrads, RasterOutput, RenderSettings};
use crate::{project, project_bwd};

/// Reusable scratch of the fast backend.
#[derive(Clone, Debug, Default)]
pub struct CpuBackend {
    /// Per intersection: grad mean2d (2), conic (3), colour (3), opacity (1).
    intersection_grads: Vec<[f32; 9]>,
}

impl CpuBackend {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }

    fn project(
        &mut self,
        gaussians: &Gaussians,
        camera: &Camera,
        settings: &RenderSettings,
        out: &mut Projected<f32>,
    ) {
        project::project(gaussians, camera, settings, out);
    }

    fn bin(&mut self, projected: &Projected<f32>, grid: &TileGrid, out: &mut Bins) {
        bin::bin(projected, grid, out);
    }

    fn rasterize_forward(
        &mut self,
        projected: &Projected<f32>,
        bins: &Bins,
        grid: &TileGrid,
        settings: &RenderSettings,
        out: &mut RasterOutput<f32>,
    ) {
        rasterize::forward(projected, bins, grid, settings, out);
    }

    fn rasterize_backward(
        &mut self,
        projected: &Projected<f32>,
        bins: &Bins,
        grid: &TileGrid,
        settings: &RenderSettings,
        raster: &RasterOutput<f32>,
        grad_image: &[f32],
        out: &mut ProjectedGrads<f32>,
    ) {
        rasterize::backward(
            projected,
            bins,
            grid,
            settings,
            raster,
            grad_image,
            &mut self.intersection_grads,
            out,
        );
    }

    fn project_backward(
        &mut self,
        gaussians: &Gaussians,
        camera: &Camera,
        settings: &RenderSettings,
        projected: &Projected<f32>,
        grads: &ProjectedGrads<f32>,
        out: &mut GaussianGrads<f32>,
    ) {
        project_bwd::project_backward(gaussians, camera, settings, projected, grads, out);
    }
}
