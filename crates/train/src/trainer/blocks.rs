//! Training steps in blocks on a [`ResidentEngine`], the device that holds the state
//! ([`crate::resident`]). A block's steps are planned as the host step would run them
//! ([`super::plan`]); the engine runs them all in one call and [`Trainer::step`] hands them out one at
//! a time. A block ends after a densification (the Gaussian count changes), after an MCMC refine step,
//! before a change of coarse-to-fine level, at a multiple of `sync_every` (where the caller reads the
//! state) or after about [`BLOCK_SECONDS`].
//!
//! 3DGS-MCMC runs on the device step by step (its regularizers in the update, its position noise after
//! it); its relocation and growth every `densify_interval` steps run on the host between blocks
//! ([`crate::mcmc::refine`], then that step's noise), and the next block loads the edited state. The
//! coarse-to-fine levels reach the engine as its views ([`ResidentEngine::set_views`]) before the
//! first block of a level.

use std::collections::VecDeque;
use std::time::Instant;

use super::outcome::{Diverged, StepStats, MAX_CONSECUTIVE_SKIPS};
use super::plan::{degree_at, StepPlan};
use super::Trainer;
use crate::resident::{
    BlockConstants, DevicePeak, EngineCounters, EngineMemory, PlannedStep, ResidentEngine,
    StageTiming, StepOutcome,
};

/// Longest block of resident steps the trainer plans.
pub const BLOCK_STEPS: u64 = 100;

/// Wall time a resident block aims at: long enough to amortize the host's part, short enough for
/// progress to show on a slow device (blocks never change results: see `crates/gpu/tests`).
pub const BLOCK_SECONDS: f64 = 2.0;

/// The trainer's side of resident blocks.
pub(super) struct Blocks<'a> {
    engine: Box<dyn ResidentEngine + 'a>,
    /// The device holds `state` (false until the first block loads it).
    device_current: bool,
    /// Steps a block ran that `step` has not returned yet, with the SH degree after each.
    pending: VecDeque<(StepStats, usize)>,
    /// A block hit the consecutive-skip limit: returned once its earlier steps have been.
    diverged: Option<Diverged>,
    /// Steps the next block may run (from the last block's time per step, at most [`BLOCK_STEPS`]).
    block_steps: u64,
    /// The coarse-to-fine factor of the engine's views (it starts with the full-size ones).
    downscale: u32,
}

impl<'a> Trainer<'a> {
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
        let masked = self.views.iter().any(|v| v.mask.is_some());
        let appearance = self.cfg.appearance != crate::appearance::AppearanceKind::None;
        let host_only: Vec<&str> = [
            (self.cfg.absgrad, "--absgrad"),
            (self.cfg.mip_filter, "--mip-filter"),
            (appearance, "--appearance"),
            (self.cfg.pose_opt, "--pose-opt"),
            (masked, "masks"),
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
        self.blocks = Some(Blocks {
            engine,
            device_current: false,
            pending: VecDeque::new(),
            diverged: None,
            block_steps: 10,
            downscale: 1,
        });
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
            Some(cap) if cap > max => {
                let flag = match self.cfg.strategy {
                    crate::config::Strategy::Mcmc => "--cap-max",
                    crate::config::Strategy::Default => "--max-gaussians",
                };
                Err(format!(
                    "{flag} {cap} is more than the {max} Gaussians this device's bindings hold; \
                     {flag} {max} or fewer keeps the run on the device"
                ))
            }
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

    fn engine(&self) -> Option<&(dyn ResidentEngine + 'a)> {
        self.blocks.as_ref().map(|b| &*b.engine)
    }

    /// Host seconds the resident engine spent recording device work.
    pub fn resident_recording_seconds(&self) -> f64 {
        self.engine().map_or(0.0, |e| e.recording_seconds())
    }

    /// The resident engine's counters ([`crate::resident::EngineCounters`]), when it counts.
    pub fn resident_counters(&self) -> Option<EngineCounters> {
        self.engine().and_then(|e| e.counters())
    }

    /// The resident engine's device time per stage, when it times stages.
    pub fn resident_stage_timing(&self) -> Option<StageTiming> {
        self.engine().and_then(|e| e.stage_timing())
    }

    /// The resident engine's device peaks, measured now, when it can.
    pub fn resident_measure_peak(&self) -> Option<Result<DevicePeak, String>> {
        self.engine().and_then(|e| e.measure_peak())
    }

    /// The resident engine's device memory, when it knows it.
    pub fn resident_memory(&self) -> Option<EngineMemory> {
        self.engine().and_then(|e| e.memory())
    }

    /// The resident engine's name, when blocks run on one.
    pub fn resident_name(&self) -> Option<&str> {
        self.engine().map(|e| e.name())
    }

    /// No resident step is waiting to be returned (the device is at the state of `state.step`).
    pub fn block_done(&self) -> bool {
        self.blocks.as_ref().is_none_or(|b| b.pending.is_empty())
    }

    /// Blocks end at multiples of `every` steps (where the caller reads the state, e.g. checkpoints).
    pub fn set_sync_every(&mut self, every: u64) {
        self.sync_every = every;
    }

    /// Blocks also end at each of these steps (ascending; e.g. the points of a quality curve).
    pub fn set_sync_steps(&mut self, steps: Vec<u64>) {
        self.sync_steps = steps;
    }

    /// Whether a block must end at step `it` for the caller to read the state there.
    fn syncs_at(&self, it: u64) -> bool {
        (self.sync_every > 0 && it.is_multiple_of(self.sync_every))
            || self.sync_steps.binary_search(&it).is_ok()
    }

    /// Makes `state` current: after resident blocks, copies the device's state back (parameters,
    /// moments, statistics). Only between blocks ([`Trainer::block_done`]): the device is at the end of
    /// its block. A device failure here is fatal, as in the backends. With an engine, `state` is read
    /// only: changes to it do not reach the device.
    pub fn sync(&mut self) {
        if self.host_current {
            return;
        }
        let step = self.state.step;
        let blocks = self
            .blocks
            .as_mut()
            .expect("only blocks leave the host behind");
        assert!(
            blocks.pending.is_empty(),
            "sync at step {step} inside a block (set_sync_every bounds blocks)"
        );
        if let Err(e) = blocks.engine.store(&mut self.state) {
            panic!(
                "reading the state back from {} failed: {e}",
                blocks.engine.name()
            );
        }
        self.host_current = true;
    }

    /// The next step of the current block, running a new block when the last one is used up.
    pub(super) fn resident_step(&mut self) -> Result<StepStats, Diverged> {
        if self.blocks.as_ref().is_some_and(|b| b.pending.is_empty()) {
            if let Some(e) = self.take_divergence() {
                return Err(e);
            }
            self.run_resident_block();
        }
        let blocks = self.blocks.as_mut().expect("resident");
        if let Some((stats, degree)) = blocks.pending.pop_front() {
            self.state.step = stats.step;
            self.state.active_sh_degree = degree;
            return Ok(stats);
        }
        match self.take_divergence() {
            Some(e) => Err(e),
            None => unreachable!("a block runs at least one step"),
        }
    }

    /// The divergence a block found, once its earlier steps have been returned.
    fn take_divergence(&mut self) -> Option<Diverged> {
        let e = self.blocks.as_mut()?.diverged.take()?;
        self.state.step = e.step;
        Some(e)
    }

    /// Plans and runs the block starting at the next iteration, queueing its steps: up to
    /// [`BLOCK_STEPS`] steps (fewer while a step takes long: about [`BLOCK_SECONDS`] a block), ending
    /// after a densification or at a multiple of `sync_every`.
    fn run_resident_block(&mut self) {
        let (steps, degrees) = self.plan_block();
        let constants = BlockConstants {
            config: self.cfg.clone(),
            extent: self.extent,
            background: self.background,
        };
        self.engine_views_for(steps[0].step);
        let blocks = self.blocks.as_mut().expect("resident engine");
        let engine = &mut blocks.engine;
        if !blocks.device_current {
            if let Err(e) = engine.load(&self.state) {
                panic!("loading the state onto {} failed: {e}", engine.name());
            }
            blocks.device_current = true;
        }
        let mut outcomes: Vec<StepOutcome> = Vec::with_capacity(steps.len());
        let t = Instant::now();
        if let Err(e) = engine.run_block(&constants, &steps, &mut outcomes) {
            panic!("a block of steps on {} failed: {e}", engine.name());
        }
        let per_step = t.elapsed().as_secs_f64() / steps.len() as f64;
        blocks.block_steps = ((BLOCK_SECONDS / per_step.max(1e-9)) as u64).clamp(1, BLOCK_STEPS);
        self.host_current = false;
        self.queue_outcomes(&outcomes, &degrees);
        self.refine_after_block(&steps);
    }

    /// Gives the engine the views of step `it`'s coarse-to-fine level when they are not its own.
    fn engine_views_for(&mut self, it: u64) {
        let factor = self.cfg.downscale_at(it).max(1);
        let blocks = self.blocks.as_mut().expect("resident engine");
        if blocks.downscale == factor {
            return;
        }
        self.scaled.set(self.views, factor);
        let engine = &mut blocks.engine;
        if let Err(e) = engine.set_views(self.scaled.of(self.views)) {
            panic!("{} cannot train at 1/{factor} size: {e}", engine.name());
        }
        blocks.downscale = factor;
    }

    /// MCMC: when the block's last step refines (and was not skipped), relocates and grows on the host,
    /// then adds that step's position noise, as the host step does; the next block loads the result.
    fn refine_after_block(&mut self, steps: &[PlannedStep]) {
        let last = steps.last().expect("a block runs at least one step");
        let plan = StepPlan::new(&self.cfg, last.step, self.background == [1.0; 3]);
        let blocks = self.blocks.as_mut().expect("resident engine");
        let ran = (blocks.pending.back()).is_some_and(|(s, _)| s.step == last.step && !s.skipped);
        if !plan.refine || !ran || blocks.diverged.is_some() {
            return;
        }
        if let Err(e) = blocks.engine.store(&mut self.state) {
            panic!(
                "reading the state back from {} failed: {e}",
                blocks.engine.name()
            );
        }
        let (cfg, seed) = (&self.cfg.mcmc, self.cfg.seed);
        let report = crate::mcmc::refine(&mut self.state, cfg, seed, last.step);
        let lr = self.position_lr(last.step + 1);
        crate::mcmc::inject_noise(&mut self.state.gaussians, cfg, lr, seed, last.step);
        let blocks = self.blocks.as_mut().expect("resident engine");
        blocks.device_current = false;
        self.host_current = true;
        if let Some((stats, _)) = blocks.pending.back_mut() {
            stats.refined = Some(report);
            stats.num_gaussians = self.state.len();
        }
    }

    /// The steps of the next block, each as [`Trainer::step`] would run it on the host, with the SH
    /// degree after each.
    fn plan_block(&self) -> (Vec<PlannedStep>, Vec<usize>) {
        let cfg = &self.cfg;
        let first = self.state.step + 1;
        let block_steps = self.blocks.as_ref().map_or(1, |b| b.block_steps);
        let white = self.background == [1.0; 3];
        let (mut steps, mut degrees) = (Vec::new(), Vec::new());
        let mut degree = self.state.active_sh_degree;
        let mut it = first;
        while it <= cfg.iterations && it - first < block_steps {
            degree = degree_at(cfg, it, degree);
            degrees.push(degree);
            let plan = StepPlan::new(cfg, it, white);
            steps.push(PlannedStep {
                step: it,
                draw: it - 1,
                sh_degree: degree,
                stats: plan.stats,
                position_lr: plan.updates().then(|| self.position_lr(it)),
                densify: plan.densify,
                reset_opacity: plan.reset_opacity,
                regularize: plan.mcmc,
                noise_lr: (plan.mcmc && !plan.refine).then(|| self.position_lr(it + 1)),
            });
            let level_changes = cfg.downscale_at(it + 1) != cfg.downscale_at(it);
            if plan.densify || plan.refine || level_changes || self.syncs_at(it) {
                break;
            }
            it += 1;
        }
        (steps, degrees)
    }

    /// Queues a block's outcomes as step statistics, stopping at the consecutive-skip limit.
    fn queue_outcomes(&mut self, outcomes: &[StepOutcome], degrees: &[usize]) {
        let blocks = self.blocks.as_mut().expect("resident engine");
        for (o, &degree) in outcomes.iter().zip(degrees) {
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
                    blocks.diverged = Some(Diverged {
                        step: o.step,
                        consecutive: self.consecutive_skips,
                        total: self.skipped_steps,
                    });
                    break;
                }
            } else {
                self.consecutive_skips = 0;
            }
            blocks.pending.push_back((stats, degree));
        }
    }
}
