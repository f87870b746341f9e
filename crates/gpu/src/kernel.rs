//! A compute entry point and how to record its dispatches: a 16-byte parameter block at binding 0 and
//! storage buffers at the bindings the entry point uses (pipelines take their layout from the shader, which
//! holds only the bindings that entry point touches).

use wgpu::util::DeviceExt;

use crate::context::GpuContext;
use crate::timing::PassTimer;

/// Where recorded GPU work goes: a command encoder, or a list of operations replayed later (the
/// resident trainer records the parts of a step that do not change once, then replays them every step).
pub trait Recorder {
    fn pass(
        &mut self,
        pipeline: &wgpu::ComputePipeline,
        bind: &wgpu::BindGroup,
        groups: (u32, u32, u32),
    );
    /// A pass whose workgroup counts a previous dispatch wrote into `args` at `offset` (x, y, z).
    fn pass_indirect(
        &mut self,
        pipeline: &wgpu::ComputePipeline,
        bind: &wgpu::BindGroup,
        args: &wgpu::Buffer,
        offset: u64,
    );
    fn copy(
        &mut self,
        src: &wgpu::Buffer,
        src_offset: u64,
        dst: &wgpu::Buffer,
        dst_offset: u64,
        size: u64,
    );
    fn clear(&mut self, buffer: &wgpu::Buffer);
    /// A place for work recorded per use (only a list has them).
    fn hole(&mut self, id: u32);
    /// Where stage `id`'s work starts (for device timing; only a list keeps it).
    fn stage(&mut self, _id: u32) {}
    /// Whether what is recorded here runs once per replay (a list), not once (an encoder): dispatches
    /// are counted when recorded into an encoder, and for a list each time it is replayed.
    fn is_template(&self) -> bool {
        false
    }
}

impl Recorder for wgpu::CommandEncoder {
    fn pass(
        &mut self,
        pipeline: &wgpu::ComputePipeline,
        bind: &wgpu::BindGroup,
        groups: (u32, u32, u32),
    ) {
        let mut pass = self.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: None,
            timestamp_writes: None,
        });
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, bind, &[]);
        pass.dispatch_workgroups(groups.0, groups.1, groups.2);
    }
    fn pass_indirect(
        &mut self,
        pipeline: &wgpu::ComputePipeline,
        bind: &wgpu::BindGroup,
        args: &wgpu::Buffer,
        offset: u64,
    ) {
        let mut pass = self.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: None,
            timestamp_writes: None,
        });
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, bind, &[]);
        pass.dispatch_workgroups_indirect(args, offset);
    }
    fn copy(
        &mut self,
        src: &wgpu::Buffer,
        src_offset: u64,
        dst: &wgpu::Buffer,
        dst_offset: u64,
        size: u64,
    ) {
        self.copy_buffer_to_buffer(src, src_offset, dst, dst_offset, size);
    }
    fn clear(&mut self, buffer: &wgpu::Buffer) {
        self.clear_buffer(buffer, 0, None);
    }
    fn hole(&mut self, id: u32) {
        unreachable!("hole {id} recorded straight into an encoder");
    }
}

/// The workgroups of a recorded pass: counts known when recording, or read by the device from an
/// argument buffer at an offset (written by an earlier dispatch).
#[derive(Clone, Debug)]
pub enum Groups {
    Direct(u32, u32, u32),
    Indirect(wgpu::Buffer, u64),
}

/// A recorded operation (see [`Recorder`]).
#[derive(Clone, Debug)]
pub enum Op {
    Pass {
        pipeline: wgpu::ComputePipeline,
        bind: wgpu::BindGroup,
        groups: Groups,
    },
    Copy {
        src: wgpu::Buffer,
        src_offset: u64,
        dst: wgpu::Buffer,
        dst_offset: u64,
        size: u64,
    },
    Clear(wgpu::Buffer),
    Hole(u32),
    Stage(u32),
}

impl Recorder for Vec<Op> {
    fn pass(
        &mut self,
        pipeline: &wgpu::ComputePipeline,
        bind: &wgpu::BindGroup,
        groups: (u32, u32, u32),
    ) {
        self.push(Op::Pass {
            pipeline: pipeline.clone(),
            bind: bind.clone(),
            groups: Groups::Direct(groups.0, groups.1, groups.2),
        });
    }
    fn pass_indirect(
        &mut self,
        pipeline: &wgpu::ComputePipeline,
        bind: &wgpu::BindGroup,
        args: &wgpu::Buffer,
        offset: u64,
    ) {
        self.push(Op::Pass {
            pipeline: pipeline.clone(),
            bind: bind.clone(),
            groups: Groups::Indirect(args.clone(), offset),
        });
    }
    fn copy(
        &mut self,
        src: &wgpu::Buffer,
        src_offset: u64,
        dst: &wgpu::Buffer,
        dst_offset: u64,
        size: u64,
    ) {
        self.push(Op::Copy {
            src: src.clone(),
            src_offset,
            dst: dst.clone(),
            dst_offset,
            size,
        });
    }
    fn clear(&mut self, buffer: &wgpu::Buffer) {
        self.push(Op::Clear(buffer.clone()));
    }
    fn hole(&mut self, id: u32) {
        self.push(Op::Hole(id));
    }
    fn stage(&mut self, id: u32) {
        self.push(Op::Stage(id));
    }
    fn is_template(&self) -> bool {
        true
    }
}

/// Records `ops` into `enc`; at each hole, `fill` records that hole's work into a list, replayed in
/// its place. Consecutive dispatches share one compute pass (wgpu orders them by their buffer usage as it
/// does separate passes). With a `timer`, passes also break at stage marks and each writes timestamps
/// charged to its stage (see [`crate::timing`]).
pub fn replay(
    ctx: &GpuContext,
    ops: &[Op],
    enc: &mut wgpu::CommandEncoder,
    mut timer: Option<&mut PassTimer>,
    fill: &mut dyn FnMut(&mut Vec<Op>, u32),
) {
    let mut stage = 0;
    replay_from(ctx, ops, enc, &mut timer, &mut stage, fill);
}

fn replay_from(
    ctx: &GpuContext,
    ops: &[Op],
    enc: &mut wgpu::CommandEncoder,
    timer: &mut Option<&mut PassTimer>,
    stage: &mut u32,
    fill: &mut dyn FnMut(&mut Vec<Op>, u32),
) {
    let timed = timer.is_some();
    let mut at = 0;
    while at < ops.len() {
        // Untimed, stage marks do not end a pass.
        let run = ops[at..]
            .iter()
            .take_while(|op| {
                matches!(op, Op::Pass { .. }) || (!timed && matches!(op, Op::Stage(_)))
            })
            .count();
        let dispatches = ops[at..at + run]
            .iter()
            .filter(|op| matches!(op, Op::Pass { .. }))
            .count();
        if dispatches > 0 {
            ctx.counters.add_dispatches(dispatches as u64);
            let timestamp_writes = timer.as_deref_mut().and_then(|t| t.next_pass(*stage));
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes,
            });
            for op in &ops[at..at + run] {
                match op {
                    Op::Pass {
                        pipeline,
                        bind,
                        groups,
                    } => {
                        pass.set_pipeline(pipeline);
                        pass.set_bind_group(0, bind, &[]);
                        match groups {
                            Groups::Direct(x, y, z) => pass.dispatch_workgroups(*x, *y, *z),
                            Groups::Indirect(args, offset) => {
                                pass.dispatch_workgroups_indirect(args, *offset)
                            }
                        }
                    }
                    Op::Stage(id) => *stage = *id,
                    _ => unreachable!("runs hold passes and stage marks"),
                }
            }
            at += run;
            continue;
        }
        match &ops[at] {
            Op::Copy {
                src,
                src_offset,
                dst,
                dst_offset,
                size,
            } => enc.copy_buffer_to_buffer(src, *src_offset, dst, *dst_offset, *size),
            Op::Clear(b) => enc.clear_buffer(b, 0, None),
            Op::Hole(id) => {
                let mut work = Vec::new();
                fill(&mut work, *id);
                replay_from(ctx, &work, enc, timer, stage, fill);
            }
            Op::Stage(id) => *stage = *id,
            Op::Pass { .. } => unreachable!("taken above"),
        }
        at += 1;
    }
}

pub use crate::context::WORKGROUP;

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
        Kernel {
            pipeline: compute_pipeline(ctx, module, label, entry),
        }
    }

    /// Records `groups` workgroups (split into 2D within the device's per-dimension limit) with `params`
    /// as the uniform at binding 0 and `(binding, buffer)` storage bindings.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        enc: &mut dyn Recorder,
        params: [u32; 4],
        buffers: &[(u32, &wgpu::Buffer)],
        groups: u32,
    ) {
        self.dispatch_bytes(ctx, enc, bytemuck::cast_slice(&params), buffers, groups);
    }

    /// [`Kernel::dispatch`] with a parameter block of any size.
    pub fn dispatch_bytes(
        &self,
        ctx: &GpuContext,
        enc: &mut dyn Recorder,
        params: &[u8],
        buffers: &[(u32, &wgpu::Buffer)],
        groups: u32,
    ) {
        let (x, y) = ctx.dispatch_size(groups);
        record_pass(ctx, enc, &self.pipeline, params, buffers, (x, y, 1));
    }

    /// [`Kernel::dispatch_bytes`] with the workgroup counts read from `args` at `offset` when the pass
    /// runs (see `shaders/dispatch_args.wgsl`).
    pub fn dispatch_indirect(
        &self,
        ctx: &GpuContext,
        enc: &mut dyn Recorder,
        params: &[u8],
        buffers: &[(u32, &wgpu::Buffer)],
        (args, offset): (&wgpu::Buffer, u64),
    ) {
        let bind = bind_group(ctx, &self.pipeline, params, whole(buffers));
        if !enc.is_template() {
            ctx.counters.add_dispatches(1);
        }
        enc.pass_indirect(&self.pipeline, &bind, args, offset);
    }
}

fn whole<'a>(buffers: &[(u32, &'a wgpu::Buffer)]) -> Vec<(u32, wgpu::BindingResource<'a>)> {
    buffers
        .iter()
        .map(|&(binding, b)| (binding, b.as_entire_binding()))
        .collect()
}

/// Records one pass of `pipeline`: `params` as a new uniform at binding 0, whole `(binding, buffer)`
/// storage bindings, `groups` workgroups.
pub fn record_pass(
    ctx: &GpuContext,
    enc: &mut dyn Recorder,
    pipeline: &wgpu::ComputePipeline,
    params: &[u8],
    buffers: &[(u32, &wgpu::Buffer)],
    groups: (u32, u32, u32),
) {
    record_pass_with(ctx, enc, pipeline, params, whole(buffers), groups);
}

/// [`record_pass`] with any binding resources (e.g. sub-ranges of buffers).
pub fn record_pass_with(
    ctx: &GpuContext,
    enc: &mut dyn Recorder,
    pipeline: &wgpu::ComputePipeline,
    params: &[u8],
    bindings: Vec<(u32, wgpu::BindingResource)>,
    groups: (u32, u32, u32),
) {
    let bind = bind_group(ctx, pipeline, params, bindings);
    record_bound(ctx, enc, pipeline, &bind, groups);
}

/// `params` as a new uniform at binding 0 and `bindings` in one bind group of `pipeline`'s layout.
fn bind_group(
    ctx: &GpuContext,
    pipeline: &wgpu::ComputePipeline,
    params: &[u8],
    bindings: Vec<(u32, wgpu::BindingResource)>,
) -> wgpu::BindGroup {
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
    ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    })
}

/// Records one pass of `pipeline` with a made bind group (every dispatch goes through here: it counts).
pub fn record_bound(
    ctx: &GpuContext,
    enc: &mut dyn Recorder,
    pipeline: &wgpu::ComputePipeline,
    bind: &wgpu::BindGroup,
    groups: (u32, u32, u32),
) {
    if !enc.is_template() {
        ctx.counters.add_dispatches(1);
    }
    enc.pass(pipeline, bind, groups);
}

/// Workgroups for `n` invocations.
pub fn groups_for(n: u32) -> u32 {
    n.div_ceil(WORKGROUP).max(1)
}

/// The pipeline of `module`'s `entry`, its bind group layout derived from the shader.
pub fn compute_pipeline(
    ctx: &GpuContext,
    module: &wgpu::ShaderModule,
    label: &str,
    entry: &str,
) -> wgpu::ComputePipeline {
    ctx.device
        .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(label),
            layout: None,
            module,
            entry_point: Some(entry),
            compilation_options: Default::default(),
            cache: None,
        })
}

pub fn module(ctx: &GpuContext, label: &str, source: &str) -> wgpu::ShaderModule {
    ctx.device
        .create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        })
}
