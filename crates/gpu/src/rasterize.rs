//! Rasterize forward on the GPU (`shaders/rasterize_fwd.wgsl`): a workgroup per tile, a pixel per
//! invocation, the tile's Gaussians staged through workgroup memory in batches of 256.

use splat_core::TileGrid;
use splat_render::{Bins, Projected, ProjectedGrads, RasterOutput, RenderSettings};
use wgpu::util::DeviceExt;

use crate::context::{GpuContext, GpuError};
use crate::kernel::{groups_for, module};

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct RasterParams {
    dims: [u32; 4],
    bg: [f32; 4],
    cut: [f32; 4],
}

pub struct GpuRasterize {
    forward: wgpu::ComputePipeline,
    backward_tiles: wgpu::ComputePipeline,
    backward_gather: wgpu::ComputePipeline,
}

/// Device buffers the forward reads: the projected Gaussians and the tile lists.
pub struct RasterInputs<'a> {
    pub ranges: &'a wgpu::Buffer,
    pub ids: &'a wgpu::Buffer,
    pub means2d: &'a wgpu::Buffer,
    pub conics: &'a wgpu::Buffer,
    pub opacities: &'a wgpu::Buffer,
    pub colors: &'a wgpu::Buffer,
}

fn raster_params(
    ctx: &GpuContext,
    grid: &TileGrid,
    settings: &RenderSettings,
    gaussians: u32,
) -> wgpu::Buffer {
    let c = &settings.cutoffs;
    let bg = settings.background;
    let params = RasterParams {
        dims: [grid.width, grid.height, grid.tiles_x, gaussians],
        bg: [bg[0], bg[1], bg[2], 0.0],
        cut: [
            c.alpha_min as f32,
            c.alpha_max as f32,
            c.transmittance_min as f32,
            0.0,
        ],
    };
    ctx.device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("raster params"),
            contents: bytemuck::bytes_of(&params),
            usage: wgpu::BufferUsages::UNIFORM,
        })
}

fn bind_group(
    ctx: &GpuContext,
    pipeline: &wgpu::ComputePipeline,
    uniform: &wgpu::Buffer,
    buffers: &[(u32, &wgpu::Buffer)],
) -> wgpu::BindGroup {
    let mut entries = vec![wgpu::BindGroupEntry {
        binding: 0,
        resource: uniform.as_entire_binding(),
    }];
    entries.extend(buffers.iter().map(|&(binding, b)| wgpu::BindGroupEntry {
        binding,
        resource: b.as_entire_binding(),
    }));
    ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    })
}

/// Device buffers the forward writes.
pub struct RasterBuffers {
    pub image: wgpu::Buffer,
    pub final_t: wgpu::Buffer,
    pub n_contrib: wgpu::Buffer,
}

impl GpuRasterize {
    pub fn new(ctx: &GpuContext) -> Self {
        let fwd = module(ctx, "rasterize_fwd.wgsl", crate::shaders::RASTERIZE_FWD);
        let bwd = module(ctx, "rasterize_bwd.wgsl", crate::shaders::RASTERIZE_BWD);
        let pipeline = |m: &wgpu::ShaderModule, label: &str, entry: &str| {
            ctx.device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(label),
                    layout: None,
                    module: m,
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    cache: None,
                })
        };
        GpuRasterize {
            forward: pipeline(&fwd, "rasterize forward", "main"),
            backward_tiles: pipeline(&bwd, "rasterize backward (tiles)", "tiles"),
            backward_gather: pipeline(&bwd, "rasterize backward (gather)", "gather"),
        }
    }

    /// Records the forward of one view into new output buffers.
    pub fn record_forward(
        &self,
        ctx: &GpuContext,
        grid: &TileGrid,
        settings: &RenderSettings,
        inputs: &RasterInputs<'_>,
    ) -> Result<RasterBuffers, GpuError> {
        let pixels = grid.width as u64 * grid.height as u64;
        let max = ctx.limits.max_compute_workgroups_per_dimension;
        if grid.tiles_x > max || grid.tiles_y > max {
            return Err(GpuError::TooLarge {
                what: "the tile grid (tiles per side)",
                bytes: grid.tiles_x.max(grid.tiles_y) as u64,
                limit: max as u64,
            });
        }
        if pixels * 12 > ctx.limits.max_storage_buffer_binding_size {
            return Err(GpuError::TooLarge {
                what: "the image",
                bytes: pixels * 12,
                limit: ctx.limits.max_storage_buffer_binding_size,
            });
        }
        let out = RasterBuffers {
            image: ctx.storage("image", pixels * 12),
            final_t: ctx.storage("final transmittance", pixels * 4),
            n_contrib: ctx.storage("n_contrib", pixels * 4),
        };
        let uniform = raster_params(ctx, grid, settings, 0);
        let buffers = [
            inputs.ranges,
            inputs.ids,
            inputs.means2d,
            inputs.conics,
            inputs.opacities,
            inputs.colors,
            &out.image,
            &out.final_t,
            &out.n_contrib,
        ];
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: uniform.as_entire_binding(),
        }];
        entries.extend(
            buffers
                .iter()
                .enumerate()
                .map(|(k, b)| wgpu::BindGroupEntry {
                    binding: 1 + k as u32,
                    resource: b.as_entire_binding(),
                }),
        );
        let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("rasterize forward"),
            layout: &self.forward.get_bind_group_layout(0),
            entries: &entries,
        });
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("rasterize forward"),
            });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("rasterize forward"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.forward);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(grid.tiles_x, grid.tiles_y, 1);
        }
        ctx.queue.submit([enc.finish()]);
        Ok(out)
    }

    /// The per-stage interface: uploads the projection and the tile lists, renders, reads back.
    pub fn forward(
        &self,
        ctx: &GpuContext,
        projected: &Projected<f32>,
        bins: &Bins,
        grid: &TileGrid,
        settings: &RenderSettings,
        out: &mut RasterOutput<f32>,
    ) -> Result<(), GpuError> {
        out.resize(grid.width, grid.height);
        let ranges = ctx.storage_from("tile ranges", bins.tile_ranges.as_flattened());
        let ids = ctx.storage_from("ids", &bins.gaussian_ids);
        let means2d = ctx.storage_from("means2d", projected.means2d.as_flattened());
        let conics = ctx.storage_from("conics", projected.conics.as_flattened());
        let opacities = ctx.storage_from("opacities", &projected.opacities);
        let colors = ctx.storage_from("colors", projected.colors.as_flattened());
        let bufs = self.record_forward(
            ctx,
            grid,
            settings,
            &RasterInputs {
                ranges: &ranges,
                ids: &ids,
                means2d: &means2d,
                conics: &conics,
                opacities: &opacities,
                colors: &colors,
            },
        )?;
        let pixels = out.final_transmittance.len();
        out.image = ctx.read(&bufs.image, pixels * 3)?;
        out.final_transmittance = ctx.read(&bufs.final_t, pixels)?;
        out.n_contrib = ctx.read(&bufs.n_contrib, pixels)?;
        Ok(())
    }

    /// The per-stage backward: uploads the projection, the tile lists (with their depth keys), the
    /// forward's per-pixel state and the image gradient; computes per-intersection records tile by tile,
    /// then sums each Gaussian's records in tile order; reads the gradients back into `out`.
    #[allow(clippy::too_many_arguments)]
    pub fn backward(
        &self,
        ctx: &GpuContext,
        projected: &Projected<f32>,
        bins: &Bins,
        grid: &TileGrid,
        settings: &RenderSettings,
        raster: &RasterOutput<f32>,
        grad_image: &[f32],
        out: &mut ProjectedGrads<f32>,
    ) -> Result<(), GpuError> {
        let n = projected.len();
        out.reset(n);
        let total = bins.gaussian_ids.len();
        let key_depth: Vec<u32> = bins
            .gaussian_ids
            .iter()
            .map(|&id| projected.depths[id as usize].to_bits())
            .collect();
        let rects: Vec<u32> = projected
            .tile_rects
            .iter()
            .flat_map(|r| [r.x0, r.y0, r.x1, r.y1])
            .collect();
        let up = |label, data: &[f32]| ctx.storage_from(label, data);
        let ranges = ctx.storage_from("tile ranges", bins.tile_ranges.as_flattened());
        let ids = ctx.storage_from("ids", &bins.gaussian_ids);
        let means2d = up("means2d", projected.means2d.as_flattened());
        let conics = up("conics", projected.conics.as_flattened());
        let opacities = up("opacities", &projected.opacities);
        let colors = up("colors", projected.colors.as_flattened());
        let final_t = up("final transmittance", &raster.final_transmittance);
        let n_contrib = ctx.storage_from("n_contrib", &raster.n_contrib);
        let grad_img = up("grad image", grad_image);
        let records = ctx.storage("intersection records", total as u64 * 36);
        let radii = ctx.storage_from("radii", &projected.radii);
        let rects = ctx.storage_from("rects", &rects);
        let depths = up("depths", &projected.depths);
        let keys = ctx.storage_from("key depth", &key_depth);
        let grads = ctx.storage("projected grads", n as u64 * 36);
        let uniform = raster_params(ctx, grid, settings, n as u32);
        let tiles_bind = bind_group(
            ctx,
            &self.backward_tiles,
            &uniform,
            &[
                (1, &ranges),
                (2, &ids),
                (3, &means2d),
                (4, &conics),
                (5, &opacities),
                (6, &colors),
                (7, &final_t),
                (8, &n_contrib),
                (9, &grad_img),
                (10, &records),
            ],
        );
        let gather_bind = bind_group(
            ctx,
            &self.backward_gather,
            &uniform,
            &[
                (1, &ranges),
                (2, &ids),
                (10, &records),
                (11, &radii),
                (12, &rects),
                (13, &depths),
                (14, &keys),
                (15, &grads),
            ],
        );
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("rasterize backward"),
            });
        enc.clear_buffer(&records, 0, None);
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("rasterize backward"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.backward_tiles);
            pass.set_bind_group(0, &tiles_bind, &[]);
            pass.dispatch_workgroups(grid.tiles_x, grid.tiles_y, 1);
            pass.set_pipeline(&self.backward_gather);
            pass.set_bind_group(0, &gather_bind, &[]);
            let (x, y) = ctx.dispatch_size(groups_for(n as u32));
            pass.dispatch_workgroups(x, y, 1);
        }
        ctx.queue.submit([enc.finish()]);
        let g: Vec<f32> = ctx.read(&grads, n * 9)?;
        for (i, r) in g.chunks_exact(9).enumerate() {
            out.grad_means2d[i] = [r[0], r[1]];
            out.grad_conics[i] = [r[2], r[3], r[4]];
            out.grad_colors[i] = [r[5], r[6], r[7]];
            out.grad_opacities[i] = r[8];
        }
        Ok(())
    }
}
