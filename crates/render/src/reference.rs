//! The reference backend: the plain stage functions of this crate at `f32`.

use splat_core::{Camera, Gaussians, TileGrid};

use crate::backend::Backend;
use crate::types::{
    Bins, GaussianGrads, PoseGrads, Projected, ProjectedGrads, RasterOutput, RenderSettings,
};
use crate::{bin, project, project_bwd, rasterize_bwd, rasterize_fwd};

/// Readable, and the oracle every other backend is compared against. Plain per-Gaussian and per-pixel
/// loops; only the rasterizer uses more than one thread, and only where that cannot change a bit (rows
/// of tiles in parallel; the backward's additions in the one-thread order).
#[derive(Clone, Copy, Debug, Default)]
pub struct ReferenceBackend;

impl Backend for ReferenceBackend {
    fn name(&self) -> &str {
        "reference"
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
        rasterize_fwd::rasterize_forward(projected, bins, grid, settings, out);
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
        rasterize_bwd::rasterize_backward(projected, bins, grid, settings, raster, grad_image, out);
    }

    fn project_backward(
        &mut self,
        gaussians: &Gaussians,
        camera: &Camera,
        settings: &RenderSettings,
        projected: &Projected<f32>,
        grads: &ProjectedGrads<f32>,
        out: &mut GaussianGrads<f32>,
    ) -> PoseGrads {
        project_bwd::project_backward(gaussians, camera, settings, projected, grads, out)
    }
}
