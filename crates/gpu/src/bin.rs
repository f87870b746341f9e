//! The bin stage on the GPU: tile intersection counting (`tile_count.wgsl`), prefix sum
//! (`prefix_sum.wgsl`), a stable radix sort of (tile, depth) keys over the tile bits this grid needs and
//! the depth's 32 ([`GpuSort`]) and the tiles' ranges (`tile_ranges.wgsl`). The list equals the reference's: ascending tile, then depth, then id.
//!
//! The host reads back one number, the intersection count, to size the sort's buffers (the GPU cannot
//! allocate); everything else stays on the device until the per-stage interface reads the result.

use splat_core::TileGrid;
use splat_render::{Bins, Projected};

use crate::context::{GpuContext, GpuError};
use crate::kernel::{groups_for, module, Kernel};
use crate::scan::GpuScan;
use crate::sort::{GpuSort, SortPlan};

pub struct GpuBin {
    pub(crate) count: Kernel,
    pub(crate) emit: Kernel,
    pub(crate) sort: GpuSort,
    pub(crate) ranges: Kernel,
    pub(crate) scan: GpuScan,
}

/// Device buffers of a binned frame.
pub struct BinBuffers {
    pub intersections: u32,
    pub key_tile: wgpu::Buffer,
    pub ids: wgpu::Buffer,
    /// Per tile `[start, end)` as two u32.
    pub ranges: wgpu::Buffer,
}

/// The tile rectangles as the shaders read them: 4 u32 (x0, y0, x1, y1) per Gaussian.
pub(crate) fn rect_words(projected: &Projected<f32>) -> Vec<u32> {
    projected
        .tile_rects
        .iter()
        .flat_map(|r| [r.x0, r.y0, r.x1, r.y1])
        .collect()
}

/// Bits needed for tile indices below `tiles`.
pub(crate) fn bits_for(tiles: u32) -> u32 {
    32 - tiles.saturating_sub(1).leading_zeros()
}

impl GpuBin {
    pub fn new(ctx: &GpuContext) -> Self {
        let count = module(ctx, "tile_count.wgsl", crate::shaders::TILE_COUNT);
        let ranges = module(ctx, "tile_ranges.wgsl", crate::shaders::TILE_RANGES);
        GpuBin {
            count: Kernel::new(ctx, &count, "tile count", "count"),
            emit: Kernel::new(ctx, &count, "tile emit", "emit"),
            sort: GpuSort::new(ctx),
            ranges: Kernel::new(ctx, &ranges, "tile ranges", "main"),
            scan: GpuScan::new(ctx),
        }
    }

    /// Bins Gaussians whose `radii`, tile `rects` (4 u32 each) and `depths` are on the device.
    pub fn record(
        &self,
        ctx: &GpuContext,
        n: u32,
        grid: &TileGrid,
        radii: &wgpu::Buffer,
        rects: &wgpu::Buffer,
        depths: &wgpu::Buffer,
    ) -> Result<BinBuffers, GpuError> {
        let tiles = grid.num_tiles() as u32;
        let counts = ctx.storage("tile counts", (n as u64 + 1) * 4);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bin") });
        enc.clear_buffer(&counts, 0, None);
        let params = [n, grid.tiles_x, 0, 0];
        self.count.dispatch(
            ctx,
            &mut enc,
            params,
            &[(1, radii), (2, rects), (4, &counts)],
            groups_for(n),
        );
        self.scan.record(ctx, &mut enc, &counts, n + 1);
        ctx.submit(enc);
        // The one read-back: how many intersections to make room for.
        let total = ctx.read::<u32>(&counts, n as usize + 1)?[n as usize];
        let limit = ctx.limits.max_storage_buffer_binding_size;
        if total as u64 * 4 > limit {
            return Err(GpuError::TooLarge {
                what: "the tile intersection list",
                bytes: total as u64 * 4,
                limit,
            });
        }
        let make = |label| ctx.storage(label, total as u64 * 4);
        let mut a = [make("key tile"), make("key depth"), make("ids")];
        let mut b = [make("key tile"), make("key depth"), make("ids")];
        let ranges = ctx.storage("tile ranges", tiles as u64 * 8);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bin") });
        self.emit.dispatch(
            ctx,
            &mut enc,
            params,
            &[
                (1, radii),
                (2, rects),
                (3, depths),
                (4, &counts),
                (5, &a[0]),
                (6, &a[1]),
                (7, &a[2]),
            ],
            groups_for(n),
        );
        if total > 0 {
            let plan = SortPlan::new(ctx, total);
            if self.sort.record(
                ctx,
                &mut enc,
                &plan,
                total,
                32 + bits_for(tiles),
                &a,
                &b,
                None,
            ) {
                std::mem::swap(&mut a, &mut b);
            }
        }
        enc.clear_buffer(&ranges, 0, None);
        self.ranges.dispatch(
            ctx,
            &mut enc,
            [total, tiles, 0, 0],
            &[(1, &a[0]), (2, &ranges)],
            groups_for(total),
        );
        ctx.submit(enc);
        let [key_tile, _, ids] = a;
        Ok(BinBuffers {
            intersections: total,
            key_tile,
            ids,
            ranges,
        })
    }

    /// The per-stage interface: uploads `projected`'s radii, rectangles and depths, bins, reads back.
    pub fn run(
        &self,
        ctx: &GpuContext,
        projected: &Projected<f32>,
        grid: &TileGrid,
        out: &mut Bins,
    ) -> Result<(), GpuError> {
        let n = projected.len() as u32;
        let radii = ctx.storage_from("radii", &projected.radii);
        let rects = ctx.storage_from("rects", &rect_words(projected));
        let depths = ctx.storage_from("depths", &projected.depths);
        let bins = self.record(ctx, n, grid, &radii, &rects, &depths)?;
        out.gaussian_ids = ctx.read(&bins.ids, bins.intersections as usize)?;
        let ranges: Vec<u32> = ctx.read(&bins.ranges, grid.num_tiles() * 2)?;
        out.tile_ranges = ranges.chunks_exact(2).map(|r| [r[0], r[1]]).collect();
        Ok(())
    }
}
