//! The device's measured ceilings for `splat bench` (`shaders/peak.wgsl`), as the CPU bench measures
//! its FMA peak: fp32 multiply-adds from eight independent vec4 chains per invocation over a million
//! invocations, and memory bandwidth from a copy of 256 MiB (or the largest binding, if smaller; large
//! enough to leave any cache). The work grows until a run takes 20 ms; the best of three runs counts.
//! Timed by timestamp queries where the device has them, else by the host's clock around a submission
//! (which adds the submission's latency: a lower bound on the peak).

use crate::context::{GpuContext, GpuError};
use crate::kernel::{groups_for, module, replay, Kernel, Op};
use crate::timing::PassTimer;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DevicePeak {
    pub gflops: f64,
    pub gbytes_per_second: f64,
    /// Timed by the device's timestamps (else the host's clock).
    pub timestamps: bool,
}

/// The shortest run that counts.
const MIN_SECONDS: f64 = 0.02;

/// Measures the device's fp32 FMA peak and copy bandwidth.
pub fn measure(ctx: &GpuContext) -> Result<DevicePeak, GpuError> {
    let m = module(ctx, "peak.wgsl", crate::shaders::PEAK);
    let fma = Kernel::new(ctx, &m, "peak fma", "fma_chain");
    let copy = Kernel::new(ctx, &m, "peak copy", "copy");

    let n: u32 = 1 << 20;
    let sums = ctx.storage("peak sums", n as u64 * 16);
    let mut iterations: u32 = 16;
    let gflops = loop {
        let run = |ops: &mut Vec<Op>| {
            fma.dispatch(
                ctx,
                ops,
                [iterations, n, 0, 0],
                &[(1, &sums)],
                groups_for(n),
            )
        };
        let seconds = time(ctx, &run)?;
        if seconds >= MIN_SECONDS || iterations >= 1 << 20 {
            let best = best_of_three(ctx, &run, seconds)?;
            break n as f64 * iterations as f64 * 64.0 / best / 1e9;
        }
        iterations *= 4;
    };

    let bytes = (256u64 << 20).min(ctx.limits.max_storage_buffer_binding_size) / 16 * 16;
    let len = (bytes / 16) as u32;
    let (src, dst) = (
        ctx.storage("peak src", bytes),
        ctx.storage("peak dst", bytes),
    );
    let run = |ops: &mut Vec<Op>| {
        copy.dispatch(
            ctx,
            ops,
            [0, len, 0, 0],
            &[(2, &src), (3, &dst)],
            groups_for(len),
        )
    };
    let first = time(ctx, &run)?;
    let best = best_of_three(ctx, &run, first)?;
    Ok(DevicePeak {
        gflops,
        gbytes_per_second: 2.0 * bytes as f64 / best / 1e9,
        timestamps: ctx.has_timestamps(),
    })
}

fn best_of_three(
    ctx: &GpuContext,
    run: &dyn Fn(&mut Vec<Op>),
    first: f64,
) -> Result<f64, GpuError> {
    let mut best = first;
    for _ in 0..2 {
        best = best.min(time(ctx, run)?);
    }
    Ok(best)
}

/// Seconds the device spends on what `record` records (one pass).
fn time(ctx: &GpuContext, record: &dyn Fn(&mut Vec<Op>)) -> Result<f64, GpuError> {
    let mut ops = Vec::new();
    record(&mut ops);
    let mut timer = PassTimer::new(ctx);
    let mut enc = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("peak"),
        });
    replay(ctx, &ops, &mut enc, timer.as_mut(), &mut |_, _| {});
    if let Some(t) = &timer {
        t.resolve(&mut enc);
    }
    let t0 = std::time::Instant::now();
    ctx.submit(enc);
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| GpuError::Readback(e.to_string()))?;
    let wall = t0.elapsed().as_secs_f64();
    Ok(match &timer {
        Some(t) => t.read(ctx, 1)?.map_or(wall, |s| s[0]),
        None => wall,
    })
}
