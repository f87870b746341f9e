//! The training loss on the GPU (`shaders/loss.wgsl`): L1 + D-SSIM and its gradient, the same formulas as
//! `splat_train::loss`, as a sequence of full-image passes (products, separable blurs, the SSIM map and its
//! coefficients, their blurs, the gradient). The loss value comes from per-row sums added on the host in
//! f64 (the only read-back; the gradient stays on the device).

use splat_train::loss::{gaussian_taps, LossValue, SSIM_C1, SSIM_C2};

use crate::context::{GpuContext, GpuError};
use crate::kernel::{module, record_pass};

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct LossParams {
    dims: [u32; 4],
    t0: [f32; 4],
    t1: [f32; 4],
    t2: [f32; 4],
    k: [f32; 4],
}

pub struct GpuLoss {
    products: wgpu::ComputePipeline,
    blur_h: wgpu::ComputePipeline,
    blur_v: wgpu::ComputePipeline,
    ssim_map: wgpu::ComputePipeline,
    row_sums: wgpu::ComputePipeline,
    grad: wgpu::ComputePipeline,
}

impl GpuLoss {
    pub fn new(ctx: &GpuContext) -> Self {
        let m = module(ctx, "loss.wgsl", crate::shaders::LOSS);
        let p = |entry: &str| {
            ctx.device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry),
                    layout: None,
                    module: &m,
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    cache: None,
                })
        };
        GpuLoss {
            products: p("products"),
            blur_h: p("blur_h"),
            blur_v: p("blur_v"),
            ssim_map: p("ssim_map"),
            row_sums: p("row_sums"),
            grad: p("grad_pass"),
        }
    }

    /// The per-stage interface, like `splat_train::loss::loss_and_grad` with `f32` images on the host.
    #[allow(clippy::too_many_arguments)]
    pub fn loss_and_grad(
        &self,
        ctx: &GpuContext,
        render: &[f32],
        target: &[f32],
        w: usize,
        h: usize,
        lambda: f64,
        grad: &mut Vec<f32>,
    ) -> Result<LossValue, GpuError> {
        let n = w * h * 3;
        assert_eq!(render.len(), n, "render size");
        assert_eq!(target.len(), n, "target size");
        let plane = (w * h) as u64 * 4;
        if 15 * plane > ctx.limits.max_storage_buffer_binding_size {
            return Err(GpuError::TooLarge {
                what: "the SSIM planes",
                bytes: 15 * plane,
                limit: ctx.limits.max_storage_buffer_binding_size,
            });
        }
        let taps = gaussian_taps::<f32>();
        let inv_n = 1.0 / n as f64;
        let params = |planes: u32| LossParams {
            dims: [w as u32, h as u32, planes, 0],
            t0: [taps[0], taps[1], taps[2], taps[3]],
            t1: [taps[4], taps[5], taps[6], taps[7]],
            t2: [taps[8], taps[9], taps[10], 0.0],
            k: [
                ((1.0 - lambda) * inv_n) as f32,
                (-lambda * inv_n) as f32,
                SSIM_C1 as f32,
                SSIM_C2 as f32,
            ],
        };
        let rb = ctx.storage_from("render", render);
        let tb = ctx.storage_from("target", target);
        let products = ctx.storage("products", 15 * plane);
        let tmp = ctx.storage("blur tmp", 15 * plane);
        let blurred = ctx.storage("blurred", 15 * plane);
        let maps = ctx.storage("map and coefficients", 12 * plane);
        let coeffs_tmp = ctx.storage("coefficient tmp", 9 * plane);
        let coeffs = ctx.storage("blurred coefficients", 9 * plane);
        let sums = ctx.storage("row sums", 2 * h as u64 * 4);
        let grad_buf = ctx.storage("grad", n as u64 * 4);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("loss"),
            });
        let (gx, gy) = ((w as u32).div_ceil(16), (h as u32).div_ceil(16));
        let e = &mut enc;
        pass(
            ctx,
            e,
            &self.products,
            &params(3),
            &[(1, &rb), (2, &tb), (4, &products)],
            (gx, gy, 3),
        );
        pass(
            ctx,
            e,
            &self.blur_h,
            &params(15),
            &[(3, &products), (4, &tmp)],
            (gx, gy, 15),
        );
        pass(
            ctx,
            e,
            &self.blur_v,
            &params(15),
            &[(3, &tmp), (4, &blurred)],
            (gx, gy, 15),
        );
        pass(
            ctx,
            e,
            &self.ssim_map,
            &params(3),
            &[(3, &blurred), (5, &maps)],
            (gx, gy, 3),
        );
        let sums_bindings = [(1, &rb), (2, &tb), (5, &maps), (6, &sums)];
        pass(
            ctx,
            e,
            &self.row_sums,
            &params(1),
            &sums_bindings,
            ((h as u32).div_ceil(64), 1, 1),
        );
        // The coefficients are planes 3..12 of `maps`: blur a copy.
        e.copy_buffer_to_buffer(&maps, 3 * plane, &coeffs, 0, 9 * plane);
        pass(
            ctx,
            e,
            &self.blur_h,
            &params(9),
            &[(3, &coeffs), (4, &coeffs_tmp)],
            (gx, gy, 9),
        );
        pass(
            ctx,
            e,
            &self.blur_v,
            &params(9),
            &[(3, &coeffs_tmp), (4, &coeffs)],
            (gx, gy, 9),
        );
        let grad_bindings = [(1, &rb), (2, &tb), (3, &coeffs), (7, &grad_buf)];
        pass(ctx, e, &self.grad, &params(3), &grad_bindings, (gx, gy, 3));
        ctx.queue.submit([enc.finish()]);
        let row_sums: Vec<f32> = ctx.read(&sums, 2 * h)?;
        *grad = ctx.read(&grad_buf, n)?;
        let ssim = row_sums[..h].iter().map(|&v| v as f64).sum::<f64>() / n as f64;
        let l1 = row_sums[h..].iter().map(|&v| v as f64).sum::<f64>() / n as f64;
        Ok(LossValue {
            loss: (1.0 - lambda) * l1 + lambda * (1.0 - ssim),
            l1,
            ssim,
        })
    }
}

/// One pass of the loss with `params` as its uniform.
fn pass(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    pipeline: &wgpu::ComputePipeline,
    params: &LossParams,
    bindings: &[(u32, &wgpu::Buffer)],
    groups: (u32, u32, u32),
) {
    record_pass(
        ctx,
        enc,
        pipeline,
        bytemuck::bytes_of(params),
        bindings,
        groups,
    );
}
