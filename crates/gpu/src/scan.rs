//! Exclusive prefix sum of u32 on the GPU (`shaders/prefix_sum.wgsl`): blocks of 256 scanned in workgroup
//! memory, block totals scanned recursively, offsets added back.

use crate::context::GpuContext;
use crate::kernel::{groups_for, module, Kernel, Recorder, WORKGROUP};

pub struct GpuScan {
    scan_blocks: Kernel,
    add_offsets: Kernel,
}

/// The block-total buffers of every level of a scan of up to `n` values, made once and reused (the
/// resident trainer scans the same sizes every step).
pub struct ScanPlan {
    n: u32,
    levels: Vec<wgpu::Buffer>,
}

impl ScanPlan {
    /// Device bytes of the plan's buffers.
    pub fn bytes(&self) -> u64 {
        self.levels.iter().map(|b| b.size()).sum()
    }

    pub fn new(ctx: &GpuContext, n: u32) -> Self {
        let mut levels = Vec::new();
        let mut len = n;
        while len > 0 {
            let blocks = groups_for(len);
            levels.push(ctx.storage("block sums", blocks as u64 * 4));
            if blocks == 1 {
                break;
            }
            len = blocks;
        }
        ScanPlan { n, levels }
    }
}

impl GpuScan {
    pub fn new(ctx: &GpuContext) -> Self {
        let m = module(ctx, "prefix_sum.wgsl", crate::shaders::PREFIX_SUM);
        GpuScan {
            scan_blocks: Kernel::new(ctx, &m, "scan_blocks", "scan_blocks"),
            add_offsets: Kernel::new(ctx, &m, "add_offsets", "add_offsets"),
        }
    }

    /// Records the exclusive scan of the first `n` values of `data` in place.
    pub fn record(&self, ctx: &GpuContext, enc: &mut dyn Recorder, data: &wgpu::Buffer, n: u32) {
        let plan = ScanPlan::new(ctx, n);
        self.record_planned(ctx, enc, data, &plan, n);
    }

    /// Records the exclusive scan of the first `n` values of `data` with `plan`'s buffers (`n` at most
    /// the plan's size).
    pub fn record_planned(
        &self,
        ctx: &GpuContext,
        enc: &mut dyn Recorder,
        data: &wgpu::Buffer,
        plan: &ScanPlan,
        n: u32,
    ) {
        assert!(n <= plan.n, "a scan of {n} with a plan for {}", plan.n);
        self.level(ctx, enc, data, n, &plan.levels);
    }

    fn level(
        &self,
        ctx: &GpuContext,
        enc: &mut dyn Recorder,
        data: &wgpu::Buffer,
        n: u32,
        sums: &[wgpu::Buffer],
    ) {
        if n == 0 {
            return;
        }
        let blocks = groups_for(n);
        let params = [n, 0, 0, 0];
        self.scan_blocks
            .dispatch(ctx, enc, params, &[(1, data), (2, &sums[0])], blocks);
        if blocks > 1 {
            self.level(ctx, enc, &sums[0], blocks, &sums[1..]);
            self.add_offsets
                .dispatch(ctx, enc, params, &[(1, data), (2, &sums[0])], blocks);
        }
        debug_assert_eq!(WORKGROUP, 256);
    }
}
