//! The project + SH stage on the GPU (`shaders/project.wgsl`): one invocation per Gaussian, the
//! reference's arithmetic in the same order.
//!
//! Storage bindings are limited in size (`max_storage_buffer_binding_size`, 128 MiB on lavapipe, which the
//! SH coefficients of ~750k Gaussians exceed), so the Gaussians are processed in chunks whose every binding
//! fits; each chunk binds sub-ranges of the buffers at offsets aligned as the device requires.

use splat_core::{Camera, Gaussians, TileGrid, TileRect};
use splat_render::project::{CameraParams, DILATION, NEAR_PLANE};
use splat_render::sh::active_coeffs;
use splat_render::{Projected, RenderSettings};

use crate::context::{GpuContext, GpuError, WORKGROUP};
use crate::kernel::Recorder;

/// The shader's `Camera` uniform (all 16-byte vectors, so the Rust and WGSL layouts agree).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct CameraUniform {
    r0: [f32; 4],
    r1: [f32; 4],
    r2: [f32; 4],
    center: [f32; 4],
    intr: [f32; 4],
    lim: [f32; 4],
    dims: [u32; 4],
    counts: [u32; 4],
}

/// Floats per Gaussian of each input, then of each output (binding order).
pub(crate) const INPUT_FLOATS: [usize; 6] = [3, 3, 4, 1, 3, 0 /* sh_rest: per scene */];
pub(crate) const OUTPUT_WORDS: [usize; 8] = [2, 3, 1, 1, 4, 1, 3, 1];

/// The part of `buf` holding Gaussians `first .. first + len` at `words` 4-byte words each.
pub(crate) fn chunk_binding(
    buf: &wgpu::Buffer,
    first: usize,
    len: usize,
    words: usize,
) -> wgpu::BufferBinding<'_> {
    let offset = (first * words * 4) as u64;
    let size = ((len * words * 4) as u64).max(4).min(buf.size() - offset);
    wgpu::BufferBinding {
        buffer: buf,
        offset,
        size: std::num::NonZeroU64::new(size),
    }
}

/// Gaussians per chunk when the widest per-Gaussian binding holds `widest_floats` floats: as many as fit
/// the binding-size limit, a multiple of the alignment unit so every chunk's offsets stay aligned (offsets
/// are `first * 4 * floats` bytes).
pub(crate) fn chunk_len_for(ctx: &GpuContext, widest_floats: usize) -> usize {
    let widest = 4 * widest_floats.max(1);
    let max_binding = ctx.limits.max_storage_buffer_binding_size as usize;
    let align = ctx.limits.min_storage_buffer_offset_alignment as usize;
    let unit = align.max(WORKGROUP as usize);
    ((max_binding / widest) / unit * unit).max(unit)
}

/// The shader's camera block for `camera` (converted once into `cam`), the blending rule's `alpha_min`
/// (the projection leaves out tiles a Gaussian cannot reach at it) and the given counts.
pub(crate) fn camera_uniform(
    camera: &Camera,
    cam: &CameraParams<f32>,
    grid: &TileGrid,
    alpha_min: f64,
    counts: [u32; 4],
) -> CameraUniform {
    let r = &cam.rotation;
    let t = &cam.translation;
    CameraUniform {
        r0: [r[0][0], r[0][1], r[0][2], t[0]],
        r1: [r[1][0], r[1][1], r[1][2], t[1]],
        r2: [r[2][0], r[2][1], r[2][2], t[2]],
        center: [
            cam.center[0],
            cam.center[1],
            cam.center[2],
            alpha_min as f32,
        ],
        intr: [cam.fx, cam.fy, cam.cx, cam.cy],
        // The fisheye: its cull angle, and -1 for the shader's `is_fisheye`.
        lim: if cam.fisheye {
            [cam.max_theta, -1.0, NEAR_PLANE as f32, DILATION as f32]
        } else {
            [cam.lim_x, cam.lim_y, NEAR_PLANE as f32, DILATION as f32]
        },
        dims: [camera.width, camera.height, grid.tiles_x, grid.tiles_y],
        counts,
    }
}

/// Records `pipeline` over `n` Gaussians in chunks of `chunk` (see [`chunk_len_for`]): chunk `c` gets the
/// camera block `camera_for(len)` at binding 0 and, at binding `b`, the sub-range of each
/// `(b, buffer, words)` holding its Gaussians (`words == 0`: the whole buffer, for an empty per-scene
/// array such as the SH rest at degree 0).
#[allow(clippy::too_many_arguments)]
pub(crate) fn record_chunked(
    ctx: &GpuContext,
    enc: &mut dyn Recorder,
    pipeline: &wgpu::ComputePipeline,
    layout: &wgpu::BindGroupLayout,
    n: usize,
    chunk: usize,
    camera_for: impl Fn(usize) -> CameraUniform,
    buffers: &[(u32, &wgpu::Buffer, usize)],
) {
    let uniform = camera_blocks(ctx, n, chunk, camera_for);
    record_chunked_with(ctx, enc, pipeline, layout, n, chunk, &uniform, buffers);
}

/// The camera blocks of `n` Gaussians in chunks of `chunk`, chunk `c`'s (`camera_for(its length)`) at
/// `c * uniform_stride`, as [`record_chunked_with`] binds them.
pub(crate) fn camera_blocks(
    ctx: &GpuContext,
    n: usize,
    chunk: usize,
    camera_for: impl Fn(usize) -> CameraUniform,
) -> wgpu::Buffer {
    let chunks = n.div_ceil(chunk);
    let stride = uniform_stride(ctx);
    let block = std::mem::size_of::<CameraUniform>();
    let mut bytes = vec![0u8; chunks * stride];
    for c in 0..chunks {
        let len = chunk.min(n - c * chunk);
        bytes[c * stride..][..block].copy_from_slice(bytemuck::bytes_of(&camera_for(len)));
    }
    wgpu::util::DeviceExt::create_buffer_init(
        &ctx.device,
        &wgpu::util::BufferInitDescriptor {
            label: Some("camera"),
            contents: &bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        },
    )
}

/// Bytes between the camera blocks of consecutive chunks in the uniform buffer.
pub(crate) fn uniform_stride(ctx: &GpuContext) -> usize {
    ctx.limits.min_uniform_buffer_offset_alignment.max(256) as usize
}

/// [`record_chunked`] with the camera blocks already in `uniform` (chunk `c`'s at `c * uniform_stride`):
/// the resident trainer writes them on the device for the view it draws.
#[allow(clippy::too_many_arguments)]
pub(crate) fn record_chunked_with(
    ctx: &GpuContext,
    enc: &mut dyn Recorder,
    pipeline: &wgpu::ComputePipeline,
    layout: &wgpu::BindGroupLayout,
    n: usize,
    chunk: usize,
    uniform: &wgpu::Buffer,
    buffers: &[(u32, &wgpu::Buffer, usize)],
) {
    let chunks = n.div_ceil(chunk);
    let stride = uniform_stride(ctx);
    let block = std::mem::size_of::<CameraUniform>();
    for c in 0..chunks {
        let first = c * chunk;
        let len = chunk.min(n - first);
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: uniform,
                offset: (c * stride) as u64,
                size: std::num::NonZeroU64::new(block as u64),
            }),
        }];
        entries.extend(
            buffers
                .iter()
                .map(|&(binding, buffer, words)| wgpu::BindGroupEntry {
                    binding,
                    resource: wgpu::BindingResource::Buffer(if words == 0 {
                        wgpu::BufferBinding {
                            buffer,
                            offset: 0,
                            size: None,
                        }
                    } else {
                        chunk_binding(buffer, first, len, words)
                    }),
                }),
        );
        let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout,
            entries: &entries,
        });
        let (x, y) = ctx.dispatch_size((len as u32).div_ceil(WORKGROUP));
        crate::kernel::record_bound(ctx, enc, pipeline, &bind, (x, y, 1));
    }
}

/// Compiled pipeline of the stage.
pub struct GpuProject {
    pub(crate) pipeline: wgpu::ComputePipeline,
    pub(crate) layout: wgpu::BindGroupLayout,
}

impl GpuProject {
    pub fn new(ctx: &GpuContext) -> Self {
        let module = ctx
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("project.wgsl"),
                source: wgpu::ShaderSource::Wgsl(crate::shaders::PROJECT.into()),
            });
        let storage = |binding: u32, read_only: bool| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let mut entries = vec![wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }];
        entries.extend((1..=6).map(|b| storage(b, true)));
        entries.extend((7..=14).map(|b| storage(b, false)));
        let layout = ctx
            .device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("project"),
                entries: &entries,
            });
        let pipeline_layout = ctx
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("project"),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
        let pipeline = ctx
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("project"),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
        GpuProject { pipeline, layout }
    }

    /// Largest number of Gaussians per chunk whose bindings all fit the device's limit, a multiple of
    /// the alignment unit so every chunk's offsets stay aligned.
    pub fn chunk_len(ctx: &GpuContext, rest_floats: usize) -> usize {
        chunk_len_for(ctx, rest_floats.max(4))
    }

    /// Projects `gaussians` for `camera` and reads the result back into `out` (the per-stage interface;
    /// the resident trainer will keep the outputs on the device).
    pub fn run(
        &self,
        ctx: &GpuContext,
        gaussians: &Gaussians<f32>,
        camera: &Camera,
        settings: &RenderSettings,
        out: &mut Projected<f32>,
    ) -> Result<(), GpuError> {
        let n = gaussians.len();
        out.resize(n);
        out.alpha_min = settings.cutoffs.alpha_min;
        if n == 0 {
            return Ok(());
        }
        let rest = gaussians.sh_rest.len() / n;
        let check = |what: &'static str, bytes: usize| -> Result<(), GpuError> {
            if bytes as u64 > ctx.limits.max_buffer_size {
                return Err(GpuError::TooLarge {
                    what,
                    bytes: bytes as u64,
                    limit: ctx.limits.max_buffer_size,
                });
            }
            Ok(())
        };
        check("the SH coefficients", n * rest * 4)?;
        check("the tile rectangles", n * 16)?;

        let inputs = [
            ctx.storage_from("means", gaussians.means.as_flattened()),
            ctx.storage_from("log_scales", gaussians.log_scales.as_flattened()),
            ctx.storage_from("rotations", gaussians.rotations.as_flattened()),
            ctx.storage_from("opacity_logits", &gaussians.opacity_logits),
            ctx.storage_from("sh_dc", gaussians.sh_dc.as_flattened()),
            ctx.storage_from("sh_rest", &gaussians.sh_rest),
        ];
        let outputs: Vec<wgpu::Buffer> = OUTPUT_WORDS
            .iter()
            .map(|&w| ctx.storage("projected", (n * w * 4) as u64))
            .collect();

        let cam = CameraParams::<f32>::new(camera);
        let grid = TileGrid::new(camera.width, camera.height);
        let coeffs = active_coeffs(settings.sh_degree, gaussians.sh_degree) as u32;
        let mut bindings: Vec<(u32, &wgpu::Buffer, usize)> = inputs
            .iter()
            .enumerate()
            .map(|(k, b)| (1 + k as u32, b, if k == 5 { rest } else { INPUT_FLOATS[k] }))
            .collect();
        bindings.extend(
            outputs
                .iter()
                .enumerate()
                .map(|(k, b)| (7 + k as u32, b, OUTPUT_WORDS[k])),
        );
        // Bit 0: the scene is antialiased (its opacities carry the compensation).
        let flags = gaussians.antialiased as u32;
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("project"),
            });
        record_chunked(
            ctx,
            &mut enc,
            &self.pipeline,
            &self.layout,
            n,
            Self::chunk_len(ctx, rest),
            |len| {
                camera_uniform(
                    camera,
                    &cam,
                    &grid,
                    settings.cutoffs.alpha_min,
                    [len as u32, coeffs, rest as u32, flags],
                )
            },
            &bindings,
        );
        ctx.submit(enc);

        let means2d: Vec<f32> = ctx.read(&outputs[0], n * 2)?;
        let conics: Vec<f32> = ctx.read(&outputs[1], n * 3)?;
        let depths: Vec<f32> = ctx.read(&outputs[2], n)?;
        let radii: Vec<u32> = ctx.read(&outputs[3], n)?;
        let rects: Vec<u32> = ctx.read(&outputs[4], n * 4)?;
        let opacities: Vec<f32> = ctx.read(&outputs[5], n)?;
        let colors: Vec<f32> = ctx.read(&outputs[6], n * 3)?;
        let clamped: Vec<u32> = ctx.read(&outputs[7], n)?;
        for i in 0..n {
            out.radii[i] = radii[i];
            out.tile_rects[i] = TileRect {
                x0: rects[4 * i],
                y0: rects[4 * i + 1],
                x1: rects[4 * i + 2],
                y1: rects[4 * i + 3],
            };
            if radii[i] == 0 {
                continue;
            }
            out.means2d[i] = [means2d[2 * i], means2d[2 * i + 1]];
            out.conics[i] = [conics[3 * i], conics[3 * i + 1], conics[3 * i + 2]];
            out.depths[i] = depths[i];
            out.opacities[i] = opacities[i];
            out.colors[i] = [colors[3 * i], colors[3 * i + 1], colors[3 * i + 2]];
            out.color_clamped[i] = [0, 1, 2].map(|ch| clamped[i] & (1 << ch) != 0);
        }
        Ok(())
    }
}
