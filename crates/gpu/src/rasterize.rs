//! Rasterize forward on the GPU (`shaders/rasterize_fwd.wgsl`): a workgroup per tile, one or more pixels
//! per invocation, the tile's Gaussians staged through workgroup memory in batches of 256.

use splat_core::TileGrid;
use splat_render::{Bins, Projected, ProjectedGrads, RasterOutput, RenderSettings};

use crate::bin::rect_words;
use crate::context::{GpuContext, GpuError};
use crate::kernel::{compute_pipeline, groups_for, module, record_pass};

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct RasterParams {
    dims: [u32; 4],
    bg: [f32; 4],
    cut: [f32; 4],
}

pub struct GpuRasterize {
    pub(crate) forward: wgpu::ComputePipeline,
    pub(crate) backward_tiles: wgpu::ComputePipeline,
    pub(crate) backward_gather: wgpu::ComputePipeline,
    /// The gather through the sort's inverse (the resident trainer's).
    pub(crate) backward_gather_indexed: wgpu::ComputePipeline,
    backward_atomic: wgpu::ComputePipeline,
    /// The records pass with absolute per-pixel 2D-mean gradients (`RenderSettings::absgrad`).
    backward_abs_tiles: wgpu::ComputePipeline,
    backward_abs_gather: wgpu::ComputePipeline,
    /// How the backward sums each Gaussian's gradient over its tiles.
    pub sums: BackwardSums,
}

/// The backward's wavefront (`rasterize_bwd.wgsl`): Gaussians per batch (the workgroup size) and pixels
/// per step. The bits do not depend on it; the speed does: a real GPU runs a 32-wide workgroup as one
/// warp and a step's barrier costs next to nothing, while a CPU device (lavapipe) runs each barrier as a
/// switch between its SIMD groups, so it takes more pixels per step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaveShape {
    pub wave: u32,
    pub chunk: u32,
}

impl WaveShape {
    /// The shape for `ctx`'s device (BENCHMARKS.md, "The backward as a wavefront").
    pub fn for_device(ctx: &GpuContext) -> Self {
        if ctx.is_software() {
            WaveShape { wave: 32, chunk: 4 }
        } else {
            WaveShape { wave: 32, chunk: 1 }
        }
    }

    /// Whether the shader can run this shape: 8 to 256 Gaussians a batch (256: WebGPU's default
    /// workgroup limit; under 8, lavapipe gave wrong gradients, even for a single invocation, which is
    /// sequential code: see NOTES.md), a chunk that divides the tile's 256 pixels.
    pub fn is_valid(&self) -> bool {
        (8..=256).contains(&self.wave) && self.chunk > 0 && 256 % self.chunk == 0
    }

    pub(crate) fn pipeline(
        &self,
        ctx: &GpuContext,
        module: &wgpu::ShaderModule,
        label: &str,
    ) -> wgpu::ComputePipeline {
        let constants = [("WAVE", self.wave as f64), ("CHUNK", self.chunk as f64)];
        ctx.device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module,
                entry_point: Some("tiles"),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: &constants,
                    ..Default::default()
                },
                cache: None,
            })
    }
}

/// The forward with `pixels` pixels per invocation (`rasterize_fwd.wgsl`'s PIXELS).
fn forward_pipeline(
    ctx: &GpuContext,
    module: &wgpu::ShaderModule,
    pixels: u32,
) -> wgpu::ComputePipeline {
    let constants = [("PIXELS", pixels as f64)];
    ctx.device
        .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("rasterize forward"),
            layout: None,
            module,
            entry_point: Some("main"),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &constants,
                ..Default::default()
            },
            cache: None,
        })
}

/// How the rasterize backward sums a Gaussian's per-tile gradients.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackwardSums {
    /// A record per intersection, then a per-Gaussian gather in tile order: deterministic.
    #[default]
    Records,
    /// Compare-and-swap float adds into the gradient: no records or gather, the rounding varies from run
    /// to run with the order the tiles finish.
    Atomic,
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

pub(crate) fn raster_params(
    grid: &TileGrid,
    settings: &RenderSettings,
    gaussians: u32,
) -> RasterParams {
    let c = &settings.cutoffs;
    let bg = settings.background;
    RasterParams {
        dims: [grid.width, grid.height, grid.tiles_x, gaussians],
        bg: [bg[0], bg[1], bg[2], 0.0],
        cut: [
            c.alpha_min as f32,
            c.alpha_max as f32,
            c.transmittance_min as f32,
            0.0,
        ],
    }
}

impl RasterInputs<'_> {
    /// Bindings 1-6 of both rasterize shaders (`common_raster.wgsl`).
    pub(crate) fn bindings(&self) -> [(u32, &wgpu::Buffer); 6] {
        [
            (1, self.ranges),
            (2, self.ids),
            (3, self.means2d),
            (4, self.conics),
            (5, self.opacities),
            (6, self.colors),
        ]
    }
}

/// Uploads what both rasterize stages read: tile ranges, ids, means2d, conics, opacities, colours.
fn upload_inputs(ctx: &GpuContext, projected: &Projected<f32>, bins: &Bins) -> [wgpu::Buffer; 6] {
    [
        ctx.storage_from("tile ranges", bins.tile_ranges.as_flattened()),
        ctx.storage_from("ids", &bins.gaussian_ids),
        ctx.storage_from("means2d", projected.means2d.as_flattened()),
        ctx.storage_from("conics", projected.conics.as_flattened()),
        ctx.storage_from("opacities", &projected.opacities),
        ctx.storage_from("colors", projected.colors.as_flattened()),
    ]
}

fn inputs_of(b: &[wgpu::Buffer; 6]) -> RasterInputs<'_> {
    RasterInputs {
        ranges: &b[0],
        ids: &b[1],
        means2d: &b[2],
        conics: &b[3],
        opacities: &b[4],
        colors: &b[5],
    }
}

/// Device buffers the forward writes.
pub struct RasterBuffers {
    pub image: wgpu::Buffer,
    pub final_t: wgpu::Buffer,
    pub n_contrib: wgpu::Buffer,
}

impl GpuRasterize {
    /// The backward's atomic tiles pass (binding 16: the projected gradients, cleared first).
    pub(crate) fn backward_atomic(&self) -> &wgpu::ComputePipeline {
        &self.backward_atomic
    }

    pub fn new(ctx: &GpuContext) -> Self {
        Self::with_wave(ctx, WaveShape::for_device(ctx))
    }

    /// Pixels per invocation of the forward for `ctx`'s device: 1 on hardware (workgroup memory at
    /// register speed, many invocations to hide latency), 4 on a CPU device, where every workgroup
    /// memory read is a loop over the SIMD lanes and a staged Gaussian read once serves 4 pixels
    /// (BENCHMARKS.md, "The forward, 4 pixels an invocation on lavapipe").
    pub fn forward_pixels_for(ctx: &GpuContext) -> u32 {
        if ctx.is_software() {
            4
        } else {
            1
        }
    }

    /// The stage with the backward's wavefront `wave` (it changes the speed, never the bits).
    ///
    /// # Panics
    /// If `wave` is not valid (`WaveShape::is_valid`).
    pub fn with_wave(ctx: &GpuContext, wave: WaveShape) -> Self {
        Self::with_shapes(ctx, wave, Self::forward_pixels_for(ctx))
    }

    /// The stage with the backward's wavefront `wave` and `forward_pixels` pixels per invocation of
    /// the forward (1, 2 or 4). Neither changes a bit, only the speed.
    ///
    /// # Panics
    /// If `wave` is not valid (`WaveShape::is_valid`) or `forward_pixels` is not 1, 2 or 4.
    pub fn with_shapes(ctx: &GpuContext, wave: WaveShape, forward_pixels: u32) -> Self {
        assert!(wave.is_valid(), "invalid backward wavefront {wave:?}");
        assert!(
            matches!(forward_pixels, 1 | 2 | 4),
            "forward pixels per invocation must be 1, 2 or 4, not {forward_pixels}"
        );
        let fwd = module(ctx, "rasterize_fwd.wgsl", crate::shaders::RASTERIZE_FWD);
        let bwd = module(ctx, "rasterize_bwd.wgsl", crate::shaders::RASTERIZE_BWD);
        let atomic = module(
            ctx,
            "rasterize_bwd_atomic.wgsl",
            crate::shaders::RASTERIZE_BWD_ATOMIC,
        );
        let abs = module(
            ctx,
            "rasterize_bwd_abs.wgsl",
            crate::shaders::RASTERIZE_BWD_ABS,
        );
        let pipeline = |m: &wgpu::ShaderModule, label: &str, entry: &str| {
            if entry == "tiles" {
                wave.pipeline(ctx, m, label)
            } else {
                compute_pipeline(ctx, m, label, entry)
            }
        };
        GpuRasterize {
            forward: forward_pipeline(ctx, &fwd, forward_pixels),
            backward_tiles: pipeline(&bwd, "rasterize backward (tiles)", "tiles"),
            backward_gather: pipeline(&bwd, "rasterize backward (gather)", "gather"),
            backward_gather_indexed: pipeline(
                &bwd,
                "rasterize backward (indexed gather)",
                "gather_indexed",
            ),
            backward_atomic: pipeline(&atomic, "rasterize backward (atomic)", "tiles"),
            backward_abs_tiles: pipeline(&abs, "rasterize backward abs (tiles)", "tiles"),
            backward_abs_gather: pipeline(&abs, "rasterize backward abs (gather)", "gather"),
            sums: BackwardSums::Records,
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
        let mut bindings = inputs.bindings().to_vec();
        bindings.extend([(7, &out.image), (8, &out.final_t), (9, &out.n_contrib)]);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("rasterize forward"),
            });
        record_pass(
            ctx,
            &mut enc,
            &self.forward,
            bytemuck::bytes_of(&raster_params(grid, settings, 0)),
            &bindings,
            (grid.tiles_x, grid.tiles_y, 1),
        );
        ctx.submit(enc);
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
        let inputs = upload_inputs(ctx, projected, bins);
        let bufs = self.record_forward(ctx, grid, settings, &inputs_of(&inputs))?;
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
        let up = |label, data: &[f32]| ctx.storage_from(label, data);
        let inputs = upload_inputs(ctx, projected, bins);
        let inputs = inputs_of(&inputs);
        let final_t = up("final transmittance", &raster.final_transmittance);
        let n_contrib = ctx.storage_from("n_contrib", &raster.n_contrib);
        let grad_img = up("grad image", grad_image);
        let grads = ctx.storage("projected grads", n as u64 * 36);
        let params = raster_params(grid, settings, n as u32);
        let bytes = bytemuck::bytes_of(&params);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("rasterize backward"),
            });
        let mut tiles_bindings = inputs.bindings().to_vec();
        tiles_bindings.extend([(7, &final_t), (8, &n_contrib), (9, &grad_img)]);
        // Buffers the recorded passes use, alive until the submission.
        let mut kept: Vec<wgpu::Buffer> = Vec::new();
        if self.sums == BackwardSums::Atomic {
            enc.clear_buffer(&grads, 0, None);
            let mut atomic_bindings = tiles_bindings.clone();
            atomic_bindings.push((16, &grads));
            record_pass(
                ctx,
                &mut enc,
                &self.backward_atomic,
                bytes,
                &atomic_bindings,
                (grid.tiles_x, grid.tiles_y, 1),
            );
        } else {
            let pipelines = (&self.backward_tiles, &self.backward_gather);
            kept.extend(self.record_records(
                ctx,
                &mut enc,
                pipelines,
                bytes,
                &tiles_bindings,
                &grads,
                projected,
                bins,
                grid,
                &inputs,
            )?);
        }
        // absgrad: a second records pass whose per-pixel mean terms are absolute values.
        let abs_grads = settings
            .absgrad
            .then(|| ctx.storage("absolute mean grads", n as u64 * 36));
        if let Some(abs_grads) = &abs_grads {
            let pipelines = (&self.backward_abs_tiles, &self.backward_abs_gather);
            kept.extend(self.record_records(
                ctx,
                &mut enc,
                pipelines,
                bytes,
                &tiles_bindings,
                abs_grads,
                projected,
                bins,
                grid,
                &inputs,
            )?);
        }
        ctx.submit(enc);
        let g: Vec<f32> = ctx.read(&grads, n * 9)?;
        for (i, r) in g.chunks_exact(9).enumerate() {
            out.grad_means2d[i] = [r[0], r[1]];
            out.grad_conics[i] = [r[2], r[3], r[4]];
            out.grad_colors[i] = [r[5], r[6], r[7]];
            out.grad_opacities[i] = r[8];
        }
        if let Some(abs_grads) = &abs_grads {
            let a: Vec<f32> = ctx.read(abs_grads, n * 9)?;
            out.abs_grad_means2d = a.chunks_exact(9).map(|r| [r[0], r[1]]).collect();
        }
        drop(kept);
        Ok(())
    }

    /// Records the per-intersection records pass (`tiles`) and the per-Gaussian `gather` of
    /// `pipelines` into `grads` (9 values per Gaussian); returns the buffers it made, to keep until the
    /// submission.
    #[allow(clippy::too_many_arguments)]
    fn record_records(
        &self,
        ctx: &GpuContext,
        enc: &mut wgpu::CommandEncoder,
        (tiles, gather): (&wgpu::ComputePipeline, &wgpu::ComputePipeline),
        params: &[u8],
        tiles_bindings: &[(u32, &wgpu::Buffer)],
        grads: &wgpu::Buffer,
        projected: &Projected<f32>,
        bins: &Bins,
        grid: &TileGrid,
        inputs: &RasterInputs<'_>,
    ) -> Result<Vec<wgpu::Buffer>, GpuError> {
        let n = projected.len();
        let total = bins.gaussian_ids.len();
        // Three planes of 3 values per intersection, each its own binding.
        let plane_bytes = total as u64 * 12;
        if plane_bytes > ctx.limits.max_storage_buffer_binding_size {
            return Err(GpuError::TooLarge {
                what: "the rasterize backward's intersection records",
                bytes: plane_bytes,
                limit: ctx.limits.max_storage_buffer_binding_size,
            });
        }
        let records = [0, 1, 2].map(|_| ctx.storage("intersection records", plane_bytes));
        let radii = ctx.storage_from("radii", &projected.radii);
        let rects = ctx.storage_from("rects", &rect_words(projected));
        let depths = ctx.storage_from("depths", &projected.depths);
        let key_depth: Vec<u32> = bins
            .gaussian_ids
            .iter()
            .map(|&id| projected.depths[id as usize].to_bits())
            .collect();
        let keys = ctx.storage_from("key depth", &key_depth);
        let mut bindings = tiles_bindings.to_vec();
        bindings.extend([(10, &records[0]), (16, &records[1]), (17, &records[2])]);
        let gather_bindings = [
            (1, inputs.ranges),
            (2, inputs.ids),
            (10, &records[0]),
            (16, &records[1]),
            (17, &records[2]),
            (11, &radii),
            (12, &rects),
            (13, &depths),
            (14, &keys),
            (15, grads),
        ];
        for r in &records {
            enc.clear_buffer(r, 0, None);
        }
        record_pass(
            ctx,
            enc,
            tiles,
            params,
            &bindings,
            (grid.tiles_x, grid.tiles_y, 1),
        );
        let (x, y) = ctx.dispatch_size(groups_for(n as u32));
        record_pass(ctx, enc, gather, params, &gather_bindings, (x, y, 1));
        let [r0, r1, r2] = records;
        Ok(vec![r0, r1, r2, radii, rects, depths, keys])
    }
}
