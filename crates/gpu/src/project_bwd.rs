//! Project and SH backward on the GPU (`shaders/project_bwd.wgsl`): one invocation per Gaussian, output
//! packed per Gaussian (means 3, log_scales 3, rotations 4, opacity logit 1, sh_dc 3, sh_rest, and with
//! [`RenderSettings::pose_grads`] the Gaussian's 12 terms of the camera pose's gradient, which the host
//! sums in `f64` in Gaussian order), processed in chunks whose bindings fit the device's limits like the
//! forward.

use splat_core::{Camera, Gaussians, TileGrid};
use splat_render::project::CameraParams;
use splat_render::sh::active_coeffs;
use splat_render::types::reset_grads;
use splat_render::{GaussianGrads, PoseGrads, Projected, ProjectedGrads, RenderSettings};

use crate::context::{GpuContext, GpuError};
use crate::kernel::{compute_pipeline, module};
use crate::project::{camera_uniform, chunk_len_for, record_chunked, CameraUniform};

pub struct GpuProjectBackward {
    pub(crate) pipeline: wgpu::ComputePipeline,
}

impl GpuProjectBackward {
    pub fn new(ctx: &GpuContext) -> Self {
        let m = module(ctx, "project_bwd.wgsl", crate::shaders::PROJECT_BWD);
        let pipeline = compute_pipeline(ctx, &m, "project backward", "main");
        GpuProjectBackward { pipeline }
    }

    /// The per-stage interface: uploads the scene, the projection and its gradients, reads back the
    /// parameter gradients into `out` (shaped like `gaussians`).
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        ctx: &GpuContext,
        gaussians: &Gaussians<f32>,
        camera: &Camera,
        settings: &RenderSettings,
        projected: &Projected<f32>,
        grads: &ProjectedGrads<f32>,
        out: &mut GaussianGrads<f32>,
    ) -> Result<PoseGrads, GpuError> {
        reset_grads(out, gaussians, settings);
        let n = gaussians.len();
        if n == 0 {
            return Ok(PoseGrads::default());
        }
        let rest = gaussians.sh_rest_len();
        let params = 14 + rest;
        let stride = params + if settings.pose_grads { 12 } else { 0 };
        let bytes = (n * stride * 4) as u64;
        if bytes > ctx.limits.max_buffer_size {
            return Err(GpuError::TooLarge {
                what: "the parameter gradients",
                bytes,
                limit: ctx.limits.max_buffer_size,
            });
        }
        let inputs = upload_inputs(ctx, gaussians, projected, grads);
        let output = ctx.storage("parameter grads", bytes);
        let mut bindings: Vec<(u32, &wgpu::Buffer, usize)> = inputs
            .iter()
            .enumerate()
            .map(|(k, (b, words))| (1 + k as u32, b, *words))
            .collect();
        bindings.push((11, &output, stride));
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("project backward"),
            });
        record_chunked(
            ctx,
            &mut enc,
            &self.pipeline,
            &self.pipeline.get_bind_group_layout(0),
            n,
            chunk_len_for(ctx, stride),
            camera_for(camera, settings, gaussians),
            &bindings,
        );
        ctx.submit(enc);
        let packed: Vec<f32> = ctx.read(&output, n * stride)?;
        let mut pose = [0.0f64; 12];
        for (i, g) in packed.chunks_exact(stride).enumerate() {
            for (p, &v) in pose.iter_mut().zip(&g[params..]) {
                *p += v as f64;
            }
            out.means[i] = [g[0], g[1], g[2]];
            out.log_scales[i] = [g[3], g[4], g[5]];
            out.rotations[i] = [g[6], g[7], g[8], g[9]];
            out.opacity_logits[i] = g[10];
            if settings.sh_grads {
                out.sh_dc[i] = [g[11], g[12], g[13]];
                out.sh_rest[i * rest..(i + 1) * rest].copy_from_slice(&g[14..params]);
            }
        }
        Ok(PoseGrads::from_array(&pose))
    }
}

/// The per-stage inputs on the device, as `(buffer, words per Gaussian)` in binding order 1..=10:
/// the parameters the chain reads, the projection's outputs and their gradients.
pub(crate) fn upload_inputs(
    ctx: &GpuContext,
    gaussians: &Gaussians<f32>,
    projected: &Projected<f32>,
    grads: &ProjectedGrads<f32>,
) -> [(wgpu::Buffer, usize); 10] {
    let n = gaussians.len();
    let rest = gaussians.sh_rest_len();
    let packed_grads: Vec<f32> = (0..n)
        .flat_map(|i| {
            let (m, c, col) = (
                grads.grad_means2d[i],
                grads.grad_conics[i],
                grads.grad_colors[i],
            );
            [
                m[0],
                m[1],
                c[0],
                c[1],
                c[2],
                col[0],
                col[1],
                col[2],
                grads.grad_opacities[i],
            ]
        })
        .collect();
    let clamped: Vec<u32> = projected
        .color_clamped
        .iter()
        .map(|c| c[0] as u32 | (c[1] as u32) << 1 | (c[2] as u32) << 2)
        .collect();
    [
        (ctx.storage_from("means", gaussians.means.as_flattened()), 3),
        (
            ctx.storage_from("log_scales", gaussians.log_scales.as_flattened()),
            3,
        ),
        (
            ctx.storage_from("rotations", gaussians.rotations.as_flattened()),
            4,
        ),
        (ctx.storage_from("sh_dc", gaussians.sh_dc.as_flattened()), 3),
        (ctx.storage_from("sh_rest", &gaussians.sh_rest), rest),
        (ctx.storage_from("radii", &projected.radii), 1),
        (
            ctx.storage_from("conics", projected.conics.as_flattened()),
            3,
        ),
        (ctx.storage_from("opacities", &projected.opacities), 1),
        (ctx.storage_from("clamped", &clamped), 1),
        (ctx.storage_from("projected grads", &packed_grads), 9),
    ]
}

/// Chunk `len`'s camera block for the per-stage path (counts: Gaussians, active SH coefficients,
/// stored SH rest floats, bit 0 set on an antialiased scene).
pub(crate) fn camera_for<'a>(
    camera: &'a Camera,
    settings: &RenderSettings,
    gaussians: &Gaussians<f32>,
) -> impl Fn(usize) -> CameraUniform + 'a {
    let cam = CameraParams::<f32>::new(camera);
    let grid = TileGrid::new(camera.width, camera.height);
    let coeffs = active_coeffs(settings.sh_degree, gaussians.sh_degree) as u32;
    let rest = gaussians.sh_rest_len() as u32;
    let flags = gaussians.antialiased as u32 | (settings.pose_grads as u32) << 1;
    let alpha_min = settings.cutoffs.alpha_min;
    move |len| {
        camera_uniform(
            camera,
            &cam,
            &grid,
            alpha_min,
            [len as u32, coeffs, rest, flags],
        )
    }
}
