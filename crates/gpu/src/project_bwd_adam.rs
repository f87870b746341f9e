//! The projection backward fused with Adam, as the resident step runs it (`project_bwd.wgsl`'s `check`
//! and `apply`): the parameter gradients (59 floats a Gaussian at SH 3) are never stored.
//!
//! A step must change nothing when a loss or gradient is not finite, and Adam cannot be undone, so the
//! gradients are formed twice: `check` forms them and only sets the status's non-finite word (with the
//! loss's row sums); after the step's verdict, `apply` forms them again and updates every group the step
//! updates in place. The second forming is one Gaussian's chain, a few hundred FLOPs from values `apply`
//! reads anyway; what it saves is the packed gradients' 236 bytes a Gaussian at SH 3, their write, the
//! check's read and Adam's read, and six dispatches (one per group) a step. The arithmetic is
//! `adam.wgsl`'s, so the result equals the project backward followed by [`crate::GpuAdam`] (tested).
//!
//! [`GpuProjectBackwardAdam::run`] is the per-stage twin the tests compare with the unfused kernels.

use splat_core::{Camera, Gaussians};
use splat_render::{Projected, ProjectedGrads, RenderSettings};
use splat_train::adam::AdamState;
use splat_train::state::{group_params, group_width, GROUPS};

use crate::adam::step_constants;
use crate::context::{GpuContext, GpuError};
use crate::kernel::{compute_pipeline, module, Recorder};
use crate::project::{camera_blocks, chunk_len_for, record_chunked_with};
use crate::project_bwd::{camera_for, upload_inputs};

/// Storage buffers `apply` binds (parameters, moments, projection, gradients, status).
pub const STORAGE_BINDINGS: u32 = 24;

/// `project_bwd.wgsl`'s `AdamStep` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct AdamStepUniform {
    k: [[f32; 4]; 6],
    e: [f32; 4],
    n: [u32; 4],
}

/// One Adam step of every parameter group as `apply` takes it.
#[derive(Clone, Copy, Debug)]
pub struct AdamStep {
    /// Per group, in [`GROUPS`] order: the learning rate and the group's step count after this update
    /// (the bias corrections are computed in f64, as the CPU does); `None`: not updated this step.
    pub groups: [Option<(f64, u64)>; 6],
    pub betas: (f64, f64),
    pub eps: f64,
    /// Visible-only Adam: a Gaussian the step's view does not see (radius 0) keeps its values and
    /// moments (`splat_train::adam::AdamState::update_visible`).
    pub visible_only: bool,
    /// 3DGS-MCMC's regularizer gradients added before the update, per Gaussian
    /// (`splat_train::mcmc::add_regularizer` with one view): `[opacity_reg / n, scale_reg / (3 n)]`.
    pub regularizer: [f64; 2],
}

impl AdamStep {
    /// No group updated (the check's uniform).
    pub fn none() -> Self {
        AdamStep {
            groups: [None; 6],
            betas: (0.0, 0.0),
            eps: 0.0,
            visible_only: false,
            regularizer: [0.0; 2],
        }
    }

    fn uniform(&self, rows: u32) -> AdamStepUniform {
        let [wo, ws] = self.regularizer;
        let mut u = AdamStepUniform {
            e: [self.eps as f32, wo as f32, ws as f32, 0.0],
            n: [0, rows, self.visible_only as u32, 0],
            ..Default::default()
        };
        for (g, group) in self.groups.iter().enumerate() {
            if let Some((lr, t)) = *group {
                u.k[g] = step_constants(lr, self.betas, t);
                u.n[0] |= 1 << g;
            }
        }
        u
    }
}

/// The device buffers of the fused kernels.
pub(crate) struct FusedBuffers<'a> {
    /// Parameters and moments in [`GROUPS`] order.
    pub params: &'a [wgpu::Buffer],
    pub m: &'a [wgpu::Buffer],
    pub v: &'a [wgpu::Buffer],
    /// The projection's radii, conics, opacities and clamp flags, and their gradients (9 a Gaussian).
    pub radii: &'a wgpu::Buffer,
    pub conics: &'a wgpu::Buffer,
    pub opacities: &'a wgpu::Buffer,
    pub clamped: &'a wgpu::Buffer,
    pub projected_grads: &'a wgpu::Buffer,
    pub status: &'a wgpu::Buffer,
    /// Stored SH rest floats a Gaussian.
    pub rest: usize,
}

impl FusedBuffers<'_> {
    /// Bindings 1..=10 and the status, as `(binding, buffer, words per Gaussian)`.
    fn common(&self) -> Vec<(u32, &wgpu::Buffer, usize)> {
        let p = self.params;
        vec![
            (1, &p[0], 3),
            (2, &p[4], 3),
            (3, &p[5], 4),
            (4, &p[1], 3),
            (5, &p[2], self.rest),
            (6, self.radii, 1),
            (7, self.conics, 3),
            (8, self.opacities, 1),
            (9, self.clamped, 1),
            (10, self.projected_grads, 9),
            (12, self.status, 0),
        ]
    }

    /// Everything `apply` binds but the step's uniform.
    fn for_apply(&self) -> Vec<(u32, &wgpu::Buffer, usize)> {
        let mut b = self.common();
        b.push((15, &self.params[3], 1));
        let widths = [3, 3, self.rest, 1, 3, 4];
        for (g, &w) in widths.iter().enumerate() {
            b.push((16 + 2 * g as u32, &self.m[g], w));
            b.push((17 + 2 * g as u32, &self.v[g], w));
        }
        b
    }
}

pub struct GpuProjectBackwardAdam {
    check: wgpu::ComputePipeline,
    apply: wgpu::ComputePipeline,
}

impl GpuProjectBackwardAdam {
    /// The two pipelines, or why the adapter cannot run them (too few storage buffers a stage).
    pub fn new(ctx: &GpuContext) -> Result<Self, String> {
        let have = ctx.limits.max_storage_buffers_per_shader_stage;
        if have < STORAGE_BINDINGS {
            return Err(format!(
                "the adapter binds {have} storage buffers per shader stage; the fused projection \
                 backward and Adam needs {STORAGE_BINDINGS}"
            ));
        }
        let m = module(ctx, "project_bwd.wgsl", crate::shaders::PROJECT_BWD);
        let pipeline = |entry: &str| compute_pipeline(ctx, &m, entry, entry);
        Ok(GpuProjectBackwardAdam {
            check: pipeline("check"),
            apply: pipeline("apply"),
        })
    }

    /// Gaussians a chunk of either kernel holds (its widest per-Gaussian binding fits the limit).
    pub fn chunk_len(ctx: &GpuContext, rest: usize) -> usize {
        chunk_len_for(ctx, rest.max(9))
    }

    /// Records `check` over `n` Gaussians in chunks of `chunk` (camera blocks in `cameras`, one per chunk
    /// at the uniform stride): sets the status's non-finite word when a gradient, or one of the `rows`
    /// loss row sums, is not finite.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record_check(
        &self,
        ctx: &GpuContext,
        enc: &mut dyn Recorder,
        bufs: &FusedBuffers<'_>,
        (n, chunk): (usize, usize),
        cameras: &wgpu::Buffer,
        row_sums: &wgpu::Buffer,
        rows: u32,
    ) {
        let step = ctx.uniform_from("check", &AdamStep::none().uniform(rows));
        let mut bindings = bufs.common();
        bindings.extend([(13, row_sums, 0), (14, &step, 0)]);
        let layout = self.check.get_bind_group_layout(0);
        record_chunked_with(ctx, enc, &self.check, &layout, n, chunk, cameras, &bindings);
    }

    /// Records `apply` (skipped on the device by a halted step).
    pub(crate) fn record_apply(
        &self,
        ctx: &GpuContext,
        enc: &mut dyn Recorder,
        bufs: &FusedBuffers<'_>,
        (n, chunk): (usize, usize),
        cameras: &wgpu::Buffer,
        step: &AdamStep,
    ) {
        let step = ctx.uniform_from("adam step", &step.uniform(0));
        let mut bindings = bufs.for_apply();
        bindings.push((14, &step, 0));
        let layout = self.apply.get_bind_group_layout(0);
        record_chunked_with(ctx, enc, &self.apply, &layout, n, chunk, cameras, &bindings);
    }

    /// The per-stage twin: the gradients of `gaussians` under `camera` from the projection's gradients,
    /// then, when every one is finite, Adam on each group `lrs` gives a learning rate (its step count in
    /// `adam` advanced). Returns false, changing nothing, when a gradient is not finite.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        ctx: &GpuContext,
        gaussians: &mut Gaussians<f32>,
        adam: &mut [AdamState],
        camera: &Camera,
        settings: &RenderSettings,
        projected: &Projected<f32>,
        grads: &ProjectedGrads<f32>,
        lrs: [Option<f64>; 6],
        (betas, eps): ((f64, f64), f64),
    ) -> Result<bool, GpuError> {
        let n = gaussians.len();
        if n == 0 {
            return Ok(true);
        }
        let rest = gaussians.sh_rest_len();
        let inputs = upload_inputs(ctx, gaussians, projected, grads);
        let params: Vec<wgpu::Buffer> = (0..GROUPS.len())
            .map(|g| ctx.storage_from(GROUPS[g], group_params(gaussians, g)))
            .collect();
        let m: Vec<wgpu::Buffer> = adam.iter().map(|a| ctx.storage_from("m", &a.m)).collect();
        let v: Vec<wgpu::Buffer> = adam.iter().map(|a| ctx.storage_from("v", &a.v)).collect();
        let status = ctx.storage_from("status", &[0u32; 8]);
        let bufs = FusedBuffers {
            params: &params,
            m: &m,
            v: &v,
            radii: &inputs[5].0,
            conics: &inputs[6].0,
            opacities: &inputs[7].0,
            clamped: &inputs[8].0,
            projected_grads: &inputs[9].0,
            status: &status,
            rest,
        };
        let chunk = Self::chunk_len(ctx, rest);
        let cameras = camera_blocks(ctx, n, chunk, camera_for(camera, settings, gaussians));
        let no_rows = ctx.storage("no loss rows", 16);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        self.record_check(ctx, &mut enc, &bufs, (n, chunk), &cameras, &no_rows, 0);
        ctx.submit(enc);
        if ctx.read::<u32>(&status, 8)?[4] != 0 {
            return Ok(false);
        }
        let mut step = AdamStep {
            betas,
            eps,
            ..AdamStep::none()
        };
        for (g, lr) in lrs.iter().enumerate() {
            if let Some(lr) = *lr {
                adam[g].step += 1;
                step.groups[g] = Some((lr, adam[g].step));
            }
        }
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        self.record_apply(ctx, &mut enc, &bufs, (n, chunk), &cameras, &step);
        ctx.submit(enc);
        for g in 0..GROUPS.len() {
            let len = n * group_width(gaussians, g);
            if len == 0 {
                continue;
            }
            group_params(gaussians, g).copy_from_slice(&ctx.read::<f32>(&params[g], len)?);
            adam[g].m.copy_from_slice(&ctx.read::<f32>(&m[g], len)?);
            adam[g].v.copy_from_slice(&ctx.read::<f32>(&v[g], len)?);
        }
        Ok(true)
    }
}
