//! The resident trainer on the GPU ([`GpuResident`], a [`ResidentEngine`]): parameters, Adam moments,
//! densification statistics, every training image (RGB8 packed in a u32) and every camera live on the
//! device, and one submission runs up to [`SUBMIT_STEPS`] training steps:
//!
//! per step: draw the view and write its camera blocks and target image (`resident.wgsl`); project; count
//! tile intersections and scan; check the list's capacity; emit and sort the list; tile ranges;
//! rasterize; loss; rasterize backward; project backward; check the gradients are finite; densification
//! statistics; opacity reset when due; Adam (the per-step constants, learning rate and bias corrections,
//! are known to the host when it records the block). A densification ends the block: the edit
//! (`densify_edit.wgsl`) runs on the device and the host learns the new Gaussian count.
//!
//! Static shapes: the intersection list has a capacity, not the step's size, so every dispatch of a step
//! has a size fixed when the block is recorded. The sort and the tile ranges read the step's
//! intersection count from the scan on the device (`sort::LiveCount`): entries past it are not touched. A step whose list would not fit, or whose loss or gradients are
//! not finite, *halts* the submission: it and every later step change nothing (the state-changing
//! kernels read the status word). After the submission the host reads back the only things it must: the
//! status (8 words) and the loss row sums (3 x height floats per step, for the loss, L1, SSIM and PSNR it
//! reports). On an overflow it grows the list to the size the status reports and records the rest again
//! from the halted step, so results never depend on the capacity; a non-finite step is reported skipped
//! and the submission resumes after it.
//!
//! Recording: the part of a step that is the same every step is recorded once per scene and list as a
//! list of operations with holes for the per-step work (`record_step`), and replayed per step. The host
//! records the next submission while the device runs the current one, as if the current one completes
//! (an overflow, a non-finite step or a new list discards it): the device waits for the host only at a
//! block's first submission and between a submission's end and the next one's start (two read-backs).
//!
//! Files: this one (the engine, uploads, the [`ResidentEngine`] interface: a block is its
//! submissions, then a densifying last step's edit), `submit.rs` (a block's submissions: record,
//! start, finish, halts), `record.rs` (a step's recording, as its stages), `scene.rs` (the scene's and
//! the list's buffers), `edit.rs` (densification and opacity resets).

mod edit;
mod record;
mod scene;
mod submit;

use std::sync::Arc;

use splat_core::TileGrid;
use splat_io::dataset::View;
use splat_render::project::CameraParams;
use splat_render::sh::active_coeffs;
use splat_render::RenderSettings;
use splat_train::densify::DensifyReport;
use splat_train::resident::{
    BlockConstants, DevicePeak, EngineCounters, EngineMemory, PlannedStep, ResidentEngine,
    StageTiming, StepOutcome,
};
use splat_train::state::{group_width, GROUPS};
use splat_train::TrainState;

use crate::bin::{bits_for, BinInputs};
use crate::context::{GpuContext, GpuError};
use crate::densify::StatsParams;
use crate::kernel::{
    compute_pipeline, groups_for, module, record_pass, replay, Kernel, Op, Recorder,
};
use crate::loss::{loss_from_row_sums, LossBuffers};
use crate::project::{
    camera_uniform, record_chunked_with, uniform_stride, CameraUniform, OUTPUT_WORDS,
};
use crate::project_bwd_adam::{AdamStep, FusedBuffers};
use crate::rasterize::{raster_params, BackwardSums, RasterInputs};
use crate::scan::{GpuScan, ScanPlan};
use crate::sort::{Inverse, LiveCount, SortPlan, SortWith};
use crate::timing::PassTimer;
use crate::{GpuBin, GpuDensifyStats, GpuLoss, GpuProject, GpuProjectBackwardAdam, GpuRasterize};

/// Steps recorded into one submission at most. A block of up to 100 steps is several submissions, each
/// recorded while the device runs the one before (all but the first's recording hidden).
pub const SUBMIT_STEPS: usize = 25;

/// The 4x16-byte uniform of `resident.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct BookParams {
    a: [u32; 4],
    b: [u32; 4],
    c: [u32; 4],
    d: [u32; 4],
}

/// Whether step `s` updates group `g` (as the host: none on a densification or the last step, all but
/// the opacities on a reset).
fn adam_applies(s: &PlannedStep, g: usize) -> bool {
    s.position_lr.is_some() && !(g == 3 && s.reset_opacity)
}

/// The smallest intersection list made.
const MIN_CAPACITY: u32 = 4096;

/// A list for `needed` intersections with a quarter to spare (grown on overflow, shrunk when the steps
/// need under half of it: the sort's dispatches are sized by the capacity).
fn list_size(needed: u32) -> u32 {
    needed
        .saturating_add(needed / 4)
        .next_multiple_of(1024)
        .max(MIN_CAPACITY)
}

/// Key bits of a step's sort: the tile bits of `tiles` tiles, then the depth's.
fn sort_key_bits(tiles: u32) -> u32 {
    32 + bits_for(tiles)
}

/// The most Gaussians the resident path holds: its widest per-Gaussian buffer bound whole, the projected
/// gradients (9 floats), must fit one binding.
pub(crate) fn max_gaussians(ctx: &GpuContext) -> usize {
    (ctx.limits.max_storage_buffer_binding_size / 36) as usize
}

/// Buffers the training images may be split over (bindings of `unpack_target`).
const IMAGE_PARTS: usize = 4;

/// Where a step's template leaves room for work that differs per step.
const HOLE_SELECT: u32 = 0;
const HOLE_OVERFLOW: u32 = 1;
const HOLE_METRICS: u32 = 2;
const HOLE_TAIL: u32 = 3;

/// Stage marks of a step, in `StageTimes::NAMES` order (the view's selection and target image count as
/// the projection's; the finite check as the projection backward's; commit and statistics as densify's).
const STAGE_PROJECT: u32 = 0;
const STAGE_BIN: u32 = 1;
const STAGE_RASTER_FWD: u32 = 2;
const STAGE_LOSS: u32 = 3;
const STAGE_RASTER_BWD: u32 = 4;
const STAGE_PROJECT_BWD: u32 = 5;
const STAGE_DENSIFY: u32 = 6;
const STAGE_ADAM: u32 = 7;

/// Status words (see `resident.wgsl`).
const STATUS_WORDS: usize = 8;
const HALT_OVERFLOW: u32 = 1;
const HALT_NOT_FINITE: u32 = 2;

struct Kernels {
    select: Kernel,
    unpack: Kernel,
    overflow: Kernel,
    commit: Kernel,
    classify: wgpu::ComputePipeline,
    scatter: wgpu::ComputePipeline,
    reset: wgpu::ComputePipeline,
    noise: wgpu::ComputePipeline,
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
    /// The Gaussian id of each emitted entry, and where the sort put it (`sort::Inverse`).
    emitted: wgpu::Buffer,
    inverse: wgpu::Buffer,
    /// The rasterize backward's 9 values per entry, three planes of 3.
    records: [wgpu::Buffer; 3],
}

/// The state on the device and the buffers sized by its Gaussian count `n`: parameters and moments (the
/// edit writes a new set from the old one), work buffers (projection, tile counts, gradients) and
/// statistics (made new for each count).
struct Scene {
    n: usize,
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
}

pub struct GpuResident {
    ctx: Arc<GpuContext>,
    name: String,
    project: GpuProject,
    bin: GpuBin,
    raster: GpuRasterize,
    loss: GpuLoss,
    /// The projection backward fused with Adam (None where the adapter cannot bind it: unsupported).
    backward: Option<GpuProjectBackwardAdam>,
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
    /// Device time per stage when timing was asked for ([`ResidentEngine::enable_stage_timing`]).
    stage_timing: Option<StageTiming>,
    /// Submissions recorded while the one before ran, and how many of them were submitted.
    ahead: (u64, u64),
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
        let edit = module(&ctx, "densify_edit.wgsl", crate::shaders::DENSIFY_EDIT);
        let pipeline =
            |m: &wgpu::ShaderModule, entry: &str| compute_pipeline(&ctx, m, entry, entry);
        let k = Kernels {
            select: Kernel::new(&ctx, &book, "select view", "select_view"),
            unpack: Kernel::new(&ctx, &book, "unpack target", "unpack_target"),
            overflow: Kernel::new(&ctx, &book, "check overflow", "check_overflow"),
            commit: Kernel::new(&ctx, &book, "commit finite", "commit_finite"),
            classify: pipeline(&edit, "classify"),
            scatter: pipeline(&edit, "scatter"),
            reset: pipeline(&edit, "reset_opacity"),
            noise: pipeline(&edit, "mcmc_noise"),
        };
        let small = |label| ctx.storage(label, 16);
        let mut engine = GpuResident {
            name: format!("gpu resident ({})", ctx.info.name),
            project: GpuProject::new(&ctx),
            bin: GpuBin::new(&ctx),
            raster: GpuRasterize::new(&ctx),
            loss: GpuLoss::new(&ctx),
            backward: None,
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
            stage_timing: None,
            ahead: (0, 0),
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
        match GpuProjectBackwardAdam::new(&engine.ctx) {
            Ok(b) => engine.backward = Some(b),
            Err(why) => engine.unsupported = Some(why),
        }
        if let Err(why) = engine.upload_views(views) {
            engine.unsupported.get_or_insert(why);
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

    /// Submissions recorded while the one before ran, and how many of them were used (the rest were
    /// discarded by a halt or a new list).
    pub fn recorded_ahead(&self) -> (u64, u64) {
        self.ahead
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
            // The resident step renders with the default cut-offs (`record.rs`).
            let alpha_min = RenderSettings::new(0).cutoffs.alpha_min;
            cameras.push(camera_uniform(&v.camera, &cam, &grid, alpha_min, [0; 4]));
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

    fn max_gaussians(&self) -> Option<usize> {
        Some(max_gaussians(&self.ctx))
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

    fn enable_stage_timing(&mut self) -> bool {
        if self.ctx.has_timestamps() && self.stage_timing.is_none() {
            self.stage_timing = Some(StageTiming::default());
        }
        self.stage_timing.is_some()
    }

    fn stage_timing(&self) -> Option<StageTiming> {
        self.stage_timing
    }

    fn measure_peak(&self) -> Option<Result<DevicePeak, String>> {
        Some(
            crate::peak::measure(&self.ctx)
                .map(|p| DevicePeak {
                    gflops: p.gflops,
                    gbytes_per_second: p.gbytes_per_second,
                    timestamps: p.timestamps,
                })
                .map_err(gpu_err),
        )
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

    fn set_views(&mut self, views: &[View]) -> Result<(), String> {
        if let Some(why) = &self.unsupported {
            return Err(why.clone());
        }
        self.upload_views(views)?;
        // The template binds the per-pixel buffers and the tile grid.
        self.template = None;
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
        self.run_submissions(constants, steps, out)?;
        self.densify_at_block_end(constants, steps, out)
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
