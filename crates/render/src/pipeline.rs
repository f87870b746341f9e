//! The whole forward and backward pass through any [`Backend`], with named timings per stage.

use std::time::{Duration, Instant};

use splat_core::{Camera, Gaussians, TileGrid};

use crate::backend::Backend;
use crate::types::{
    Bins, GaussianGrads, PoseGrads, Projected, ProjectedGrads, RasterOutput, RenderSettings,
};

/// Every buffer of one forward and backward pass; reuse it across calls.
#[derive(Clone, Debug, Default)]
pub struct Buffers {
    pub projected: Projected<f32>,
    pub bins: Bins,
    pub raster: RasterOutput<f32>,
    pub projected_grads: ProjectedGrads<f32>,
    pub grads: GaussianGrads<f32>,
    /// The camera pose's gradient (with [`RenderSettings::pose_grads`]).
    pub pose_grads: PoseGrads,
    /// Time spent in each stage by the last calls, by stage name.
    pub timings: Vec<(&'static str, Duration)>,
}

fn timed<R>(
    timings: &mut Vec<(&'static str, Duration)>,
    name: &'static str,
    f: impl FnOnce() -> R,
) -> R {
    let start = Instant::now();
    let r = f();
    timings.push((name, start.elapsed()));
    r
}

/// Forward pass: project, bin, rasterize. The image is `buffers.raster.image`.
pub fn render<B: Backend + ?Sized>(
    backend: &mut B,
    gaussians: &Gaussians,
    camera: &Camera,
    settings: &RenderSettings,
    buffers: &mut Buffers,
) {
    let grid = TileGrid::new(camera.width, camera.height);
    let t = &mut buffers.timings;
    t.clear();
    timed(t, "project", || {
        backend.project(gaussians, camera, settings, &mut buffers.projected)
    });
    timed(t, "bin", || {
        backend.bin(&buffers.projected, &grid, &mut buffers.bins)
    });
    timed(t, "rasterize_forward", || {
        backend.rasterize_forward(
            &buffers.projected,
            &buffers.bins,
            &grid,
            settings,
            &mut buffers.raster,
        )
    });
}

/// Backward pass after [`render`] with the same inputs: gradients of every parameter in `buffers.grads`
/// given the gradient of the loss with respect to the image.
pub fn backward<B: Backend + ?Sized>(
    backend: &mut B,
    gaussians: &Gaussians,
    camera: &Camera,
    settings: &RenderSettings,
    grad_image: &[f32],
    buffers: &mut Buffers,
) {
    let grid = TileGrid::new(camera.width, camera.height);
    let t = &mut buffers.timings;
    timed(t, "rasterize_backward", || {
        backend.rasterize_backward(
            &buffers.projected,
            &buffers.bins,
            &grid,
            settings,
            &buffers.raster,
            grad_image,
            &mut buffers.projected_grads,
        )
    });
    buffers.pose_grads = timed(t, "project_backward", || {
        backend.project_backward(
            gaussians,
            camera,
            settings,
            &buffers.projected,
            &buffers.projected_grads,
            &mut buffers.grads,
        )
    });
}
