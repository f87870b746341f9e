//! A compute entry point and how to record its dispatches: a 16-byte parameter block at binding 0 and
//! storage buffers at the bindings the entry point uses (pipelines take their layout from the shader, which
//! holds only the bindings that entry point touches).

use wgpu::util::DeviceExt;

use crate::context::GpuContext;

/// Invocations per workgroup of every 1D kernel here.
pub const WORKGROUP: u32 = 256;

pub struct Kernel {
    pipeline: wgpu::ComputePipeline,
}

impl Kernel {
    pub fn new(
        ctx: &GpuContext,
        module: &wgpu::ShaderModule,
        label: &'static str,
        entry: &str,
    ) -> Self {
        let pipeline = ctx
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            });
        Kernel { pipeline }
    }

    pub(crate) fn pipeline(&self) -> &wgpu::ComputePipeline {
        &self.pipeline
    }

    /// Records `groups` workgroups (split into 2D within the device's per-dimension limit) with `params`
    /// as the uniform at binding 0 and `(binding, buffer)` storage bindings.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        enc: &mut wgpu::CommandEncoder,
        params: [u32; 4],
        buffers: &[(u32, &wgpu::Buffer)],
        groups: u32,
    ) {
        let (x, y) = ctx.dispatch_size(groups);
        record_pass(
            ctx,
            enc,
            &self.pipeline,
            bytemuck::cast_slice(&params),
            buffers,
            (x, y, 1),
        );
    }
}

/// Records one pass of `pipeline`: `params` as a new uniform at binding 0, whole `(binding, buffer)`
/// storage bindings, `groups` workgroups.
pub fn record_pass(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    pipeline: &wgpu::ComputePipeline,
    params: &[u8],
    buffers: &[(u32, &wgpu::Buffer)],
    groups: (u32, u32, u32),
) {
    let bindings: Vec<(u32, wgpu::BindingResource)> = buffers
        .iter()
        .map(|&(binding, b)| (binding, b.as_entire_binding()))
        .collect();
    record_pass_with(ctx, enc, pipeline, params, bindings, groups);
}

/// [`record_pass`] with any binding resources (e.g. sub-ranges of buffers).
pub fn record_pass_with(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    pipeline: &wgpu::ComputePipeline,
    params: &[u8],
    bindings: Vec<(u32, wgpu::BindingResource)>,
    groups: (u32, u32, u32),
) {
    let uniform = ctx
        .device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: params,
            usage: wgpu::BufferUsages::UNIFORM,
        });
    let mut entries = vec![wgpu::BindGroupEntry {
        binding: 0,
        resource: uniform.as_entire_binding(),
    }];
    entries.extend(
        bindings
            .into_iter()
            .map(|(binding, resource)| wgpu::BindGroupEntry { binding, resource }),
    );
    let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });
    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: None,
        timestamp_writes: None,
    });
    pass.set_pipeline(pipeline);
    pass.set_bind_group(0, &bind, &[]);
    pass.dispatch_workgroups(groups.0, groups.1, groups.2);
}

/// Workgroups for `n` invocations.
pub fn groups_for(n: u32) -> u32 {
    n.div_ceil(WORKGROUP).max(1)
}

pub fn module(ctx: &GpuContext, label: &str, source: &str) -> wgpu::ShaderModule {
    ctx.device
        .create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        })
}
