//! Training steps run where the state lives: a [`ResidentEngine`] keeps the parameters, Adam moments,
//! densification statistics, training images and cameras on its device and runs a *block* of steps per
//! call, drawing each step's view itself ([`crate::views`]) and doing the densification edits and opacity
//! resets itself (split samples from [`crate::random`]). The [`crate::Trainer`] plans the blocks: a block
//! ends after a densification (the Gaussian count changes), at a checkpoint, or after
//! [`crate::trainer::BLOCK_STEPS`]; the host reads the state back ([`ResidentEngine::store`]) only when
//! it needs it.
//!
//! A block applies exactly the host trainer's arithmetic, so a resident run and a host run with the same
//! seed see the same views and split samples and differ only by the devices' rounding.

use crate::config::TrainConfig;
use crate::densify::DensifyReport;
use crate::state::TrainState;

/// One step of a block, as the host planned it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlannedStep {
    /// The iteration (1-based).
    pub step: u64,
    /// Index of this step's view among all views drawn by the run ([`crate::views::view_for_draw`]).
    pub draw: u64,
    /// SH degree used by this step's render.
    pub sh_degree: usize,
    /// Add this step's densification statistics.
    pub stats: bool,
    /// Apply Adam (every group, but opacities on a reset step) with this position learning rate;
    /// `None`: no update (the last iteration, a densification).
    pub position_lr: Option<f64>,
    /// Clone, split and prune after this step's statistics (only the last step of a block).
    pub densify: bool,
    /// Cap the opacities (after the densification, if any).
    pub reset_opacity: bool,
    /// 3DGS-MCMC: add the opacity and scale regularizers' gradients before the update.
    pub regularize: bool,
    /// 3DGS-MCMC: after the update, add the position noise with this position learning rate (the next
    /// step's). `None` on a refine step: the host relocates and grows first, then adds the noise.
    pub noise_lr: Option<f64>,
}

/// The constants of a block's steps.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockConstants {
    /// The schedule in optimizer steps ([`TrainConfig::per_step`]).
    pub config: TrainConfig,
    pub extent: f64,
    pub background: [f32; 3],
}

impl BlockConstants {
    /// Learning rates in [`crate::state::GROUPS`] order, the position's (index 0) given.
    pub fn lrs(&self, position_lr: f64) -> [f64; 6] {
        let c = &self.config;
        [
            position_lr,
            c.sh_dc_lr,
            c.sh_rest_lr,
            c.opacity_lr,
            c.scale_lr,
            c.rotation_lr,
        ]
    }
}

/// What one resident step did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepOutcome {
    pub step: u64,
    pub loss: f64,
    pub l1: f64,
    pub ssim: f64,
    pub psnr: f64,
    /// A loss or gradient was not finite: nothing was applied.
    pub skipped: bool,
    pub densified: Option<DensifyReport>,
    pub opacity_reset: bool,
    /// After the step.
    pub num_gaussians: usize,
}

/// What an engine asked of its device so far (cumulative; `splat bench` reports them per step). They
/// depend on the code and the work, not on the device's speed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineCounters {
    /// Compute dispatches.
    pub dispatches: u64,
    /// Queue submissions.
    pub submissions: u64,
    /// Blocking read-backs and their bytes.
    pub readbacks: u64,
    pub readback_bytes: u64,
    /// Passes of the intersection list's sort and the bytes they read and write.
    pub sort_passes: u64,
    pub sort_bytes: u64,
}

/// Device time per stage from timestamp queries, summed over `steps` timed steps, in
/// [`crate::StageTimes::NAMES`] order.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTiming {
    pub steps: u64,
    pub seconds: [f64; 8],
}

/// The engine's device's measured ceilings (fp32 FMA, copy bandwidth).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct DevicePeak {
    pub gflops: f64,
    pub gbytes_per_second: f64,
    /// Timed by the device's timestamps (else the host's clock, a lower bound).
    pub timestamps: bool,
}

/// An engine's device memory now: what scales with the Gaussians (parameters, moments, statistics,
/// per-Gaussian work buffers), with the intersection list (keys, ids, per-entry backward records, the
/// sort's buffers), and the rest (training images, per-pixel buffers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineMemory {
    pub gaussians: usize,
    pub gaussian_bytes: u64,
    pub list_entries: u64,
    pub list_bytes: u64,
    pub other_bytes: u64,
}

/// A device that runs blocks of training steps on a state it holds.
pub trait ResidentEngine: Send {
    fn name(&self) -> &str;
    /// Whether blocks can run for this configuration (e.g. every training view the same size); when not,
    /// the reason, and the trainer runs every step on the host.
    fn unsupported(&self) -> Option<String>;
    /// The most Gaussians the device can hold (its per-binding limit on per-Gaussian buffers), if any.
    fn max_gaussians(&self) -> Option<usize> {
        None
    }
    /// Host seconds spent recording device work so far (for benchmarks: a fast device must not wait
    /// on its host).
    fn recording_seconds(&self) -> f64 {
        0.0
    }
    /// What was asked of the device so far, when the engine counts it.
    fn counters(&self) -> Option<EngineCounters> {
        None
    }
    /// The device memory the engine holds now, when it knows it.
    fn memory(&self) -> Option<EngineMemory> {
        None
    }
    /// Times every later step's stages on the device (for benchmarks: it splits the device's work into
    /// more passes). False where the device cannot.
    fn enable_stage_timing(&mut self) -> bool {
        false
    }
    /// Measures the device's fp32 FMA peak and memory bandwidth (for benchmarks; takes a moment).
    fn measure_peak(&self) -> Option<Result<DevicePeak, String>> {
        None
    }
    /// The device time per stage of the steps timed so far.
    fn stage_timing(&self) -> Option<StageTiming> {
        None
    }
    /// Makes the device's state `state` (parameters, moments with their step counts, statistics).
    fn load(&mut self, state: &TrainState) -> Result<(), String>;
    /// Trains on `views` from the next block on (the same views at another coarse-to-fine level,
    /// [`crate::resolution`]). An engine that cannot says why, and the run stays on the host.
    fn set_views(&mut self, views: &[splat_io::dataset::View]) -> Result<(), String> {
        let _ = views;
        Err("this engine trains at one resolution".into())
    }
    /// Runs `steps` in order and appends one outcome per step. A step with a non-finite loss or gradient
    /// changes nothing and is reported skipped; the block goes on after it.
    fn run_block(
        &mut self,
        constants: &BlockConstants,
        steps: &[PlannedStep],
        out: &mut Vec<StepOutcome>,
    ) -> Result<(), String>;
    /// Copies the device's state into `state` (parameters, moments and statistics, resized to the
    /// device's Gaussian count).
    fn store(&mut self, state: &mut TrainState) -> Result<(), String>;
}
