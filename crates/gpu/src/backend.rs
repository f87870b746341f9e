//! [`GpuBackend`]: the stage interface ([`splat_render::Backend`]) on the GPU, one shader pipeline per
//! stage. Each call uploads its inputs and reads its outputs back, so the training loop, the loss, Adam and
//! densification keep running on the host: correct and testable end to end, but bound by transfers. The
//! resident path (everything on the device, blocks of steps per submission) is the next step of issue 7.
//!
//! The trait's methods cannot return errors; a GPU failure in the middle of a run (a lost device) panics
//! with the cause. Opening the device, where the user's choice can fail, returns an error instead.

use std::sync::Arc;

use splat_core::{Camera, Gaussians, TileGrid};
use splat_render::{
    Backend, Bins, GaussianGrads, PoseGrads, Projected, ProjectedGrads, RasterOutput,
    RenderSettings,
};

use crate::{GpuBin, GpuContext, GpuProject, GpuProjectBackward, GpuRasterize};

pub struct GpuBackend {
    ctx: Arc<GpuContext>,
    project: GpuProject,
    bin: GpuBin,
    raster: GpuRasterize,
    project_bwd: GpuProjectBackward,
    name: String,
}

impl GpuBackend {
    /// Compiles every stage's pipeline on `ctx`.
    pub fn new(ctx: Arc<GpuContext>) -> Self {
        GpuBackend {
            project: GpuProject::new(&ctx),
            bin: GpuBin::new(&ctx),
            raster: GpuRasterize::new(&ctx),
            project_bwd: GpuProjectBackward::new(&ctx),
            name: format!("gpu ({})", ctx.info.name),
            ctx,
        }
    }
}

impl GpuBackend {
    /// Sums the rasterize backward's per-Gaussian gradients this way (see [`crate::BackwardSums`]).
    pub fn with_backward_sums(mut self, sums: crate::BackwardSums) -> Self {
        self.raster.sums = sums;
        self
    }
}

fn check<T>(stage: &str, r: Result<T, crate::GpuError>) -> T {
    r.unwrap_or_else(|e| panic!("GPU {stage} failed: {e}"))
}

impl Backend for GpuBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn project(
        &mut self,
        gaussians: &Gaussians,
        camera: &Camera,
        settings: &RenderSettings,
        out: &mut Projected<f32>,
    ) {
        check(
            "project",
            self.project
                .run(&self.ctx, gaussians, camera, settings, out),
        );
    }

    fn bin(&mut self, projected: &Projected<f32>, grid: &TileGrid, out: &mut Bins) {
        check("bin", self.bin.run(&self.ctx, projected, grid, out));
    }

    fn rasterize_forward(
        &mut self,
        projected: &Projected<f32>,
        bins: &Bins,
        grid: &TileGrid,
        settings: &RenderSettings,
        out: &mut RasterOutput<f32>,
    ) {
        check(
            "rasterize forward",
            self.raster
                .forward(&self.ctx, projected, bins, grid, settings, out),
        );
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
        check(
            "rasterize backward",
            self.raster.backward(
                &self.ctx, projected, bins, grid, settings, raster, grad_image, out,
            ),
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
    ) -> PoseGrads {
        check(
            "project backward",
            self.project_bwd.run(
                &self.ctx, gaussians, camera, settings, projected, grads, out,
            ),
        )
    }
}
