//! Densification statistics on the GPU (`shaders/densify_stats.wgsl`). The edits (clone, split, prune)
//! are still done on the host.

use splat_render::{Projected, ProjectedGrads};

use crate::context::{GpuContext, GpuError};
use crate::kernel::{compute_pipeline, groups_for, module, record_pass};

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct StatsParams {
    pub(crate) n: [u32; 4],
    pub(crate) half: [f32; 4],
}

pub struct GpuDensifyStats {
    pub(crate) pipeline: wgpu::ComputePipeline,
}

impl GpuDensifyStats {
    pub fn new(ctx: &GpuContext) -> Self {
        let m = module(ctx, "densify_stats.wgsl", crate::shaders::DENSIFY_STATS);
        let pipeline = compute_pipeline(ctx, &m, "densify stats", "main");
        GpuDensifyStats { pipeline }
    }

    /// The per-stage interface: adds one view's statistics into the running `grad_accum`, `grad_count`
    /// and `max_radii` (host arrays, uploaded and read back).
    #[allow(clippy::too_many_arguments)]
    pub fn accumulate(
        &self,
        ctx: &GpuContext,
        projected: &Projected<f32>,
        grads: &ProjectedGrads<f32>,
        width: u32,
        height: u32,
        grad_accum: &mut [f32],
        grad_count: &mut [f32],
        max_radii: &mut [f32],
    ) -> Result<(), GpuError> {
        let n = projected.len();
        let packed: Vec<f32> = (0..n)
            .flat_map(|i| {
                let m = grads.grad_means2d[i];
                [m[0], m[1], 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
            })
            .collect();
        let radii = ctx.storage_from("radii", &projected.radii);
        let pg = ctx.storage_from("projected grads", &packed);
        let acc = ctx.storage_from("grad accum", grad_accum);
        let cnt = ctx.storage_from("grad count", grad_count);
        let mr = ctx.storage_from("max radii", max_radii);
        // No halted step here.
        let status = ctx.storage_from("status", &[0u32; 4]);
        let params = StatsParams {
            n: [n as u32, 0, 0, 0],
            half: [0.5 * width as f32, 0.5 * height as f32, 0.0, 0.0],
        };
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("densify stats"),
            });
        let (x, y) = ctx.dispatch_size(groups_for(n as u32));
        record_pass(
            ctx,
            &mut enc,
            &self.pipeline,
            bytemuck::bytes_of(&params),
            &[
                (1, &radii),
                (2, &pg),
                (3, &acc),
                (4, &cnt),
                (5, &mr),
                (6, &status),
            ],
            (x, y, 1),
        );
        ctx.submit(enc);
        grad_accum.copy_from_slice(&ctx.read::<f32>(&acc, n)?);
        grad_count.copy_from_slice(&ctx.read::<f32>(&cnt, n)?);
        max_radii.copy_from_slice(&ctx.read::<f32>(&mr, n)?);
        Ok(())
    }
}
