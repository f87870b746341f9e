//! Adam on the GPU (`shaders/adam.wgsl`), element-wise over one parameter group, in chunks whose bindings
//! fit the device's limits.

use wgpu::util::DeviceExt;

use crate::context::{GpuContext, GpuError};
use crate::kernel::{compute_pipeline, groups_for, module, Recorder};
use crate::project::chunk_binding;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct AdamParams {
    n: [u32; 4],
    k: [f32; 4],
    e: [f32; 4],
}

pub struct GpuAdam {
    pipeline: wgpu::ComputePipeline,
}

/// Device buffers of one parameter group.
pub struct AdamBuffers<'a> {
    pub values: &'a wgpu::Buffer,
    pub grads: &'a wgpu::Buffer,
    pub m: &'a wgpu::Buffer,
    pub v: &'a wgpu::Buffer,
}

/// `lr / (1 - b1^t)` and `1 / sqrt(1 - b2^t)` in f64, then `b1`, `b2`, as the shader's `k`.
pub(crate) fn step_constants(lr: f64, (beta1, beta2): (f64, f64), step: u64) -> [f32; 4] {
    let bias1 = 1.0 - beta1.powi(step as i32);
    let bias2 = 1.0 - beta2.powi(step as i32);
    [
        (lr / bias1) as f32,
        (1.0 / bias2.sqrt()) as f32,
        beta1 as f32,
        beta2 as f32,
    ]
}

impl GpuAdam {
    pub fn new(ctx: &GpuContext) -> Self {
        let m = module(ctx, "adam.wgsl", crate::shaders::ADAM);
        let pipeline = compute_pipeline(ctx, &m, "adam", "main");
        GpuAdam { pipeline }
    }

    /// Records one update of `len` elements; `step` is the group's step count after this update (the
    /// bias corrections are computed here in f64, as the CPU does).
    pub fn record(
        &self,
        ctx: &GpuContext,
        enc: &mut dyn Recorder,
        bufs: &AdamBuffers<'_>,
        len: usize,
        lr: f64,
        (beta1, beta2): (f64, f64),
        eps: f64,
        step: u64,
    ) {
        if len == 0 {
            return;
        }
        let k = step_constants(lr, (beta1, beta2), step);
        let align = (ctx.limits.min_storage_buffer_offset_alignment as usize / 4).max(64);
        let max = (ctx.limits.max_storage_buffer_binding_size as usize / 4)
            .min(ctx.max_dispatch_invocations())
            / align
            * align;
        let chunk = max.max(align);
        let layout = self.pipeline.get_bind_group_layout(0);
        for first in (0..len).step_by(chunk) {
            let n = chunk.min(len - first);
            let params = AdamParams {
                n: [n as u32, 0, 0, 0],
                k,
                e: [eps as f32, 0.0, 0.0, 0.0],
            };
            let uniform = ctx
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("adam params"),
                    contents: bytemuck::bytes_of(&params),
                    usage: wgpu::BufferUsages::UNIFORM,
                });
            let entries: Vec<wgpu::BindGroupEntry> = [bufs.grads, bufs.values, bufs.m, bufs.v]
                .iter()
                .enumerate()
                .map(|(k, b)| wgpu::BindGroupEntry {
                    binding: 1 + k as u32,
                    resource: wgpu::BindingResource::Buffer(chunk_binding(b, first, n, 1)),
                })
                .chain(std::iter::once(wgpu::BindGroupEntry {
                    binding: 0,
                    resource: uniform.as_entire_binding(),
                }))
                .collect();
            let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("adam"),
                layout: &layout,
                entries: &entries,
            });
            let (x, y) = ctx.dispatch_size(groups_for(n as u32));
            crate::kernel::record_bound(ctx, enc, &self.pipeline, &bind, (x, y, 1));
        }
    }

    /// The per-stage interface: one update of `values` with `grads`, moments `m` and `v`, all on the host.
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &self,
        ctx: &GpuContext,
        values: &mut [f32],
        grads: &[f32],
        m: &mut [f32],
        v: &mut [f32],
        lr: f64,
        betas: (f64, f64),
        eps: f64,
        step: u64,
    ) -> Result<(), GpuError> {
        let len = values.len();
        assert!(
            grads.len() == len && m.len() == len && v.len() == len,
            "group sizes"
        );
        let bv = ctx.storage_from("values", values);
        let bg = ctx.storage_from("grads", grads);
        let bm = ctx.storage_from("m", m);
        let bvv = ctx.storage_from("v", v);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("adam"),
            });
        self.record(
            ctx,
            &mut enc,
            &AdamBuffers {
                values: &bv,
                grads: &bg,
                m: &bm,
                v: &bvv,
            },
            len,
            lr,
            betas,
            eps,
            step,
        );
        ctx.submit(enc);
        values.copy_from_slice(&ctx.read::<f32>(&bv, len)?);
        m.copy_from_slice(&ctx.read::<f32>(&bm, len)?);
        v.copy_from_slice(&ctx.read::<f32>(&bvv, len)?);
        Ok(())
    }
}
