//! Rasterize forward on the GPU (`shaders/rasterize_fwd.wgsl`): a workgroup per tile, a pixel per
//! invocation, the tile's Gaussians staged through workgroup memory in batches of 256.

use splat_core::TileGrid;
use splat_render::{Bins, Projected, RasterOutput, RenderSettings};
use wgpu::util::DeviceExt;

use crate::context::{GpuContext, GpuError};
use crate::kernel::module;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct RasterParams {
    dims: [u32; 4],
    bg: [f32; 4],
    cut: [f32; 4],
}

pub struct GpuRasterize {
    forward: wgpu::ComputePipeline,
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

/// Device buffers the forward writes.
pub struct RasterBuffers {
    pub image: wgpu::Buffer,
    pub final_t: wgpu::Buffer,
    pub n_contrib: wgpu::Buffer,
}

impl GpuRasterize {
    pub fn new(ctx: &GpuContext) -> Self {
        let m = module(
            ctx,
            "rasterize_fwd.wgsl",
            include_str!("shaders/rasterize_fwd.wgsl"),
        );
        let forward = ctx
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("rasterize forward"),
                layout: None,
                module: &m,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
        GpuRasterize { forward }
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
        let c = &settings.cutoffs;
        let bg = settings.background;
        let params = RasterParams {
            dims: [grid.width, grid.height, grid.tiles_x, 0],
            bg: [bg[0], bg[1], bg[2], 0.0],
            cut: [
                c.alpha_min as f32,
                c.alpha_max as f32,
                c.transmittance_min as f32,
                0.0,
            ],
        };
        let uniform = ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("raster params"),
                contents: bytemuck::bytes_of(&params),
                usage: wgpu::BufferUsages::UNIFORM,
            });
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
}
