//! The resident trainer on the GPU ([`GpuResident`], a [`ResidentEngine`]): parameters, Adam moments,
//! densification statistics, every training image (RGB8 packed in a u32) and every camera live on the
//! device, and one submission runs up to [`SUBMIT_STEPS`] training steps:
//!
//! per step: draw the view and write its camera blocks and target image (`resident.wgsl`); project; count
//! tile intersections and scan; check the list's capacity; pad, emit and sort the list; tile ranges;
//! rasterize; loss; rasterize backward; project backward; check the gradients are finite; densification
//! statistics; opacity reset when due; Adam (the per-step constants, learning rate and bias corrections,
//! are known to the host when it records the block). A densification ends the block: the edit
//! (`densify_edit.wgsl`) runs on the device and the host learns the new Gaussian count.
//!
//! Static shapes: the intersection list has a capacity, not the step's size, so every dispatch of a step
//! has a size fixed when the block is recorded. Entries past the step's intersections are padding keys
//! that sort last and belong to no tile. A step whose list would not fit, or whose loss or gradients are
//! not finite, *halts* the submission: it and every later step change nothing (the state-changing
//! kernels read the status word). After the submission the host reads back the only things it must: the
//! status (8 words) and the loss row sums (3 x height floats per step, for the loss, L1, SSIM and PSNR it
//! reports). On an overflow it grows the list to the size the status reports and records the rest again
//! from the halted step, so results never depend on the capacity; a non-finite step is reported skipped
//! and the submission resumes after it.
//!
//! Recording: the part of a step that is the same every step is recorded once per scene and list as a
//! list of operations with holes for the per-step work (`record_step`), and replayed per step.

use std::sync::Arc;

use splat_core::TileGrid;
use splat_io::dataset::View;
use splat_render::project::CameraParams;
use splat_render::sh::active_coeffs;
use splat_render::RenderSettings;
use splat_train::densify::DensifyReport;
use splat_train::resident::{
    BlockConstants, EngineCounters, EngineMemory, PlannedStep, ResidentEngine, StepOutcome,
};
use splat_train::state::{group_width, GROUPS};
use splat_train::TrainState;

use crate::bin::bits_for;
use crate::context::{GpuContext, GpuError};
use crate::densify::StatsParams;
use crate::kernel::{
    groups_for, module, record_pass, record_pass_with, replay, Kernel, Op, Recorder,
};
use crate::loss::{loss_from_row_sums, LossBuffers};
use crate::project::{
    camera_uniform, chunk_binding, chunk_len_for, record_chunked_with, uniform_stride,
    CameraUniform, OUTPUT_WORDS,
};
use crate::rasterize::{raster_params, BackwardSums, RasterInputs};
use crate::scan::{GpuScan, ScanPlan};
use crate::sort::SortPlan;
use crate::{
    GpuAdam, GpuBin, GpuDensifyStats, GpuLoss, GpuProject, GpuProjectBackward, GpuRasterize,
};

/// Steps recorded into one submission at most.
pub const SUBMIT_STEPS: usize = 50;

/// The 4x16-byte uniform of `resident.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct BookParams {
    a: [u32; 4],
    b: [u32; 4],
    c: [u32; 4],
    d: [u32; 4],
}

/// Floats per Gaussian and offset of each group (in [`GROUPS`] order) in the project backward's packed
/// gradients (means 3, log_scales 3, rotations 4, opacity 1, sh_dc 3, sh_rest).
fn packed_offset(group: usize) -> usize {
    [0, 11, 14, 10, 3, 6][group]
}

/// Whether step `s` updates group `g` (as the host: none on a densification or the last step, all but
/// the opacities on a reset).
fn adam_applies(s: &PlannedStep, g: usize) -> bool {
    s.position_lr.is_some() && !(g == 3 && s.reset_opacity)
}

/// The 4x16-byte uniform of `densify_edit.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct EditParams {
    a: [u32; 4],
    b: [u32; 4],
    c: [f32; 4],
    d: [f32; 4],
}

/// The smallest intersection list made.
const MIN_CAPACITY: u32 = 4096;

/// A list for `needed` intersections with a quarter to spare (grown on overflow, shrunk when the steps
/// need under a third of it).
fn list_size(needed: u32) -> u32 {
    needed
        .saturating_add(needed / 4)
        .next_multiple_of(1024)
        .max(MIN_CAPACITY)
}

/// Key bits of a step's sort: the tile bits of `tiles` real tiles and the padding tile, then the depth's.
fn sort_key_bits(tiles: u32) -> u32 {
    32 + bits_for(tiles + 1)
}

/// Buffers the training images may be split over (bindings of `unpack_target`).
const IMAGE_PARTS: usize = 4;

/// Where a step's template leaves room for work that differs per step.
const HOLE_SELECT: u32 = 0;
const HOLE_OVERFLOW: u32 = 1;
const HOLE_METRICS: u32 = 2;
const HOLE_TAIL: u32 = 3;

/// Status words (see `resident.wgsl`).
const STATUS_WORDS: usize = 8;
const HALT_OVERFLOW: u32 = 1;
const HALT_NOT_FINITE: u32 = 2;

struct Kernels {
    select: Kernel,
    unpack: Kernel,
    overflow: Kernel,
    padding: Kernel,
    check: Kernel,
    commit: Kernel,
    adam_packed: wgpu::ComputePipeline,
    classify: wgpu::ComputePipeline,
    scatter: wgpu::ComputePipeline,
    reset: wgpu::ComputePipeline,
}

/// The dataset on the device.
struct Images {
    grid: TileGrid,
    views: u32,
    /// RGB8 per pixel, view after view, [`IMAGE_PARTS`] buffers of `views_per_part` views (unused ones
    /// are 16 bytes) so that more images than one binding holds can stay on the device.
    packed: Vec<wgpu::Buffer>,
    views_per_part: u32,
    lut: wgpu::Buffer,
    /// 8 words of 16 bytes per view: the camera block with zero counts.
    cameras: wgpu::Buffer,
}

/// The capacity-sized intersection list and what is sized with it.
struct List {
    capacity: u32,
    a: [wgpu::Buffer; 3],
    b: [wgpu::Buffer; 3],
    sort: SortPlan,
    /// The rasterize backward's 9 values per entry, three planes of 3.
    records: [wgpu::Buffer; 3],
}

/// The state on the device and the buffers sized by its Gaussian count.
/// The work buffers (projection, tile counts, gradients) and statistics hold `capacity` Gaussians, of
/// which the first `n` are the scene: a densification reuses them while the count fits. Parameters and
/// moments hold `n` (the edit writes a new set from the old one).
struct Scene {
    n: usize,
    capacity: usize,
    rest: usize,
    stored_degree: usize,
    /// Parameters, first and second moments, in [`GROUPS`] order.
    params: Vec<wgpu::Buffer>,
    m: Vec<wgpu::Buffer>,
    v: Vec<wgpu::Buffer>,
    adam_steps: [u64; 6],
    /// The projection's outputs in binding order (means2d, conics, depths, radii, rects, opacities,
    /// colours, clamp flags).
    projected: Vec<wgpu::Buffer>,
    counts: wgpu::Buffer,
    count_scan: ScanPlan,
    projected_grads: wgpu::Buffer,
    packed_grads: wgpu::Buffer,
    /// grad_accum, grad_count, max_radii.
    stats: [wgpu::Buffer; 3],
    project_chunk: usize,
    backward_chunk: usize,
    project_uniform: wgpu::Buffer,
    backward_uniform: wgpu::Buffer,
    /// Camera blocks written by `select_view` (project's chunks, then the backward's), copied into the
    /// two uniforms.
    staging: wgpu::Buffer,
    block_counts: wgpu::Buffer,
}

impl Scene {
    /// Dispatch chunks of the projection and of its backward.
    fn chunks(&self) -> (usize, usize) {
        (
            self.n.div_ceil(self.project_chunk),
            self.n.div_ceil(self.backward_chunk),
        )
    }

    /// Words per Gaussian of the packed parameter gradients (14 + the SH-rest length).
    fn grad_stride(&self) -> usize {
        14 + self.rest
    }
}

pub struct GpuResident {
    ctx: Arc<GpuContext>,
    name: String,
    project: GpuProject,
    bin: GpuBin,
    raster: GpuRasterize,
    loss: GpuLoss,
    project_bwd: GpuProjectBackward,
    stats: GpuDensifyStats,
    scan: GpuScan,
    k: Kernels,
    unsupported: Option<String>,
    /// The loaded scene is antialiased (the camera blocks' flag word; kept across densification).
    antialiased: bool,
    /// The intersection list's first capacity (None: a guess from the Gaussian count).
    initial_capacity: Option<u32>,
    /// The most intersections a step needed since the list was last resized.
    most_needed: u32,
    /// The parts of a step that do not change, for the current scene and list (see `record_step`).
    template: Option<Vec<Op>>,
    /// The background and loss weight the template was recorded with.
    template_key: ([f32; 3], f64),
    /// Host seconds spent recording steps (the template's replays and holes).
    recording: f64,
    /// Sort passes and their bytes recorded so far (for [`ResidentEngine::counters`]).
    sort_passes: u64,
    sort_bytes: u64,
    images: Option<Images>,
    scene: Option<Scene>,
    list: Option<List>,
    status: wgpu::Buffer,
    target: wgpu::Buffer,
    loss_bufs: Option<LossBuffers>,
    image: wgpu::Buffer,
    final_t: wgpu::Buffer,
    n_contrib: wgpu::Buffer,
    ranges: wgpu::Buffer,
    metrics: wgpu::Buffer,
}

fn gpu_err(e: GpuError) -> String {
    e.to_string()
}

impl GpuResident {
    /// Compiles the pipelines and uploads the training `views` (all of one size; otherwise
    /// [`ResidentEngine::unsupported`] says why and the trainer runs on the host).
    pub fn new(ctx: Arc<GpuContext>, views: &[View]) -> Self {
        let book = module(&ctx, "resident.wgsl", crate::shaders::RESIDENT);
        let adam_module = module(&ctx, "adam.wgsl", crate::shaders::ADAM);
        let edit = module(&ctx, "densify_edit.wgsl", crate::shaders::DENSIFY_EDIT);
        let pipeline = |m: &wgpu::ShaderModule, entry: &str| {
            ctx.device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry),
                    layout: None,
                    module: m,
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    cache: None,
                })
        };
        let k = Kernels {
            select: Kernel::new(&ctx, &book, "select view", "select_view"),
            unpack: Kernel::new(&ctx, &book, "unpack target", "unpack_target"),
            overflow: Kernel::new(&ctx, &book, "check overflow", "check_overflow"),
            padding: Kernel::new(&ctx, &book, "fill padding", "fill_padding"),
            check: Kernel::new(&ctx, &book, "check finite", "check_finite"),
            commit: Kernel::new(&ctx, &book, "commit finite", "commit_finite"),
            adam_packed: pipeline(&adam_module, "packed"),
            classify: pipeline(&edit, "classify"),
            scatter: pipeline(&edit, "scatter"),
            reset: pipeline(&edit, "reset_opacity"),
        };
        let small = |label| ctx.storage(label, 16);
        let mut engine = GpuResident {
            name: format!("gpu resident ({})", ctx.info.name),
            project: GpuProject::new(&ctx),
            bin: GpuBin::new(&ctx),
            raster: GpuRasterize::new(&ctx),
            loss: GpuLoss::new(&ctx),
            project_bwd: GpuProjectBackward::new(&ctx),
            stats: GpuDensifyStats::new(&ctx),
            scan: GpuScan::new(&ctx),
            k,
            unsupported: None,
            antialiased: false,
            initial_capacity: None,
            most_needed: 0,
            template: None,
            template_key: ([0.0; 3], 0.0),
            recording: 0.0,
            sort_passes: 0,
            sort_bytes: 0,
            images: None,
            scene: None,
            list: None,
            status: ctx.storage("status", STATUS_WORDS as u64 * 4),
            target: small("target"),
            loss_bufs: None,
            image: small("image"),
            final_t: small("final transmittance"),
            n_contrib: small("n_contrib"),
            ranges: small("tile ranges"),
            metrics: small("metrics"),
            ctx,
        };
        if let Err(why) = engine.upload_views(views) {
            engine.unsupported = Some(why);
        }
        engine
    }

    /// Starts the intersection list at `capacity` entries (tests force overflows with a small one).
    pub fn with_initial_capacity(mut self, capacity: u32) -> Self {
        self.initial_capacity = Some(capacity);
        self.list = None;
        self.template = None;
        self
    }

    /// Sums the rasterize backward's per-Gaussian gradients this way: [`BackwardSums::Records`] (the
    /// default: the same bits every run) or [`BackwardSums::Atomic`] (faster on real GPUs, rounding that
    /// varies from run to run, no per-intersection records).
    pub fn with_backward_sums(mut self, sums: BackwardSums) -> Self {
        if sums == BackwardSums::Atomic && self.raster.sums != sums {
            self.name += " with atomic backward sums";
        }
        self.raster.sums = sums;
        self.list = None;
        self.template = None;
        self
    }

    /// The intersection list's capacity now (0 before the first load).
    pub fn capacity(&self) -> u32 {
        self.list.as_ref().map_or(0, |l| l.capacity)
    }

    fn upload_views(&mut self, views: &[View]) -> Result<(), String> {
        let ctx = self.ctx.clone();
        let first = &views.first().ok_or("no training views")?.camera;
        let (w, h) = (first.width, first.height);
        if let Some(v) = views
            .iter()
            .find(|v| v.camera.width != w || v.camera.height != h)
        {
            return Err(format!(
                "training views differ in size ({}x{} and {}x{} for {})",
                w, h, v.camera.width, v.camera.height, v.name
            ));
        }
        let grid = TileGrid::new(w, h);
        let pixels = w as usize * h as usize;
        let max = ctx.limits.max_storage_buffer_binding_size;
        let per_part = (max / (pixels as u64 * 4)).min(views.len() as u64) as usize;
        if per_part == 0 || views.len().div_ceil(per_part) > IMAGE_PARTS {
            return Err(format!(
                "the {} training images need {} bytes on the device, beyond {IMAGE_PARTS} bindings of {max}",
                views.len(),
                views.len() * pixels * 4
            ));
        }
        if grid.tiles_x > ctx.limits.max_compute_workgroups_per_dimension
            || grid.tiles_y > ctx.limits.max_compute_workgroups_per_dimension
        {
            return Err("the tile grid exceeds the device's workgroups per dimension".into());
        }
        let mut packed: Vec<wgpu::Buffer> = views
            .chunks(per_part)
            .map(|part| {
                let words: Vec<u32> = part
                    .iter()
                    .flat_map(|v| {
                        v.image
                            .data
                            .chunks_exact(3)
                            .map(|p| p[0] as u32 | (p[1] as u32) << 8 | (p[2] as u32) << 16)
                    })
                    .collect();
                ctx.storage_from("training images", &words)
            })
            .collect();
        while packed.len() < IMAGE_PARTS {
            packed.push(ctx.storage("no images", 16));
        }
        let lut: Vec<f32> = (0..256).map(|v| v as f32 / 255.0).collect();
        let mut cameras: Vec<CameraUniform> = Vec::with_capacity(views.len());
        for v in views {
            let cam = CameraParams::<f32>::new(&v.camera);
            cameras.push(camera_uniform(&v.camera, &cam, &grid, [0; 4]));
        }
        self.loss_bufs = Some(LossBuffers::new(&ctx, w as usize, h as usize).map_err(gpu_err)?);
        self.images = Some(Images {
            grid,
            views: views.len() as u32,
            packed,
            views_per_part: per_part as u32,
            lut: ctx.storage_from("image values", &lut),
            cameras: ctx.storage_from("cameras", &cameras),
        });
        let px = pixels as u64;
        self.target = ctx.storage("target", px * 12);
        self.image = ctx.storage("image", px * 12);
        self.final_t = ctx.storage("final transmittance", px * 4);
        self.n_contrib = ctx.storage("n_contrib", px * 4);
        self.ranges = ctx.storage("tile ranges", grid.num_tiles() as u64 * 8);
        self.metrics = ctx.storage("block row sums", (SUBMIT_STEPS * 3 * h as usize * 4) as u64);
        Ok(())
    }

    fn make_list(&self, capacity: u32) -> List {
        let ctx = &self.ctx;
        let c = capacity as u64;
        let make = |label| ctx.storage(label, c * 4);
        List {
            capacity,
            a: [make("key tile"), make("key depth"), make("ids")],
            b: [make("key tile"), make("key depth"), make("ids")],
            sort: SortPlan::new(ctx, capacity),
            // Atomic sums need no records.
            records: [0, 1, 2].map(|_| {
                let bytes = if self.raster.sums == BackwardSums::Records {
                    c * 12
                } else {
                    16
                };
                ctx.storage("intersection records", bytes)
            }),
        }
    }

    /// Records a step. With `only: None`, the parts that are the same for every step (the template,
    /// made once per scene and list and replayed), with a hole ([`Recorder::hole`]) where step-specific
    /// work goes; with `at: Some((s, step, adam_steps))` and `only: Some(hole)`, that hole's work for
    /// step `s` of the submission.
    fn record_step(
        &self,
        enc: &mut dyn Recorder,
        constants: &BlockConstants,
        at: Option<(usize, &PlannedStep, &mut [u64; 6])>,
        only: Option<u32>,
    ) {
        let (s, draw, degree) = at
            .as_ref()
            .map_or((0, 0, 0), |(s, step, _)| (*s, step.draw, step.sh_degree));
        let ctx = &*self.ctx;
        let images = self.images.as_ref().expect("views uploaded");
        let scene = self.scene.as_ref().expect("state loaded");
        let list = self.list.as_ref().expect("list made");
        let grid = &images.grid;
        let n = scene.n as u32;
        let tiles = grid.num_tiles() as u32;
        let pixels = grid.width * grid.height;
        let stride_words = (uniform_stride(ctx) / 16) as u32;
        let (project_chunks, backward_chunks) = scene.chunks();
        let grad_stride = scene.grad_stride();
        let coeffs = active_coeffs(degree, scene.stored_degree) as u32;
        let p = BookParams {
            a: [s as u32, list.capacity, n, images.views],
            b: [
                splat_train::random::seed_word(constants.config.seed),
                0,
                draw as u32,
                tiles,
            ],
            c: [
                (project_chunks + backward_chunks) as u32,
                stride_words,
                pixels,
                grad_stride as u32,
            ],
            d: [3 * grid.height, coeffs, images.views_per_part, 0],
        };
        let book = |enc: &mut dyn Recorder,
                    kernel: &Kernel,
                    bindings: &[(u32, &wgpu::Buffer)],
                    groups: u32| {
            kernel.dispatch_bytes(ctx, enc, bytemuck::bytes_of(&p), bindings, groups)
        };
        let status = &self.status;

        match only {
            None => {
                enc.hole(HOLE_SELECT);
                self.record_after_select(enc, constants, p);
            }
            Some(HOLE_SELECT) => book(
                enc,
                &self.k.select,
                &[
                    (1, status),
                    (2, &images.cameras),
                    (3, &scene.block_counts),
                    (4, &scene.staging),
                ],
                1,
            ),
            Some(HOLE_OVERFLOW) => {
                book(enc, &self.k.overflow, &[(1, status), (8, &scene.counts)], 1)
            }
            Some(hole) => self.record_late_hole(enc, constants, at, hole, p),
        }
    }

    /// The template from the select hole on (see [`Self::record_step`]).
    fn record_after_select(
        &self,
        enc: &mut dyn Recorder,
        constants: &BlockConstants,
        p: BookParams,
    ) {
        let ctx = &*self.ctx;
        let images = self.images.as_ref().expect("views uploaded");
        let scene = self.scene.as_ref().expect("state loaded");
        let list = self.list.as_ref().expect("list made");
        let loss = self.loss_bufs.as_ref().expect("views uploaded");
        let grid = &images.grid;
        let n = scene.n as u32;
        let tiles = grid.num_tiles() as u32;
        let pixels = grid.width * grid.height;
        let (project_chunks, backward_chunks) = scene.chunks();
        let grad_stride = scene.grad_stride();
        let status = &self.status;
        let book = |enc: &mut dyn Recorder,
                    kernel: &Kernel,
                    bindings: &[(u32, &wgpu::Buffer)],
                    groups: u32| {
            kernel.dispatch_bytes(ctx, enc, bytemuck::bytes_of(&p), bindings, groups)
        };
        // The view's camera blocks (written by the select hole) into the uniforms, its target image.
        let stride = uniform_stride(ctx) as u64;
        let project_bytes = project_chunks as u64 * stride;
        enc.copy(&scene.staging, 0, &scene.project_uniform, 0, project_bytes);
        enc.copy(
            &scene.staging,
            project_bytes,
            &scene.backward_uniform,
            0,
            backward_chunks as u64 * stride,
        );
        book(
            enc,
            &self.k.unpack,
            &[
                (1, status),
                (5, &images.packed[0]),
                (6, &images.lut),
                (7, &self.target),
                (13, &images.packed[1]),
                (14, &images.packed[2]),
                (15, &images.packed[3]),
            ],
            groups_for(pixels),
        );

        // Project.
        let pr = &scene.projected;
        let mut bindings: Vec<(u32, &wgpu::Buffer, usize)> = vec![
            (1, &scene.params[0], 3),
            (2, &scene.params[4], 3),
            (3, &scene.params[5], 4),
            (4, &scene.params[3], 1),
            (5, &scene.params[1], 3),
            (6, &scene.params[2], scene.rest),
        ];
        bindings.extend(
            pr.iter()
                .enumerate()
                .map(|(k, b)| (7 + k as u32, b, OUTPUT_WORDS[k])),
        );
        record_chunked_with(
            ctx,
            enc,
            &self.project.pipeline,
            &self.project.layout,
            scene.n,
            scene.project_chunk,
            &scene.project_uniform,
            &bindings,
        );
        let (means2d, conics, depths, radii, rects, opacities, colors, clamped) = (
            &pr[0], &pr[1], &pr[2], &pr[3], &pr[4], &pr[5], &pr[6], &pr[7],
        );

        // Bin into the capacity-sized list.
        enc.clear(&scene.counts);
        self.bin.count.dispatch(
            ctx,
            enc,
            [n, grid.tiles_x, 0, 0],
            &[(1, radii), (2, rects), (4, &scene.counts)],
            groups_for(n),
        );
        self.scan
            .record_planned(ctx, enc, &scene.counts, &scene.count_scan, n + 1);
        enc.hole(HOLE_OVERFLOW);
        let a = &list.a;
        book(
            enc,
            &self.k.padding,
            &[(9, &a[0]), (10, &a[1])],
            groups_for(list.capacity),
        );
        self.bin.emit.dispatch(
            ctx,
            enc,
            [n, grid.tiles_x, 0, list.capacity],
            &[
                (1, radii),
                (2, rects),
                (3, depths),
                (4, &scene.counts),
                (5, &a[0]),
                (6, &a[1]),
                (7, &a[2]),
            ],
            groups_for(n),
        );
        let c = list.capacity;
        // Padding keys hold tile `tiles`: one more tile value to sort.
        let in_b = self.bin.sort.record(
            ctx,
            enc,
            &list.sort,
            c,
            sort_key_bits(tiles),
            &list.a,
            &list.b,
        );
        let a = if in_b { &list.b } else { &list.a };
        enc.clear(&self.ranges);
        self.bin.ranges.dispatch(
            ctx,
            enc,
            [c, tiles, 0, 0],
            &[(1, &a[0]), (2, &self.ranges)],
            groups_for(c),
        );

        // Rasterize and the loss.
        // The SH degree is the projection's business; rasterizing reads the background and cut-offs.
        let mut settings = RenderSettings::new(0);
        settings.background = constants.background;
        let inputs = RasterInputs {
            ranges: &self.ranges,
            ids: &a[2],
            means2d,
            conics,
            opacities,
            colors,
        };
        let mut fwd = inputs.bindings().to_vec();
        fwd.extend([(7, &self.image), (8, &self.final_t), (9, &self.n_contrib)]);
        record_pass(
            ctx,
            enc,
            &self.raster.forward,
            bytemuck::bytes_of(&raster_params(grid, &settings, 0)),
            &fwd,
            (grid.tiles_x, grid.tiles_y, 1),
        );
        self.loss.record(
            ctx,
            enc,
            &self.image,
            &self.target,
            loss,
            constants.config.lambda_dssim,
        );
        enc.hole(HOLE_METRICS);

        // Backward.
        let mut tiles_b = inputs.bindings().to_vec();
        tiles_b.extend([(7, &self.final_t), (8, &self.n_contrib), (9, &loss.grad)]);
        let rp = raster_params(grid, &settings, n);
        if self.raster.sums == BackwardSums::Atomic {
            enc.clear(&scene.projected_grads);
            tiles_b.push((16, &scene.projected_grads));
            record_pass(
                ctx,
                enc,
                self.raster.backward_atomic(),
                bytemuck::bytes_of(&rp),
                &tiles_b,
                (grid.tiles_x, grid.tiles_y, 1),
            );
        } else {
            for r in &list.records {
                enc.clear(r);
            }
            tiles_b.extend([
                (10, &list.records[0]),
                (16, &list.records[1]),
                (17, &list.records[2]),
            ]);
            record_pass(
                ctx,
                enc,
                &self.raster.backward_tiles,
                bytemuck::bytes_of(&rp),
                &tiles_b,
                (grid.tiles_x, grid.tiles_y, 1),
            );
            let (x, y) = ctx.dispatch_size(groups_for(n));
            record_pass(
                ctx,
                enc,
                &self.raster.backward_gather,
                bytemuck::bytes_of(&rp),
                &[
                    (1, &self.ranges),
                    (2, &a[2]),
                    (10, &list.records[0]),
                    (16, &list.records[1]),
                    (17, &list.records[2]),
                    (11, radii),
                    (12, rects),
                    (13, depths),
                    (14, &a[1]),
                    (15, &scene.projected_grads),
                ],
                (x, y, 1),
            );
        }
        let bwd = [
            (1, &scene.params[0], 3),
            (2, &scene.params[4], 3),
            (3, &scene.params[5], 4),
            (4, &scene.params[1], 3),
            (5, &scene.params[2], scene.rest),
            (6, radii, 1),
            (7, conics, 3),
            (8, opacities, 1),
            (9, clamped, 1),
            (10, &scene.projected_grads, 9),
            (11, &scene.packed_grads, grad_stride),
        ];
        record_chunked_with(
            ctx,
            enc,
            &self.project_bwd.pipeline,
            &self.project_bwd.pipeline.get_bind_group_layout(0),
            scene.n,
            scene.backward_chunk,
            &scene.backward_uniform,
            &bwd,
        );

        // Finite or halt; then what changes the state.
        // In chunks of Gaussians whose packed gradients fit a binding; the first also checks the loss.
        for first in (0..scene.n).step_by(scene.backward_chunk) {
            let len = scene.backward_chunk.min(scene.n - first);
            let mut q = p;
            q.a[2] = len as u32;
            q.d[0] = if first == 0 { 3 * grid.height } else { 0 };
            let (x, y) = ctx.dispatch_size(groups_for(len as u32));
            record_pass_with(
                ctx,
                enc,
                self.k.check.pipeline(),
                bytemuck::bytes_of(&q),
                vec![
                    (1, status.as_entire_binding()),
                    (
                        11,
                        wgpu::BindingResource::Buffer(chunk_binding(
                            &scene.packed_grads,
                            first,
                            len,
                            grad_stride,
                        )),
                    ),
                    (12, loss.sums.as_entire_binding()),
                ],
                (x, y, 1),
            );
        }
        enc.hole(HOLE_TAIL);
    }

    /// The metrics and tail holes of step `s` (see [`Self::record_step`]): its loss rows into the block's
    /// metrics; the finite check's commit, statistics, opacity reset and Adam.
    fn record_late_hole(
        &self,
        enc: &mut dyn Recorder,
        constants: &BlockConstants,
        at: Option<(usize, &PlannedStep, &mut [u64; 6])>,
        hole: u32,
        p: BookParams,
    ) {
        let ctx = &*self.ctx;
        let (s, step, adam_steps) = at.expect("a step");
        let images = self.images.as_ref().expect("views uploaded");
        let scene = self.scene.as_ref().expect("state loaded");
        let loss = self.loss_bufs.as_ref().expect("views uploaded");
        let grid = &images.grid;
        let n = scene.n as u32;
        let grad_stride = scene.grad_stride();
        let status = &self.status;
        if hole == HOLE_METRICS {
            let row_bytes = 3 * grid.height as u64 * 4;
            enc.copy(
                &loss.sums,
                0,
                &self.metrics,
                s as u64 * row_bytes,
                row_bytes,
            );
            return;
        }
        assert_eq!(hole, HOLE_TAIL, "hole {hole}");
        self.k
            .commit
            .dispatch_bytes(ctx, enc, bytemuck::bytes_of(&p), &[(1, status)], 1);
        let radii = &scene.projected[3];
        if step.stats {
            let sp = StatsParams {
                n: [n, 0, 0, 0],
                half: [0.5 * grid.width as f32, 0.5 * grid.height as f32, 0.0, 0.0],
            };
            let (x, y) = ctx.dispatch_size(groups_for(n));
            record_pass(
                ctx,
                enc,
                &self.stats.pipeline,
                bytemuck::bytes_of(&sp),
                &[
                    (1, radii),
                    (2, &scene.projected_grads),
                    (3, &scene.stats[0]),
                    (4, &scene.stats[1]),
                    (5, &scene.stats[2]),
                    (6, status),
                ],
                (x, y, 1),
            );
        }
        // A densifying step resets after its edit (`run_block`).
        if step.reset_opacity && !step.densify {
            self.record_reset(enc, scene);
        }
        if let Some(position_lr) = step.position_lr {
            let lrs = constants.lrs(position_lr);
            for (g, t) in adam_steps.iter_mut().enumerate() {
                if !adam_applies(step, g) {
                    continue;
                }
                *t += 1;
                let width = [3, 3, scene.rest, 1, 3, 4][g];
                if width == 0 {
                    continue;
                }
                GpuAdam::record_packed(
                    ctx,
                    enc,
                    &self.k.adam_packed,
                    &crate::adam::PackedGroup {
                        values: &scene.params[g],
                        m: &scene.m[g],
                        v: &scene.v[g],
                        packed: &scene.packed_grads,
                        status,
                        width,
                        stride: grad_stride,
                        offset: packed_offset(g),
                    },
                    scene.n,
                    lrs[g],
                    constants.config.adam_betas(),
                    splat_train::adam::EPS,
                    *t,
                );
            }
        }
    }

    /// Records the opacity reset of `scene` (skipped by a halted step).
    fn record_reset(&self, enc: &mut dyn Recorder, scene: &Scene) {
        let ctx = &*self.ctx;
        let p = EditParams {
            a: [scene.n as u32, 0, 0, 0],
            d: [0.0, 0.0, splat_core::logit(0.01f32), 0.0],
            ..Default::default()
        };
        let (x, y) = ctx.dispatch_size(groups_for(scene.n as u32));
        record_pass(
            ctx,
            enc,
            &self.k.reset,
            bytemuck::bytes_of(&p),
            &[
                (19, &scene.params[3]),
                (20, &scene.m[3]),
                (21, &scene.v[3]),
                (22, &self.status),
            ],
            (x, y, 1),
        );
    }

    /// Runs `steps` (at most [`SUBMIT_STEPS`]) in one submission; returns how many completed and the
    /// halt (reason, needed intersections) if one stopped it.
    fn submit(
        &mut self,
        constants: &BlockConstants,
        steps: &[PlannedStep],
        out: &mut Vec<StepOutcome>,
    ) -> Result<(usize, Option<(u32, u32)>), String> {
        let ctx = self.ctx.clone();
        let start_steps = self.scene.as_ref().expect("state loaded").adam_steps;
        ctx.queue
            .write_buffer(&self.status, 0, &[0u8; STATUS_WORDS * 4]);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("resident block"),
            });
        let mut adam_steps = start_steps;
        // The template holds the background and the loss weight too.
        let key = (constants.background, constants.config.lambda_dssim);
        if self.template.is_none() || self.template_key != key {
            let mut ops = Vec::new();
            self.record_step(&mut ops, constants, None, None);
            self.template = Some(ops);
            self.template_key = key;
        }
        let t0 = std::time::Instant::now();
        let template = self.template.as_ref().expect("made above");
        for (s, step) in steps.iter().enumerate() {
            replay(&ctx, template, &mut enc, |enc, hole| {
                self.record_step(enc, constants, Some((s, step, &mut adam_steps)), Some(hole));
            });
        }
        let cb = enc.finish();
        self.recording += t0.elapsed().as_secs_f64();
        let bits = sort_key_bits(
            self.images
                .as_ref()
                .expect("views uploaded")
                .grid
                .num_tiles() as u32,
        );
        let capacity = self.capacity();
        self.sort_passes += steps.len() as u64 * crate::sort::passes(bits) as u64;
        self.sort_bytes += steps.len() as u64 * crate::sort::bytes(capacity, bits);
        ctx.submit_buffer(cb);
        // The read-backs: the status and the block's loss row sums.
        let status: Vec<u32> = ctx.read(&self.status, STATUS_WORDS).map_err(gpu_err)?;
        let images = self.images.as_ref().expect("views uploaded");
        let (w, h) = (images.grid.width as usize, images.grid.height as usize);
        let done = if status[0] == 0 {
            steps.len()
        } else {
            status[0] as usize - 1
        };
        let sums: Vec<f32> = ctx.read(&self.metrics, done * 3 * h).map_err(gpu_err)?;
        for (s, step) in steps[..done].iter().enumerate() {
            let (value, psnr) = loss_from_row_sums(
                &sums[s * 3 * h..(s + 1) * 3 * h],
                w,
                h,
                constants.config.lambda_dssim,
            );
            out.push(StepOutcome {
                step: step.step,
                loss: value.loss,
                l1: value.l1,
                ssim: value.ssim,
                psnr,
                skipped: false,
                densified: None,
                opacity_reset: step.reset_opacity,
                num_gaussians: self.scene.as_ref().map_or(0, |sc| sc.n),
            });
        }
        // The moments' step counts after the completed steps.
        let scene = self.scene.as_mut().expect("state loaded");
        for (g, (t, t0)) in scene.adam_steps.iter_mut().zip(start_steps).enumerate() {
            *t = t0 + steps[..done].iter().filter(|s| adam_applies(s, g)).count() as u64;
        }
        let halt = (status[0] != 0).then_some((status[1], status[3]));
        self.most_needed = self.most_needed.max(status[5]);
        Ok((done, halt))
    }
}

impl GpuResident {
    /// The scene for `n` Gaussians of `degree` with these parameters and moments (in [`GROUPS`] order),
    /// zero statistics, and the work buffers of `old` when they hold `n` (else new ones with room to
    /// grow).
    #[allow(clippy::too_many_arguments)]
    fn build_scene(
        &self,
        n: usize,
        degree: usize,
        params: Vec<wgpu::Buffer>,
        m: Vec<wgpu::Buffer>,
        v: Vec<wgpu::Buffer>,
        adam_steps: [u64; 6],
        old: Option<Scene>,
    ) -> Result<Scene, String> {
        let ctx = &*self.ctx;
        if n == 0 {
            return Err("no Gaussians to train".into());
        }
        let rest = 3 * ((degree + 1) * (degree + 1) - 1);
        let grad_stride = 14 + rest;
        // The widest whole-bound per-Gaussian buffer: the projected gradients, 36 bytes.
        let most = (ctx.limits.max_storage_buffer_binding_size / 36) as usize;
        if n > most {
            return Err(format!(
                "{n} Gaussians exceed the resident path's per-binding limit ({} bytes)",
                ctx.limits.max_storage_buffer_binding_size
            ));
        }
        type Work = (
            usize,
            Vec<wgpu::Buffer>,
            wgpu::Buffer,
            ScanPlan,
            wgpu::Buffer,
            wgpu::Buffer,
            [wgpu::Buffer; 3],
        );
        let reused: Option<Work> = old.filter(|o| o.capacity >= n && o.rest == rest).map(|o| {
            (
                o.capacity,
                o.projected,
                o.counts,
                o.count_scan,
                o.projected_grads,
                o.packed_grads,
                o.stats,
            )
        });
        let (capacity, projected, counts, count_scan, projected_grads, packed_grads, stats) =
            match reused {
                Some(w) => w,
                None => {
                    let cap = (n + n / 2).min(most);
                    (
                        cap,
                        OUTPUT_WORDS
                            .iter()
                            .map(|&w| ctx.storage("projected", (cap * w * 4) as u64))
                            .collect(),
                        ctx.storage("tile counts", (cap as u64 + 1) * 4),
                        ScanPlan::new(ctx, cap as u32 + 1),
                        ctx.storage("projected grads", (cap * 9 * 4) as u64),
                        ctx.storage("parameter grads", (cap * grad_stride * 4) as u64),
                        [0, 1, 2].map(|_| ctx.storage("densification statistics", cap as u64 * 4)),
                    )
                }
            };
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("statistics"),
            });
        for b in &stats {
            enc.clear_buffer(b, 0, None);
        }
        ctx.submit(enc);
        let project_chunk = GpuProject::chunk_len(ctx, rest);
        let backward_chunk = chunk_len_for(ctx, grad_stride);
        let (pc, bc) = (n.div_ceil(project_chunk), n.div_ceil(backward_chunk));
        let stride = uniform_stride(ctx);
        let uniform = |label, chunks: usize| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: (chunks * stride) as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let flags = self.antialiased as u32;
        let counts_of = |chunk: usize, chunks: usize| {
            (0..chunks).map(move |c| [chunk.min(n - c * chunk) as u32, 0, rest as u32, flags])
        };
        let block_counts: Vec<[u32; 4]> = counts_of(project_chunk, pc)
            .chain(counts_of(backward_chunk, bc))
            .collect();
        Ok(Scene {
            n,
            capacity,
            rest,
            stored_degree: degree,
            params,
            m,
            v,
            adam_steps,
            projected,
            counts,
            count_scan,
            projected_grads,
            packed_grads,
            stats,
            project_chunk,
            backward_chunk,
            project_uniform: uniform("project camera", pc),
            backward_uniform: uniform("backward camera", bc),
            staging: ctx.storage("camera blocks", ((pc + bc) * stride) as u64),
            block_counts: ctx.storage_from("block counts", &block_counts),
        })
    }

    /// Clone, split and prune on the device after step `step` (its statistics added), as
    /// `splat_train::densify::densify_and_prune`. Reads back six counts (the kept survivors, clones
    /// and split parents, which size the new buffers; candidates, clones and splits). Falls back to the host's edit when the
    /// Gaussian budget must choose among candidates or a group would not fit one binding.
    pub fn densify(
        &mut self,
        constants: &BlockConstants,
        step: u64,
    ) -> Result<DensifyReport, String> {
        let ctx = self.ctx.clone();
        let cfg = &constants.config;
        let scene = self.scene.as_ref().expect("state loaded");
        let n = scene.n;
        let max = ctx.limits.max_storage_buffer_binding_size;
        let widest = (scene.rest.max(4) * 4) as u64;
        let late = step > cfg.opacity_reset_interval;
        let flags = late as u32
            | ((cfg.prune_world_scale > 0.0) as u32) << 1
            | (cfg.prune_screen_radius.is_some() as u32) << 2;
        let mut p = EditParams {
            a: [n as u32, 0, 0, step as u32],
            b: [splat_train::random::seed_word(cfg.seed), 0, 0, flags],
            c: [
                cfg.densify_grad_threshold as f32,
                (cfg.percent_dense * constants.extent) as f32,
                cfg.min_opacity as f32,
                (cfg.prune_world_scale * constants.extent) as f32,
            ],
            d: [
                cfg.prune_screen_radius.unwrap_or(0.0) as f32,
                (1.6f32).ln(),
                0.0,
                0.0,
            ],
        };
        let kind = ctx.storage("densify kind", n as u64 * 4);
        let keeps = [0, 1, 2].map(|_| ctx.storage("densify keep", (n as u64 + 1) * 4));
        let counters = ctx.storage("densify counters", 16);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("densify"),
            });
        let (x, y) = ctx.dispatch_size(groups_for(n as u32 + 1));
        record_pass(
            &ctx,
            &mut enc,
            &self.k.classify,
            bytemuck::bytes_of(&p),
            &[
                (1, &scene.stats[0]),
                (2, &scene.stats[1]),
                (3, &scene.stats[2]),
                (4, &scene.params[4]),
                (5, &scene.params[3]),
                (6, &kind),
                (7, &keeps[0]),
                (8, &keeps[1]),
                (9, &keeps[2]),
                (10, &counters),
            ],
            (x, y, 1),
        );
        let plan = ScanPlan::new(&ctx, n as u32 + 1);
        for k in &keeps {
            self.scan
                .record_planned(&ctx, &mut enc, k, &plan, n as u32 + 1);
        }
        let totals = ctx.storage("densify totals", 24);
        for (i, k) in keeps.iter().enumerate() {
            enc.copy_buffer_to_buffer(k, n as u64 * 4, &totals, i as u64 * 4, 4);
        }
        enc.copy_buffer_to_buffer(&counters, 0, &totals, 12, 12);
        ctx.submit(enc);
        // The read-back: how large the edited set is (and the counts for the budget and the report).
        let t: Vec<u32> = ctx.read(&totals, 6).map_err(gpu_err)?;
        let [survivors, clones_kept, split_kept, candidates] = [t[0], t[1], t[2], t[3]];
        let (cloned, split) = (t[4] as usize, t[5] as usize);
        let new_n = (survivors + clones_kept + 2 * split_kept) as usize;
        let over_budget = cfg
            .max_gaussians
            .is_some_and(|cap| n + candidates as usize > cap);
        // The edit binds whole groups, old and new.
        if over_budget || n.max(new_n) as u64 * widest > max || new_n == 0 {
            return self.densify_on_host(constants, step);
        }
        p.b[1] = survivors;
        p.b[2] = clones_kept;
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("densify scatter"),
            });
        let widths = [3, 3, scene.rest, 1, 3, 4];
        let mut params = Vec::with_capacity(6);
        let mut m = Vec::with_capacity(6);
        let mut v = Vec::with_capacity(6);
        for (g, &w) in widths.iter().enumerate() {
            let bytes = (new_n * w * 4) as u64;
            let (dst, dm, dv) = (
                ctx.storage(GROUPS[g], bytes),
                ctx.storage("adam m", bytes),
                ctx.storage("adam v", bytes),
            );
            if w > 0 {
                p.a[1] = w as u32;
                p.a[2] = match g {
                    0 => 1,
                    4 => 2,
                    _ => 0,
                };
                let (x, y) = ctx.dispatch_size(groups_for(n as u32));
                record_pass(
                    &ctx,
                    &mut enc,
                    &self.k.scatter,
                    bytemuck::bytes_of(&p),
                    &[
                        (6, &kind),
                        (7, &keeps[0]),
                        (8, &keeps[1]),
                        (9, &keeps[2]),
                        (11, &scene.params[g]),
                        (12, &scene.m[g]),
                        (13, &scene.v[g]),
                        (14, &dst),
                        (15, &dm),
                        (16, &dv),
                        (17, &scene.params[5]),
                        (18, &scene.params[4]),
                    ],
                    (x, y, 1),
                );
            }
            params.push(dst);
            m.push(dm);
            v.push(dv);
        }
        ctx.submit(enc);
        let old = self.scene.take().expect("state loaded");
        let (degree, steps) = (old.stored_degree, old.adam_steps);
        self.template = None;
        self.scene = Some(self.build_scene(new_n, degree, params, m, v, steps, Some(old))?);
        Ok(DensifyReport {
            cloned,
            split,
            pruned: n - split + cloned + 2 * split - new_n,
        })
    }

    /// The host's edit: the state read back, edited, loaded again.
    fn densify_on_host(
        &mut self,
        constants: &BlockConstants,
        step: u64,
    ) -> Result<DensifyReport, String> {
        let degree = self.scene.as_ref().expect("state loaded").stored_degree;
        let mut state = TrainState::new(splat_core::Gaussians::new(degree));
        self.store(&mut state)?;
        let report = splat_train::densify::densify_and_prune(
            &mut state,
            &constants.config,
            constants.extent,
            step,
        );
        self.load(&state)?;
        Ok(report)
    }

    /// The device memory of `scene` and `list` and of the rest (images, per-pixel buffers).
    fn memory_of(&self, scene: &Scene, list: &List) -> EngineMemory {
        let sum = |bs: &[&wgpu::Buffer]| bs.iter().map(|b| b.size()).sum::<u64>();
        let mut gaussian: Vec<&wgpu::Buffer> = Vec::new();
        gaussian.extend(scene.params.iter().chain(&scene.m).chain(&scene.v));
        gaussian.extend(scene.projected.iter().chain(&scene.stats));
        gaussian.extend([&scene.counts, &scene.projected_grads, &scene.packed_grads]);
        let mut entries: Vec<&wgpu::Buffer> = list.a.iter().chain(&list.b).collect();
        entries.extend(&list.records);
        let mut other: Vec<&wgpu::Buffer> = vec![
            &self.target,
            &self.image,
            &self.final_t,
            &self.n_contrib,
            &self.ranges,
            &self.metrics,
        ];
        if let Some(images) = &self.images {
            other.extend(&images.packed);
        }
        EngineMemory {
            gaussians: scene.n,
            gaussian_bytes: sum(&gaussian) + scene.count_scan.bytes(),
            list_entries: list.capacity as u64,
            list_bytes: sum(&entries) + list.sort.bytes(),
            other_bytes: sum(&other),
        }
    }

    /// The opacity reset as its own submission (after a densification).
    fn reset_now(&mut self) {
        let scene = self.scene.as_ref().expect("state loaded");
        let mut enc = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("opacity reset"),
            });
        self.ctx
            .queue
            .write_buffer(&self.status, 0, &[0u8; STATUS_WORDS * 4]);
        self.record_reset(&mut enc, scene);
        self.ctx.submit(enc);
    }
}

/// `g` with `n` Gaussians (values kept where they exist, zeros after).
fn resize_gaussians(g: &mut splat_core::Gaussians<f32>, n: usize) {
    let rest = g.sh_rest_len();
    g.means.resize(n, [0.0; 3]);
    g.log_scales.resize(n, [0.0; 3]);
    g.rotations.resize(n, [0.0; 4]);
    g.opacity_logits.resize(n, 0.0);
    g.sh_dc.resize(n, [0.0; 3]);
    g.sh_rest.resize(n * rest, 0.0);
}

impl ResidentEngine for GpuResident {
    fn name(&self) -> &str {
        &self.name
    }

    fn unsupported(&self) -> Option<String> {
        self.unsupported.clone()
    }

    fn recording_seconds(&self) -> f64 {
        self.recording
    }

    fn counters(&self) -> Option<EngineCounters> {
        let c = self.ctx.counters.snapshot();
        Some(EngineCounters {
            dispatches: c.dispatches,
            submissions: c.submissions,
            readbacks: c.readbacks,
            readback_bytes: c.readback_bytes,
            sort_passes: self.sort_passes,
            sort_bytes: self.sort_bytes,
        })
    }

    fn memory(&self) -> Option<EngineMemory> {
        let scene = self.scene.as_ref()?;
        let list = self.list.as_ref()?;
        Some(self.memory_of(scene, list))
    }

    fn load(&mut self, state: &TrainState) -> Result<(), String> {
        if let Some(why) = &self.unsupported {
            return Err(why.clone());
        }
        let ctx = self.ctx.clone();
        let g = &state.gaussians;
        let n = g.len();
        self.antialiased = g.antialiased;
        let mut flat = state.gaussians.clone();
        let params: Vec<wgpu::Buffer> = (0..GROUPS.len())
            .map(|gi| ctx.storage_from(GROUPS[gi], splat_train::state::group_params(&mut flat, gi)))
            .collect();
        let m = state
            .adam
            .iter()
            .map(|a| ctx.storage_from("adam m", &a.m))
            .collect();
        let v = state
            .adam
            .iter()
            .map(|a| ctx.storage_from("adam v", &a.v))
            .collect();
        let mut adam_steps = [0u64; 6];
        for (t, a) in adam_steps.iter_mut().zip(&state.adam) {
            *t = a.step;
        }
        let old = self.scene.take();
        let scene = self.build_scene(n, g.sh_degree, params, m, v, adam_steps, old)?;
        for (b, s) in
            scene
                .stats
                .iter()
                .zip([&state.grad_accum, &state.grad_count, &state.max_radii])
        {
            if s.len() != n {
                return Err(format!("{} statistics for {n} Gaussians", s.len()));
            }
            ctx.queue.write_buffer(b, 0, bytemuck::cast_slice(s));
        }
        self.template = None;
        self.scene = Some(scene);
        if self.list.is_none() {
            // A first guess; an overflow grows it to what a step needs.
            let most = (ctx.limits.max_storage_buffer_binding_size / 12) as u32;
            let guess = list_size((n as u32).saturating_mul(2)).min(most);
            self.template = None;
            self.list = Some(self.make_list(self.initial_capacity.unwrap_or(guess).max(1)));
        }
        Ok(())
    }

    fn run_block(
        &mut self,
        constants: &BlockConstants,
        steps: &[PlannedStep],
        out: &mut Vec<StepOutcome>,
    ) -> Result<(), String> {
        if self.scene.is_none() {
            return Err("no state loaded".into());
        }
        if let Some(s) = steps.iter().rev().skip(1).find(|s| s.densify) {
            return Err(format!(
                "step {} densifies but does not end its block",
                s.step
            ));
        }
        let mut at = 0;
        while at < steps.len() {
            let end = (at + SUBMIT_STEPS).min(steps.len());
            let (done, halt) = self.submit(constants, &steps[at..end], out)?;
            at += done;
            match halt {
                None => {
                    // Every step sorts the whole list: shrink one much larger than the steps need.
                    let capacity = self.capacity();
                    if self.initial_capacity.is_none()
                        && capacity > MIN_CAPACITY
                        && self.most_needed < capacity / 3
                    {
                        let size = list_size(self.most_needed);
                        self.template = None;
                        self.list = Some(self.make_list(size));
                        self.most_needed = 0;
                    }
                }
                Some((HALT_OVERFLOW, needed)) => {
                    let max = (self.ctx.limits.max_storage_buffer_binding_size / 12) as u32;
                    if needed > max {
                        return Err(format!(
                            "step {} needs {needed} tile intersections, beyond this device's \
                             {max} per binding",
                            steps[at].step
                        ));
                    }
                    self.template = None;
                    self.list = Some(self.make_list(list_size(needed).min(max)));
                    self.most_needed = 0;
                }
                Some((HALT_NOT_FINITE, _)) => {
                    out.push(StepOutcome {
                        step: steps[at].step,
                        loss: f64::NAN,
                        skipped: true,
                        num_gaussians: self.scene.as_ref().map_or(0, |s| s.n),
                        ..Default::default()
                    });
                    at += 1;
                }
                Some((why, _)) => return Err(format!("unknown halt reason {why}")),
            }
        }
        // A densification ends the block (unless its step was skipped, as on the host).
        if let (Some(last), Some(outcome)) = (steps.last(), out.last_mut()) {
            if last.densify && outcome.step == last.step && !outcome.skipped {
                outcome.densified = Some(self.densify(constants, last.step)?);
                if last.reset_opacity {
                    self.reset_now();
                }
                outcome.num_gaussians = self.scene.as_ref().map_or(0, |s| s.n);
            }
        }
        Ok(())
    }

    fn store(&mut self, state: &mut TrainState) -> Result<(), String> {
        let ctx = self.ctx.clone();
        let scene = self.scene.as_ref().ok_or("no state loaded")?;
        let n = scene.n;
        resize_gaussians(&mut state.gaussians, n);
        state.gaussians.antialiased = self.antialiased;
        for gi in 0..GROUPS.len() {
            let len = n * group_width(&state.gaussians, gi);
            let values: Vec<f32> = ctx.read(&scene.params[gi], len).map_err(gpu_err)?;
            splat_train::state::group_params(&mut state.gaussians, gi).copy_from_slice(&values);
            if state.adam.len() <= gi {
                state.adam.push(splat_train::adam::AdamState::zeros(0));
            }
            let adam = &mut state.adam[gi];
            adam.m = ctx.read(&scene.m[gi], len).map_err(gpu_err)?;
            adam.v = ctx.read(&scene.v[gi], len).map_err(gpu_err)?;
            adam.step = scene.adam_steps[gi];
        }
        state.grad_accum = ctx.read(&scene.stats[0], n).map_err(gpu_err)?;
        state.grad_count = ctx.read(&scene.stats[1], n).map_err(gpu_err)?;
        state.max_radii = ctx.read(&scene.stats[2], n).map_err(gpu_err)?;
        Ok(())
    }
}
