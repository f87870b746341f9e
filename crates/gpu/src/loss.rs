//! The training loss on the GPU (`shaders/loss.wgsl`): L1 + D-SSIM and its gradient, the same formulas as
//! `splat_train::loss`, as five full-image passes (the products blurred along rows; along columns with
//! the SSIM map and its coefficients; the row sums; the coefficients along rows; along columns with the
//! gradient). The loss value comes from per-row sums added on the host in
//! f64 (the only read-back; the gradient stays on the device).

use splat_train::loss::{gaussian_taps, LossValue, SSIM_C1, SSIM_C2};

use crate::context::{GpuContext, GpuError};
use crate::kernel::{compute_pipeline, module, record_pass, Recorder};

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
    products_h: wgpu::ComputePipeline,
    blur_h: wgpu::ComputePipeline,
    ssim_map_v: wgpu::ComputePipeline,
    row_sums: wgpu::ComputePipeline,
    grad_v: wgpu::ComputePipeline,
}

impl GpuLoss {
    pub fn new(ctx: &GpuContext) -> Self {
        let m = module(ctx, "loss.wgsl", crate::shaders::LOSS);
        let p = |entry: &str| compute_pipeline(ctx, &m, entry, entry);
        GpuLoss {
            products_h: p("products_h"),
            blur_h: p("blur_h"),
            ssim_map_v: p("ssim_map_v"),
            row_sums: p("row_sums"),
            grad_v: p("grad_v"),
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
        let bufs = LossBuffers::new(ctx, w, h)?;
        let rb = ctx.storage_from("render", render);
        let tb = ctx.storage_from("target", target);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("loss"),
            });
        self.record(ctx, &mut enc, &rb, &tb, &bufs, lambda);
        ctx.submit(enc);
        let row_sums: Vec<f32> = ctx.read(&bufs.sums, 3 * h)?;
        *grad = ctx.read(&bufs.grad, n)?;
        Ok(loss_from_row_sums(&row_sums, w, h, lambda).0)
    }

    /// Records the loss of `render` against `target` (device images of `bufs`' size): the gradient into
    /// `bufs.grad`, the row sums into `bufs.sums`.
    pub(crate) fn record(
        &self,
        ctx: &GpuContext,
        e: &mut dyn Recorder,
        rb: &wgpu::Buffer,
        tb: &wgpu::Buffer,
        bufs: &LossBuffers,
        lambda: f64,
    ) {
        let (w, h) = (bufs.width, bufs.height);
        let n = w * h * 3;
        let taps = gaussian_taps::<f32>();
        let inv_n = 1.0 / n as f64;
        let params = |planes: u32, first: u32| LossParams {
            dims: [w as u32, h as u32, planes, first],
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
        let LossBuffers {
            tmp,
            maps,
            coeffs_tmp,
            sums,
            grad: grad_buf,
            ..
        } = bufs;
        let (gx, gy) = ((w as u32).div_ceil(16), (h as u32).div_ceil(16));
        // The 15 product planes along rows, then along columns with the SSIM map and coefficients.
        pass(
            ctx,
            e,
            &self.products_h,
            &params(15, 0),
            &[(1, rb), (2, tb), (4, tmp)],
            (gx, gy, 3),
        );
        pass(
            ctx,
            e,
            &self.ssim_map_v,
            &params(3, 0),
            &[(3, tmp), (5, maps)],
            (gx, gy, 3),
        );
        let sums_bindings = [(1, rb), (2, tb), (5, maps), (6, sums)];
        pass(
            ctx,
            e,
            &self.row_sums,
            &params(1, 0),
            &sums_bindings,
            rows_dispatch(ctx, h as u32),
        );
        // The coefficients (planes 3..12 of `maps`) along rows, then along columns with the gradient.
        pass(
            ctx,
            e,
            &self.blur_h,
            &params(9, 3),
            &[(3, maps), (4, coeffs_tmp)],
            (gx, gy, 3),
        );
        let grad_bindings = [(1, rb), (2, tb), (3, coeffs_tmp), (7, grad_buf)];
        pass(
            ctx,
            e,
            &self.grad_v,
            &params(3, 0),
            &grad_bindings,
            (gx, gy, 3),
        );
    }
}

/// The loss value and the PSNR (of the render clamped to [0, 1]) from the `3 h` row sums the loss
/// writes (SSIM map, |x - y|, squared error per row), added in f64.
pub fn loss_from_row_sums(row_sums: &[f32], w: usize, h: usize, lambda: f64) -> (LossValue, f64) {
    let n = (w * h * 3) as f64;
    let sum = |r: &[f32]| r.iter().map(|&v| v as f64).sum::<f64>() / n;
    let ssim = sum(&row_sums[..h]);
    let l1 = sum(&row_sums[h..2 * h]);
    let mse = sum(&row_sums[2 * h..3 * h]);
    let psnr = if mse <= 0.0 {
        f64::INFINITY
    } else {
        -10.0 * mse.log10()
    };
    let value = LossValue {
        loss: (1.0 - lambda) * l1 + lambda * (1.0 - ssim),
        l1,
        ssim,
    };
    (value, psnr)
}

/// The loss's device buffers for one image size (the planes of the SSIM, the row sums, the gradient).
pub(crate) struct LossBuffers {
    pub(crate) width: usize,
    pub(crate) height: usize,
    tmp: wgpu::Buffer,
    maps: wgpu::Buffer,
    coeffs_tmp: wgpu::Buffer,
    /// SSIM map, |x - y| and squared error, per row (3 h).
    pub(crate) sums: wgpu::Buffer,
    /// The image gradient (RGB per pixel).
    pub(crate) grad: wgpu::Buffer,
}

impl LossBuffers {
    pub(crate) fn new(ctx: &GpuContext, w: usize, h: usize) -> Result<Self, GpuError> {
        let plane = (w * h) as u64 * 4;
        if 15 * plane > ctx.limits.max_storage_buffer_binding_size {
            return Err(GpuError::TooLarge {
                what: "the SSIM planes",
                bytes: 15 * plane,
                limit: ctx.limits.max_storage_buffer_binding_size,
            });
        }
        Ok(LossBuffers {
            width: w,
            height: h,
            tmp: ctx.storage("products along rows", 15 * plane),
            maps: ctx.storage("map and coefficients", 12 * plane),
            coeffs_tmp: ctx.storage("coefficients along rows", 9 * plane),
            sums: ctx.storage("row sums", 3 * h as u64 * 4),
            grad: ctx.storage("grad", 3 * plane),
        })
    }
}

/// `row_sums`' workgroups, one a row, wrapped onto a second dimension past the device's limit.
fn rows_dispatch(ctx: &GpuContext, h: u32) -> (u32, u32, u32) {
    let (x, y) = ctx.dispatch_size(h);
    (x, y, 1)
}

/// One pass of the loss with `params` as its uniform.
fn pass(
    ctx: &GpuContext,
    enc: &mut dyn Recorder,
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
