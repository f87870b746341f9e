//! The bin stage on the GPU: tile intersection counting (`tile_count.wgsl`, each tile of a Gaussian's
//! rect tested against its ellipse as [`splat_core::Footprint`] does), prefix sum
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
use crate::sort::{GpuSort, SortPlan, SortWith};

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

/// What the bin reads of a projection on the device (`project.wgsl`'s outputs).
pub struct BinInputs<'a> {
    pub radii: &'a wgpu::Buffer,
    /// 4 u32 (x0, y0, x1, y1) per Gaussian.
    pub rects: &'a wgpu::Buffer,
    pub depths: &'a wgpu::Buffer,
    pub means2d: &'a wgpu::Buffer,
    pub conics: &'a wgpu::Buffer,
    pub opacities: &'a wgpu::Buffer,
    /// The blending rule's cut the tiles are tested at ([`splat_core::Footprint`]).
    pub alpha_min: f32,
}

impl BinInputs<'_> {
    /// The bindings of `count`'s inputs (`emit` reads the depths too, at 3).
    pub(crate) fn bindings(&self) -> [(u32, &wgpu::Buffer); 5] {
        [
            (1, self.radii),
            (2, self.rects),
            (8, self.means2d),
            (9, self.conics),
            (10, self.opacities),
        ]
    }
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

    /// Bins the Gaussians whose projection `input` holds on the device.
    pub fn record(
        &self,
        ctx: &GpuContext,
        n: u32,
        grid: &TileGrid,
        input: &BinInputs<'_>,
    ) -> Result<BinBuffers, GpuError> {
        let tiles = grid.num_tiles() as u32;
        let counts = ctx.storage("tile counts", (n as u64 + 1) * 4);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bin") });
        enc.clear_buffer(&counts, 0, None);
        let params = [n, grid.tiles_x, input.alpha_min.to_bits(), 0];
        let mut bindings = input.bindings().to_vec();
        bindings.push((4, &counts));
        self.count
            .dispatch(ctx, &mut enc, params, &bindings, groups_for(n));
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
        bindings.extend([(3, input.depths), (5, &a[0]), (6, &a[1]), (7, &a[2])]);
        self.emit
            .dispatch(ctx, &mut enc, params, &bindings, groups_for(n));
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
                &SortWith::default(),
            ) {
                std::mem::swap(&mut a, &mut b);
            }
        }
        enc.clear_buffer(&ranges, 0, None);
        self.ranges.dispatch(
            ctx,
            &mut enc,
            [total, tiles, n + 1, 0],
            &[(1, &a[0]), (2, &ranges), (3, &counts)],
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

    /// The per-stage interface: uploads what of `projected` the bin reads, bins, reads back.
    pub fn run(
        &self,
        ctx: &GpuContext,
        projected: &Projected<f32>,
        grid: &TileGrid,
        out: &mut Bins,
    ) -> Result<(), GpuError> {
        let n = projected.len() as u32;
        let input = BinInputs {
            radii: &ctx.storage_from("radii", &projected.radii),
            rects: &ctx.storage_from("rects", &rect_words(projected)),
            depths: &ctx.storage_from("depths", &projected.depths),
            means2d: &ctx.storage_from("means2d", projected.means2d.as_flattened()),
            conics: &ctx.storage_from("conics", projected.conics.as_flattened()),
            opacities: &ctx.storage_from("opacities", &projected.opacities),
            alpha_min: projected.alpha_min as f32,
        };
        let bins = self.record(ctx, n, grid, &input)?;
        out.gaussian_ids = ctx.read(&bins.ids, bins.intersections as usize)?;
        let ranges: Vec<u32> = ctx.read(&bins.ranges, grid.num_tiles() * 2)?;
        out.tile_ranges = ranges.chunks_exact(2).map(|r| [r[0], r[1]]).collect();
        Ok(())
    }
}
