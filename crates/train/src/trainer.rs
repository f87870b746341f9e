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
//! With a [`ResidentEngine`] ([`Trainer::with_resident`]) the same steps run in blocks on the device
//! that holds the state; `step` returns them one at a time and [`Trainer::sync`] reads the state back.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use splat_core::Gaussians;
use splat_io::dataset::{Points, View};
use splat_render::project::CameraParams;
use splat_render::sh::active_coeffs;
use splat_render::{Backend, Buffers, RenderSettings};

use crate::adam::ShGradSource;
use crate::config::{Strategy, TrainConfig};
use crate::densify::{self, DensifyReport};
use crate::init::gaussians_from_points;
use crate::loss::{loss_grad_and_psnr, LossValue, SsimScratch};
use crate::mcmc::{self, RefineReport};
use crate::parallel::{Collective, Local};
use crate::resident::{BlockConstants, PlannedStep, ResidentEngine, StepOutcome};
use crate::schedule::exp_decay;
use crate::state::{group_params, TrainState, GROUPS, SH_DC, SH_REST};

/// What one step did.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepStats {
    pub step: u64,
    pub loss: f64,
    pub l1: f64,
    pub ssim: f64,
    /// Of the training view just rendered.
    pub psnr: f64,
    pub num_gaussians: usize,
    pub densified: Option<DensifyReport>,
    /// What an MCMC refine step did.
    pub refined: Option<RefineReport>,
    pub opacity_reset: bool,
    /// The loss or a gradient was not finite: nothing was applied.
    pub skipped: bool,
    /// Wall time of each stage of this step.
    pub times: StageTimes,
}

/// Wall time per stage of one training step, in the order they run.
#[derive(Clone, Copy, Debug, Default)]
pub struct StageTimes {
    pub project: Duration,
    pub bin: Duration,
    pub rasterize_forward: Duration,
    pub loss: Duration,
    pub rasterize_backward: Duration,
    pub project_backward: Duration,
    pub densify: Duration,
    pub adam: Duration,
}

impl StageTimes {
    pub const NAMES: [&'static str; 8] = [
        "project",
        "bin",
        "rasterize_forward",
        "loss",
        "rasterize_backward",
        "project_backward",
        "densify",
        "adam",
    ];

    pub fn as_array(&self) -> [Duration; 8] {
        [
            self.project,
            self.bin,
            self.rasterize_forward,
            self.loss,
            self.rasterize_backward,
            self.project_backward,
            self.densify,
            self.adam,
        ]
    }

    fn add_render(&mut self, timings: &[(&'static str, Duration)]) {
        for &(name, d) in timings {
            match name {
                "project" => self.project += d,
                "bin" => self.bin += d,
                "rasterize_forward" => self.rasterize_forward += d,
                "rasterize_backward" => self.rasterize_backward += d,
                "project_backward" => self.project_backward += d,
                _ => {}
            }
        }
    }
}

/// Consecutive non-finite steps after which training stops.
pub const MAX_CONSECUTIVE_SKIPS: u32 = 20;

/// Training cannot go on.
#[derive(Debug, thiserror::Error)]
#[error("training diverged: {consecutive} consecutive steps up to step {step} had a non-finite loss or gradient ({total} skipped in all)")]
pub struct Diverged {
    pub step: u64,
    pub consecutive: u32,
    pub total: u64,
}

fn all_finite(g: &splat_core::Gaussians<f32>) -> bool {
    let sum = |v: &[f32]| v.iter().fold(0.0f32, |a, &b| a + b * 0.0);
    // x * 0 is NaN exactly when x is NaN or infinite, so one pass per group finds any non-finite value.
    [
        sum(g.means.as_flattened()),
        sum(g.log_scales.as_flattened()),
        sum(g.rotations.as_flattened()),
        sum(&g.opacity_logits),
        sum(g.sh_dc.as_flattened()),
        sum(&g.sh_rest),
    ]
    .iter()
    .all(|v| v.is_finite())
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
    /// Densification statistics of a step: per Gaussian, the summed screen-space gradient norm,
    /// the number of views that saw it and its largest radius.
    step_norms: Vec<f32>,
    step_counts: Vec<f32>,
    step_radii: Vec<f32>,
    /// Runs blocks of steps on a device holding the state (see [`crate::resident`]).
    resident: Option<Box<dyn ResidentEngine + 'a>>,
    /// The device holds `state` (false until the first block loads it).
    device_current: bool,
    /// `state` is the device's (false after a block ran; [`Trainer::sync`] copies it back).
    host_current: bool,
    /// Steps a block ran that `step` has not returned yet, with the SH degree after each.
    pending: VecDeque<(StepStats, usize)>,
    /// Blocks end at multiples of this (checkpoints read the state there); 0: no such bound.
    sync_every: u64,
    /// A block hit the consecutive-skip limit: returned once its earlier steps have been.
    diverged: Option<Diverged>,
    /// Steps the next block may run (from the last block's time per step, at most [`BLOCK_STEPS`]).
    block_steps: u64,
    /// The raw log-scales and opacities while a view renders the 3D-filtered ones.
    mip_saved: crate::mip::Saved,
}

/// Steps between recomputations of the 3D filter after densification stops (Mip-Splatting's).
pub const MIP_FILTER_INTERVAL: u64 = 100;

/// Longest block of resident steps the trainer plans.
pub const BLOCK_STEPS: u64 = 100;

/// Wall time a resident block aims at: long enough to amortize the host's part, short enough for
/// progress to show on a slow device (blocks never change results: see `crates/gpu/tests`).
pub const BLOCK_SECONDS: f64 = 2.0;

impl<'a> Trainer<'a> {
    /// Starts from the initial points.
    pub fn new(
        cfg: TrainConfig,
        views: &'a [View],
        points: &Points,
        background: [f32; 3],
        extent: f64,
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
        let state = TrainState::new(gaussians);
        Self::resume(cfg, views, background, extent, backend, state)
    }

    /// Continues from a saved state. `cfg` is the user's; with a batch of B > 1 its schedule is
    /// converted to optimizer steps ([`TrainConfig::per_step`]).
    pub fn resume(
        cfg: TrainConfig,
        views: &'a [View],
        background: [f32; 3],
        extent: f64,
        backend: Box<dyn Backend + Send + 'a>,
        state: TrainState,
    ) -> Self {
        assert!(!views.is_empty(), "no training views");
        let mut state = state;
        // Checkpoints do not carry the flag: it is the run's (config.json).
        state.gaussians.antialiased = cfg.antialiased;
        Trainer {
            cfg: cfg.per_step(),
            views,
            background,
            extent,
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
            step_norms: Vec::new(),
            step_counts: Vec::new(),
            step_radii: Vec::new(),
            resident: None,
            device_current: false,
            host_current: true,
            pending: VecDeque::new(),
            sync_every: 0,
            diverged: None,
            block_steps: 10,
            mip_saved: Default::default(),
        }
        .with_filter_sizes()
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

    /// Runs every step in blocks on `engine`, which holds the state on its device (densification
    /// included, see [`crate::resident`]). Only for one view per step on one rank, within the Gaussians
    /// the device holds; otherwise, or when the engine cannot run this dataset, returns the reason and
    /// leaves the trainer as it was. Ok carries a note to print when the device's limit became the
    /// run's Gaussian budget.
    pub fn with_resident(
        &mut self,
        engine: Box<dyn ResidentEngine + 'a>,
    ) -> Result<Option<String>, String> {
        if self.cfg.batch > 1 || self.collective.size() > 1 {
            return Err("resident blocks run one view per step on one rank".into());
        }
        let host_only: Vec<&str> = [
            (self.cfg.strategy == Strategy::Mcmc, "--strategy mcmc"),
            (self.cfg.absgrad, "--absgrad"),
            (self.cfg.mip_filter, "--mip-filter"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| *name)
        .collect();
        if !host_only.is_empty() {
            return Err(format!("{} run on the host", host_only.join(", ")));
        }
        if let Some(why) = engine.unsupported() {
            return Err(why);
        }
        let note = self.fit_device_budget(engine.max_gaussians())?;
        self.resident = Some(engine);
        self.device_current = false;
        Ok(note)
    }

    /// Keeps the run within the most Gaussians the device holds (`max`, from its binding limit): an
    /// error when the state or the run's budget is over it, and without a budget, that budget (with a
    /// note saying so), so that densification cannot outgrow the device in the middle of the run.
    fn fit_device_budget(&mut self, max: Option<usize>) -> Result<Option<String>, String> {
        let Some(max) = max else { return Ok(None) };
        let n = self.state.len();
        if n > max {
            return Err(format!(
                "{n} Gaussians are more than the {max} this device's bindings hold"
            ));
        }
        match self.cfg.gaussian_cap() {
            Some(cap) if cap > max => Err(format!(
                "--max-gaussians {cap} is more than the {max} Gaussians this device's bindings \
                 hold; --max-gaussians {max} or fewer keeps the run on the device"
            )),
            Some(_) => Ok(None),
            None => {
                self.cfg.max_gaussians = Some(max);
                Ok(Some(format!(
                    "densification stops at {max} Gaussians, the most this device's bindings hold \
                     (--max-gaussians sets a lower budget)"
                )))
            }
        }
    }

    /// Host seconds the resident engine spent recording device work.
    pub fn resident_recording_seconds(&self) -> f64 {
        self.resident
            .as_deref()
            .map_or(0.0, |e| e.recording_seconds())
    }

    /// The resident engine's counters ([`crate::resident::EngineCounters`]), when it counts.
    pub fn resident_counters(&self) -> Option<crate::resident::EngineCounters> {
        self.resident.as_deref().and_then(|e| e.counters())
    }

    /// The resident engine's device time per stage, when it times stages.
    pub fn resident_stage_timing(&self) -> Option<crate::resident::StageTiming> {
        self.resident.as_deref().and_then(|e| e.stage_timing())
    }

    /// The resident engine's device peaks, measured now, when it can.
    pub fn resident_measure_peak(&self) -> Option<Result<crate::resident::DevicePeak, String>> {
        self.resident.as_deref().and_then(|e| e.measure_peak())
    }

    /// The resident engine's device memory, when it knows it.
    pub fn resident_memory(&self) -> Option<crate::resident::EngineMemory> {
        self.resident.as_deref().and_then(|e| e.memory())
    }

    /// The resident engine's name, when blocks run on one.
    pub fn resident_name(&self) -> Option<&str> {
        self.resident.as_deref().map(|e| e.name())
    }

    /// No resident step is waiting to be returned (the device is at the state of `state.step`).
    pub fn block_done(&self) -> bool {
        self.pending.is_empty()
    }

    /// Blocks end at multiples of `every` steps (where the caller reads the state, e.g. checkpoints).
    pub fn set_sync_every(&mut self, every: u64) {
        self.sync_every = every;
    }

    /// Makes `state` current: after resident blocks, copies the device's state back (parameters,
    /// moments, statistics). Only between blocks ([`Trainer::block_done`]): the device is at the end of
    /// its block. A device failure here is fatal, as in the backends. With an engine, `state` is read
    /// only: changes to it do not reach the device.
    pub fn sync(&mut self) {
        if self.host_current {
            return;
        }
        assert!(
            self.pending.is_empty(),
            "sync at step {} inside a block (set_sync_every bounds blocks)",
            self.state.step
        );
        let engine = self
            .resident
            .as_mut()
            .expect("only blocks leave the host behind");
        if let Err(e) = engine.store(&mut self.state) {
            panic!("reading the state back from {} failed: {e}", engine.name());
        }
        self.host_current = true;
    }

    /// The SH degree iteration `it` renders with, given the degree before it.
    fn degree_at(&self, it: u64, before: usize) -> usize {
        let cfg = &self.cfg;
        if cfg.sh_degree_interval > 0
            && it.is_multiple_of(cfg.sh_degree_interval)
            && before < cfg.sh_degree
        {
            before + 1
        } else {
            before
        }
    }

    /// Plans and runs the block starting at the next iteration, queueing its steps in `pending`: up to
    /// [`BLOCK_STEPS`] steps (fewer while a step takes long: about [`BLOCK_SECONDS`] a block), ending
    /// after a densification or at a multiple of `sync_every`. Each step is
    /// planned as [`Trainer::step`] would run it on the host.
    fn run_resident_block(&mut self) {
        let cfg = &self.cfg;
        let first = self.state.step + 1;
        let white = self.background == [1.0; 3];
        let mut steps = Vec::new();
        let mut degree = self.state.active_sh_degree;
        let mut degrees = Vec::new();
        let mut it = first;
        while it <= cfg.iterations && it - first < self.block_steps {
            degree = self.degree_at(it, degree);
            degrees.push(degree);
            let last = it >= cfg.iterations;
            let stats = it < cfg.densify_until && !last;
            let densify = stats
                && it > cfg.densify_from
                && cfg.densify_interval > 0
                && it.is_multiple_of(cfg.densify_interval);
            let reset_opacity = stats
                && ((cfg.opacity_reset_interval > 0
                    && it.is_multiple_of(cfg.opacity_reset_interval))
                    || (white && it == cfg.densify_from));
            steps.push(PlannedStep {
                step: it,
                draw: it - 1,
                sh_degree: degree,
                stats,
                position_lr: (!last && !densify).then(|| self.position_lr(it)),
                densify,
                reset_opacity,
            });
            if densify || (self.sync_every > 0 && it.is_multiple_of(self.sync_every)) {
                break;
            }
            it += 1;
        }
        let constants = BlockConstants {
            config: self.cfg.clone(),
            extent: self.extent,
            background: self.background,
        };
        let engine = self.resident.as_mut().expect("resident engine");
        if !self.device_current {
            if let Err(e) = engine.load(&self.state) {
                panic!("loading the state onto {} failed: {e}", engine.name());
            }
            self.device_current = true;
        }
        let mut outcomes: Vec<StepOutcome> = Vec::with_capacity(steps.len());
        let t = Instant::now();
        if let Err(e) = engine.run_block(&constants, &steps, &mut outcomes) {
            panic!("a block of steps on {} failed: {e}", engine.name());
        }
        let per_step = t.elapsed().as_secs_f64() / steps.len() as f64;
        self.block_steps = ((BLOCK_SECONDS / per_step.max(1e-9)) as u64).clamp(1, BLOCK_STEPS);
        self.host_current = false;
        for (o, &degree) in outcomes.iter().zip(&degrees) {
            // One submission runs many steps: there are no per-stage times (`times` stays zero).
            let stats = StepStats {
                step: o.step,
                loss: o.loss,
                l1: o.l1,
                ssim: o.ssim,
                psnr: o.psnr,
                num_gaussians: o.num_gaussians,
                skipped: o.skipped,
                densified: o.densified,
                opacity_reset: o.opacity_reset,
                ..Default::default()
            };
            if o.skipped {
                self.skipped_steps += 1;
                self.consecutive_skips += 1;
                if self.consecutive_skips >= MAX_CONSECUTIVE_SKIPS {
                    // Later steps of the block ran but are not reported: the run stops here.
                    self.diverged = Some(Diverged {
                        step: o.step,
                        consecutive: self.consecutive_skips,
                        total: self.skipped_steps,
                    });
                    break;
                }
            } else {
                self.consecutive_skips = 0;
            }
            self.pending.push_back((stats, degree));
        }
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

    /// Renders view `vi`, computes its loss and backpropagates it into `self.buffers`. Without
    /// `sh_grads` the SH gradients are left for Adam to form
    /// ([`crate::adam::AdamState::update_formed`]).
    fn view_pass(&mut self, vi: usize, sh_grads: bool, times: &mut StageTimes) -> (LossValue, f64) {
        let view = &self.views[vi];
        let cam = &view.camera;
        view.image.to_f32(&mut self.target);
        let mut settings = RenderSettings::new(self.state.active_sh_degree);
        settings.background = self.background;
        settings.sh_grads = sh_grads;
        settings.absgrad = self.cfg.absgrad && self.cfg.strategy == Strategy::Default;
        let filtered = !self.state.filter_3d.is_empty();
        if filtered {
            // Rendered and differentiated with the effective values; restored below.
            let st = &mut self.state;
            crate::mip::apply(&mut st.gaussians, &st.filter_3d, &mut self.mip_saved);
        }
        let g = &self.state.gaussians;
        splat_render::render(self.backend.as_mut(), g, cam, &settings, &mut self.buffers);
        times.add_render(&self.buffers.timings);
        let (w, h) = (cam.width as usize, cam.height as usize);
        let t_loss = Instant::now();
        let (lv, train_psnr) = loss_grad_and_psnr(
            &self.buffers.raster.image,
            &self.target,
            w,
            h,
            self.cfg.lambda_dssim,
            &mut self.ssim,
            &mut self.grad_image,
        );
        times.loss += t_loss.elapsed();
        splat_render::backward(
            self.backend.as_mut(),
            g,
            cam,
            &settings,
            &self.grad_image,
            &mut self.buffers,
        );
        times.add_render(&self.buffers.timings[self.buffers.timings.len().min(3)..]);
        if filtered {
            let st = &mut self.state;
            crate::mip::restore(&mut st.gaussians, &self.mip_saved);
            let grads = &mut self.buffers.grads;
            crate::mip::chain_gradients(
                &st.gaussians.log_scales,
                &st.gaussians.opacity_logits,
                &st.filter_3d,
                &mut grads.log_scales,
                &mut grads.opacity_logits,
            );
        }
        (lv, train_psnr)
    }

    /// Runs one iteration: `batch` views (this rank's share of them), gradients summed over views and
    /// ranks, one update. A step whose loss or gradients are not finite is skipped (counted in
    /// `skipped_steps`); too many in a row is an error.
    pub fn step(&mut self) -> Result<StepStats, Diverged> {
        if self.resident.is_some() {
            if self.pending.is_empty() {
                if let Some(e) = self.diverged.take() {
                    self.state.step = e.step;
                    return Err(e);
                }
                self.run_resident_block();
            }
            if let Some((stats, degree)) = self.pending.pop_front() {
                self.state.step = stats.step;
                self.state.active_sh_degree = degree;
                return Ok(stats);
            }
            if let Some(e) = self.diverged.take() {
                self.state.step = e.step;
                return Err(e);
            }
            unreachable!("a block runs at least one step");
        }
        let cfg = self.cfg.clone();
        let it = self.state.step + 1;
        if cfg.sh_degree_interval > 0
            && it.is_multiple_of(cfg.sh_degree_interval)
            && self.state.active_sh_degree < cfg.sh_degree
        {
            self.state.active_sh_degree += 1;
        }
        let batch = cfg.batch.max(1);
        let (rank, ranks) = (self.collective.rank(), self.collective.size());
        let single = batch == 1 && ranks == 1;
        // The original saves its output at iteration N before that iteration's densification, so the
        // last iteration neither densifies nor resets opacities (a reset there would leave every
        // Gaussian at 1% opacity in the result).
        let last = it >= cfg.iterations;
        let mcmc = cfg.strategy == Strategy::Mcmc;
        let want_stats = !mcmc && it < cfg.densify_until && !last;
        let n = self.state.len();
        if want_stats {
            for v in [
                &mut self.step_norms,
                &mut self.step_counts,
                &mut self.step_radii,
            ] {
                v.clear();
                v.resize(n, 0.0);
            }
        }
        let mut times = StageTimes::default();
        // Loss, L1, SSIM and PSNR summed over the views of the step.
        let mut sums = [0.0f64; 4];
        let mut local_views = 0;
        for j in 0..batch {
            let vi = self.view_of(it, j);
            if j % ranks != rank {
                continue;
            }
            // One view per step: Adam forms the SH gradients (saves 192 bytes per Gaussian).
            let (lv, p) = self.view_pass(vi, !single, &mut times);
            for (s, v) in sums.iter_mut().zip([lv.loss, lv.l1, lv.ssim, p]) {
                *s += v;
            }
            let t = Instant::now();
            if want_stats {
                let cam = &self.views[vi].camera;
                densify::view_stats(
                    &self.buffers.projected,
                    &self.buffers.projected_grads,
                    cfg.absgrad,
                    cam.width,
                    cam.height,
                    &mut self.step_norms,
                    &mut self.step_counts,
                    &mut self.step_radii,
                );
            }
            if !single {
                if local_views == 0 {
                    copy_grads(&mut self.batch_grads, &self.buffers.grads);
                } else {
                    add_grads(&mut self.batch_grads, &self.buffers.grads);
                }
            }
            times.densify += t.elapsed();
            local_views += 1;
        }
        if !single {
            let t = Instant::now();
            if local_views == 0 {
                // More ranks than views: this rank contributes zeros.
                copy_grads(&mut self.batch_grads, &self.buffers.grads);
                zero_grads(&mut self.batch_grads);
            }
            for gi in 0..GROUPS.len() {
                self.collective
                    .sum_f32(group_params(&mut self.batch_grads, gi));
            }
            if want_stats {
                self.collective.sum_f32(&mut self.step_norms);
                self.collective.sum_f32(&mut self.step_counts);
                self.collective.max_f32(&mut self.step_radii);
            }
            self.collective.sum_f64(&mut sums);
            times.densify += t.elapsed();
        }
        let views = batch as f64;
        let lv = LossValue {
            loss: sums[0] / views,
            l1: sums[1] / views,
            ssim: sums[2] / views,
        };
        let train_psnr = sums[3] / views;
        let grads_ok = if single {
            // The SH gradients Adam will form are basis x colour gradient with |basis| < 1.2.
            let colors = self.buffers.projected_grads.grad_colors.as_flattened();
            all_finite(&self.buffers.grads) && colors.iter().all(|c| c.is_finite())
        } else {
            all_finite(&self.batch_grads)
        };

        let mut stats = StepStats {
            step: it,
            loss: lv.loss,
            l1: lv.l1,
            ssim: lv.ssim,
            psnr: train_psnr,
            ..Default::default()
        };
        stats.times = times;
        // Gradients computed, nothing applied yet.
        crate::testhook::pause_point("step", it);
        let t_densify = Instant::now();
        if !(lv.loss.is_finite() && grads_ok) {
            self.skipped_steps += 1;
            self.consecutive_skips += 1;
            self.state.step = it;
            if self.consecutive_skips >= MAX_CONSECUTIVE_SKIPS {
                return Err(Diverged {
                    step: it,
                    consecutive: self.consecutive_skips,
                    total: self.skipped_steps,
                });
            }
            stats.skipped = true;
            stats.num_gaussians = self.state.len();
            return Ok(stats);
        }
        self.consecutive_skips = 0;
        if mcmc && !last {
            let grads = if single {
                &mut self.buffers.grads
            } else {
                &mut self.batch_grads
            };
            stats.loss += mcmc::add_regularizer(
                &self.state.gaussians,
                cfg.mcmc.opacity_reg,
                cfg.mcmc.scale_reg,
                batch as f64,
                grads,
            );
        }
        let mut replaced_all = false;
        if want_stats {
            densify::apply_stats(
                &mut self.state,
                &self.step_norms,
                &self.step_counts,
                &self.step_radii,
            );
            if it > cfg.densify_from
                && cfg.densify_interval > 0
                && it.is_multiple_of(cfg.densify_interval)
            {
                stats.densified = Some(densify::densify_and_prune(
                    &mut self.state,
                    &cfg,
                    self.extent,
                    it,
                ));
                replaced_all = true;
                if cfg.mip_filter {
                    // Before the opacity reset, which reads the sizes.
                    self.update_filter();
                }
            }
            let white = self.background == [1.0; 3];
            if (cfg.opacity_reset_interval > 0 && it.is_multiple_of(cfg.opacity_reset_interval))
                || (white && it == cfg.densify_from)
            {
                densify::reset_opacity(&mut self.state);
                stats.opacity_reset = true;
            }
        }
        stats.times.densify += t_densify.elapsed();
        let t_adam = Instant::now();
        if it < cfg.iterations && !replaced_all {
            let lrs = [
                self.position_lr(it),
                cfg.sh_dc_lr,
                cfg.sh_rest_lr,
                cfg.opacity_lr,
                cfg.scale_lr,
                cfg.rotation_lr,
            ];
            let betas = cfg.adam_betas();
            if single {
                // The SH groups first: their gradients need the means the step rendered with.
                let camera = &self.views[self.view_of(it, 0)].camera;
                let g = &mut self.state.gaussians;
                let rest_len = g.sh_rest_len();
                let src = ShGradSource {
                    means: &g.means,
                    center: CameraParams::<f32>::new(camera).center,
                    coeffs: active_coeffs(self.state.active_sh_degree, g.sh_degree),
                    radii: &self.buffers.projected.radii,
                    clamped: &self.buffers.projected.color_clamped,
                    grad_colors: &self.buffers.projected_grads.grad_colors,
                };
                let (dc, rest) = (g.sh_dc.as_flattened_mut(), &mut g.sh_rest);
                let adam = &mut self.state.adam;
                adam[SH_DC].update_formed(dc, 3, lrs[SH_DC], betas, &|i, o| src.dc(i, o));
                adam[SH_REST]
                    .update_formed(rest, rest_len, lrs[SH_REST], betas, &|i, o| src.rest(i, o));
            }
            let grads = if single {
                &mut self.buffers.grads
            } else {
                &mut self.batch_grads
            };
            for (gi, &lr) in lrs.iter().enumerate().take(GROUPS.len()) {
                if (gi == 3 && stats.opacity_reset) || (single && (gi == SH_DC || gi == SH_REST)) {
                    continue;
                }
                let grad = group_params(grads, gi);
                let params = group_params(&mut self.state.gaussians, gi);
                self.state.adam[gi].update_with_betas(params, grad, lr, betas);
            }
        }
        stats.times.adam = t_adam.elapsed();
        if mcmc && !last {
            let t = Instant::now();
            if it > cfg.densify_from
                && it < cfg.densify_until
                && cfg.densify_interval > 0
                && it.is_multiple_of(cfg.densify_interval)
            {
                stats.refined = Some(mcmc::refine(&mut self.state, &cfg.mcmc, cfg.seed, it));
            }
            // The learning rate of the next step, as gsplat reads it after its scheduler step.
            let lr = self.position_lr(it + 1);
            mcmc::inject_noise(&mut self.state.gaussians, &cfg.mcmc, lr, cfg.seed, it);
            stats.times.densify += t.elapsed();
        }
        // Mip-Splatting: after every refine, and every 100 steps once densification has stopped
        // (not in the last 100).
        let periodic = it >= cfg.densify_until
            && it.is_multiple_of(MIP_FILTER_INTERVAL)
            && it + MIP_FILTER_INTERVAL < cfg.iterations;
        if cfg.mip_filter && (stats.refined.is_some() || periodic) {
            self.update_filter();
        }
        self.state.step = it;
        stats.num_gaussians = self.state.len();
        Ok(stats)
    }
}

/// `dst = src`, field by field so the buffers' capacity is reused (a derived `clone_from` would
/// allocate a whole new value).
fn copy_grads(dst: &mut Gaussians<f32>, src: &Gaussians<f32>) {
    dst.sh_degree = src.sh_degree;
    dst.means.clone_from(&src.means);
    dst.log_scales.clone_from(&src.log_scales);
    dst.rotations.clone_from(&src.rotations);
    dst.opacity_logits.clone_from(&src.opacity_logits);
    dst.sh_dc.clone_from(&src.sh_dc);
    dst.sh_rest.clone_from(&src.sh_rest);
}

/// `dst += src`, group by group (same sizes).
fn add_grads(dst: &mut Gaussians<f32>, src: &Gaussians<f32>) {
    let add = |d: &mut [f32], s: &[f32]| {
        for (a, b) in d.iter_mut().zip(s) {
            *a += *b;
        }
    };
    add(dst.means.as_flattened_mut(), src.means.as_flattened());
    add(
        dst.log_scales.as_flattened_mut(),
        src.log_scales.as_flattened(),
    );
    add(
        dst.rotations.as_flattened_mut(),
        src.rotations.as_flattened(),
    );
    add(&mut dst.opacity_logits, &src.opacity_logits);
    add(dst.sh_dc.as_flattened_mut(), src.sh_dc.as_flattened());
    add(&mut dst.sh_rest, &src.sh_rest);
}

fn zero_grads(g: &mut Gaussians<f32>) {
    g.means.fill([0.0; 3]);
    g.log_scales.fill([0.0; 3]);
    g.rotations.fill([0.0; 4]);
    g.opacity_logits.fill(0.0);
    g.sh_dc.fill([0.0; 3]);
    g.sh_rest.fill(0.0);
}
