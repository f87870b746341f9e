//! The stage-level interface every implementation (reference, fast CPU, GPU) provides.
//!
//! Each method is one pipeline stage and writes into a caller-owned output buffer, so a training loop keeps
//! its buffers and allocates nothing per step. Forward results that the backward needs are passed back in
//! explicitly ([`Projected`], [`Bins`], [`RasterOutput`]); nothing is hidden in the backend.

use splat_core::{Camera, Gaussians, TileGrid};

use crate::types::{
    Bins, GaussianGrads, PoseGrads, Projected, ProjectedGrads, RasterOutput, RenderSettings,
};

pub trait Backend {
    /// A short name for logs and benchmarks.
    fn name(&self) -> &str;

    /// Project every Gaussian and evaluate its colour.
    fn project(
        &mut self,
        gaussians: &Gaussians,
        camera: &Camera,
        settings: &RenderSettings,
        out: &mut Projected<f32>,
    );

    /// List visible Gaussians per tile, sorted front to back.
    fn bin(&mut self, projected: &Projected<f32>, grid: &TileGrid, out: &mut Bins);

    /// Blend the image; keep the final transmittance and contributor counts.
    fn rasterize_forward(
        &mut self,
        projected: &Projected<f32>,
        bins: &Bins,
        grid: &TileGrid,
        settings: &RenderSettings,
        out: &mut RasterOutput<f32>,
    );

    /// Gradients of the projected quantities from the gradient of the image.
    fn rasterize_backward(
        &mut self,
        projected: &Projected<f32>,
        bins: &Bins,
        grid: &TileGrid,
        settings: &RenderSettings,
        raster: &RasterOutput<f32>,
        grad_image: &[f32],
        out: &mut ProjectedGrads<f32>,
    );

    /// Gradients of every parameter from those of the projected quantities; returns the gradient of
    /// the camera's pose when `settings.pose_grads` (else zero).
    fn project_backward(
        &mut self,
        gaussians: &Gaussians,
        camera: &Camera,
        settings: &RenderSettings,
        projected: &Projected<f32>,
        grads: &ProjectedGrads<f32>,
        out: &mut GaussianGrads<f32>,
    ) -> PoseGrads;
}
