//! The training loop: one view per step, drawn without replacement per epoch from a seeded permutation
//! ([`crate::views`]).
//!
//! Per iteration `it` (1-based, as the original): raise the active SH degree every `sh_degree_interval`
//! steps; render the view; loss and backward; while `it < densify_until`, accumulate densification
//! statistics, densify every `densify_interval` steps after `densify_from`, reset opacities every
//! `opacity_reset_interval` steps; then the Adam step. As in the original (where densification replaces the
//! parameter tensors, leaving them without gradients), an iteration that densifies applies no Adam step,
//! one that resets opacities applies none to opacities, and the last iteration applies none. The result
//! is the model the original saves at its last iteration, which it does before that iteration's
//! densification, so the last iteration does not densify or reset either.
//!
//! The files follow the step:
//! - [`plan`]: what iteration `it` does (statistics, densify, reset, refine, update), from the
//!   configuration alone;
//! - [`step`]: the host step as its stages (schedule, render the views with loss and backward, reduce
//!   over ranks, check, regularize, densify, optimize, refine);
//! - [`blocks`]: the same steps in blocks on a [`ResidentEngine`] ([`Trainer::with_resident`]) that
//!   holds the state; `step` returns them one at a time and [`Trainer::sync`] reads the state back;
//! - [`outcome`]: what a step returns.

mod blocks;
mod outcome;
mod photometric;
mod plan;
mod poses;
mod step;

use splat_core::Gaussians;
use splat_io::dataset::{Dataset, Points, View};
use splat_render::{Backend, Buffers};

use crate::config::{Strategy, TrainConfig};
use crate::densify::StepStatistics;
use crate::init::gaussians_from_points;
use crate::loss::SsimScratch;
use crate::mcmc;
use crate::parallel::{Collective, Local};
use crate::schedule::exp_decay;
use crate::state::TrainState;

pub use blocks::{BLOCK_SECONDS, BLOCK_STEPS};
pub use outcome::{Diverged, StageTimes, StepStats, MAX_CONSECUTIVE_SKIPS};
pub(crate) use plan::StepPlan;

/// What a run trains on: the training views, the background they are composited on, and the scene's
/// extent (which scales the position learning rate and the densification thresholds).
#[derive(Clone, Copy, Debug)]
pub struct TrainData<'a> {
    pub views: &'a [View],
    pub background: [f32; 3],
    pub extent: f64,
}

impl<'a> TrainData<'a> {
    /// A dataset's training views.
    pub fn of(ds: &'a Dataset) -> Self {
        TrainData {
            views: &ds.train,
            background: ds.background,
            extent: ds.scene_extent,
        }
    }
}

pub struct Trainer<'a> {
    pub cfg: TrainConfig,
    pub views: &'a [View],
    pub background: [f32; 3],
    pub extent: f64,
    pub state: TrainState,
    backend: Box<dyn Backend + Send + 'a>,
    buffers: Buffers,
    ssim: SsimScratch<f32>,
    target: Vec<f32>,
    grad_image: Vec<f32>,
    consecutive_skips: u32,
    /// Steps skipped for non-finite values in this process.
    pub skipped_steps: u64,
    collective: Box<dyn Collective + 'a>,
    /// Gradients summed over the views of a step (unused with one view and one rank).
    batch_grads: Gaussians<f32>,
    /// Densification statistics of a step.
    step_stats: StepStatistics,
    /// Blocks of steps on a device holding the state (see [`crate::resident`]).
    blocks: Option<blocks::Blocks<'a>>,
    /// `state` is current (false after a resident block ran; [`Trainer::sync`] copies it back).
    host_current: bool,
    /// Resident blocks end at multiples of this (checkpoints read the state there); 0: no such bound.
    sync_every: u64,
    /// Further steps where resident blocks end.
    sync_steps: Vec<u64>,
    /// The raw log-scales and opacities while a view renders the 3D-filtered ones.
    mip_saved: crate::mip::Saved,
    /// The training views at the current coarse-to-fine level ([`crate::resolution`]).
    scaled: crate::resolution::ScaledViews,
    /// With visible-only Adam: 1 for a Gaussian some view of the step (on any rank) sees, else 0.
    seen: Vec<f32>,
    /// The per-pixel weights of the current view's mask.
    mask_weights: Vec<f32>,
    /// The appearance models' buffers ([`crate::appearance::Appearance`]) and the step's gradient of
    /// every image's model.
    appearance: crate::appearance::Appearance,
    appearance_grads: Vec<f32>,
    /// The step's gradient of every training view's pose correction ([`crate::pose`]).
    pose_grads: Vec<f32>,
}

/// Steps between recomputations of the 3D filter after densification stops (Mip-Splatting's).
pub const MIP_FILTER_INTERVAL: u64 = 100;

impl<'a> Trainer<'a> {
    /// Starts from the initial points.
    pub fn new(
        cfg: TrainConfig,
        data: TrainData<'a>,
        points: &Points,
        backend: Box<dyn Backend + Send + 'a>,
    ) -> Self {
        let capped = match cfg.strategy {
            Strategy::Mcmc => mcmc::subsample_to_cap(points, cfg.mcmc.cap_max, cfg.seed),
            Strategy::Default => None,
        };
        let mut gaussians = gaussians_from_points(capped.as_ref().unwrap_or(points), cfg.sh_degree);
        if cfg.strategy == Strategy::Mcmc {
            mcmc::initialize(&mut gaussians, &cfg.mcmc);
        }
        Self::resume(cfg, data, TrainState::new(gaussians), backend)
    }

    /// Continues from a saved state. `cfg` is the user's; with a batch of B > 1 its schedule is
    /// converted to optimizer steps ([`TrainConfig::per_step`]).
    pub fn resume(
        cfg: TrainConfig,
        data: TrainData<'a>,
        state: TrainState,
        backend: Box<dyn Backend + Send + 'a>,
    ) -> Self {
        assert!(!data.views.is_empty(), "no training views");
        let mut state = state;
        // Checkpoints do not carry the flag: it is the run's (config.json).
        state.gaussians.antialiased = cfg.antialiased;
        Trainer {
            cfg: cfg.per_step(),
            views: data.views,
            background: data.background,
            extent: data.extent,
            state,
            backend,
            buffers: Buffers::default(),
            ssim: SsimScratch::default(),
            target: Vec::new(),
            grad_image: Vec::new(),
            consecutive_skips: 0,
            skipped_steps: 0,
            collective: Box::new(Local),
            batch_grads: Gaussians::new(0),
            step_stats: StepStatistics::default(),
            blocks: None,
            host_current: true,
            sync_every: 0,
            sync_steps: Vec::new(),
            mip_saved: Default::default(),
            scaled: Default::default(),
            seen: Vec::new(),
            mask_weights: Vec::new(),
            appearance: Default::default(),
            appearance_grads: Vec::new(),
            pose_grads: Vec::new(),
        }
        .with_filter_sizes()
        .with_appearance()
        .with_poses()
    }

    /// With `--mip-filter`, gives a state without filter sizes (a fresh run, or a checkpoint from a
    /// run without them) the sizes for its training views.
    fn with_filter_sizes(mut self) -> Self {
        if self.cfg.mip_filter && self.state.filter_3d.len() != self.state.len() {
            self.update_filter();
        }
        self
    }

    /// Recomputes the 3D filter sizes from the training views ([`crate::mip::filter_sizes`]).
    fn update_filter(&mut self) {
        self.state.filter_3d = crate::mip::filter_sizes(&self.state.gaussians, self.views);
    }

    /// Runs as one rank of a data-parallel group (see [`crate::parallel`]).
    pub fn with_collective(mut self, collective: Box<dyn Collective + 'a>) -> Self {
        self.collective = collective;
        self
    }

    /// The parameter checksums of every rank, in rank order (all equal unless replicas drifted).
    pub fn replica_checksums(&mut self, out: &mut Vec<u64>) {
        let c = crate::parallel::state_checksum(&self.state);
        self.collective.gather_u64(c, out);
    }

    /// This process's rank in its data-parallel group (0 alone).
    pub fn rank(&self) -> usize {
        self.collective.rank()
    }

    /// The ranks of the data-parallel group.
    pub fn ranks(&self) -> usize {
        self.collective.size()
    }

    pub fn done(&self) -> bool {
        self.state.step >= self.cfg.iterations
    }

    /// The buffers of the last step (projection, bins, raster output, gradients).
    pub fn buffers(&self) -> &Buffers {
        &self.buffers
    }

    /// The backend's name.
    pub fn backend_name(&self) -> &str {
        self.backend.name()
    }

    /// The view of draw `j` of iteration `it` (see [`crate::views`]: stateless, so a device can draw the
    /// same views).
    fn view_of(&self, it: u64, j: usize) -> usize {
        let draw = (it - 1) * self.cfg.batch.max(1) as u64 + j as u64;
        crate::views::view_for_draw(self.cfg.seed, draw, self.views.len() as u32) as usize
    }

    /// The position learning rate at iteration `it`.
    pub fn position_lr(&self, it: u64) -> f64 {
        let steps = self.cfg.position_lr_steps.unwrap_or(self.cfg.iterations);
        exp_decay(
            self.cfg.position_lr_init * self.extent,
            self.cfg.position_lr_final * self.extent,
            it,
            steps,
        )
    }

    /// Runs one iteration: `batch` views (this rank's share of them), gradients summed over views and
    /// ranks, one update, on the host or as the next step of a resident block. A step whose loss or
    /// gradients are not finite is skipped (counted in `skipped_steps`); too many in a row is an error.
    pub fn step(&mut self) -> Result<StepStats, Diverged> {
        if self.blocks.is_some() {
            self.resident_step()
        } else {
            self.host_step()
        }
    }
}
