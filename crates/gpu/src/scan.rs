//! Exclusive prefix sum of u32 on the GPU (`shaders/prefix_sum.wgsl`): blocks of 256 scanned in workgroup
//! memory, block totals scanned recursively, offsets added back.

use crate::context::GpuContext;
use crate::kernel::{groups_for, module, Kernel, WORKGROUP};

pub struct GpuScan {
    scan_blocks: Kernel,
    add_offsets: Kernel,
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
    pub fn record(
        &self,
        ctx: &GpuContext,
        enc: &mut wgpu::CommandEncoder,
        data: &wgpu::Buffer,
        n: u32,
    ) {
        if n == 0 {
            return;
        }
        let blocks = groups_for(n);
        let sums = ctx.storage("block sums", blocks as u64 * 4);
        let params = [n, 0, 0, 0];
        self.scan_blocks
            .dispatch(ctx, enc, params, &[(1, data), (2, &sums)], blocks);
        if blocks > 1 {
            self.record(ctx, enc, &sums, blocks);
            self.add_offsets
                .dispatch(ctx, enc, params, &[(1, data), (2, &sums)], blocks);
        }
        debug_assert_eq!(WORKGROUP, 256);
    }
}
