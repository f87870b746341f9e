//! A whole training run with its outputs: `config.json`, `checkpoints/`, `point_cloud.ply`, `renders/`,
//! `metrics.json`, `report.html`.
//!
//! A [`TrainRun`] is built from the run's folder, configuration, dataset and backend, with options
//! (how it starts, a resident engine, the ranks of a data-parallel group, observers), and
//! [`TrainRun::run`] reads top to bottom: prepare the folder and the trainer, loop over the steps
//! (each shown to the [`Observer`]s), then write the outputs ([`outputs`]). Checkpoints, the PLY and the
//! renders are written by a background thread ([`IoWorker`]) from copies, so the loop never waits on the
//! disk; every file is written atomically ([`files`]).
//!
//! With several ranks every rank trains, rank 0 alone writes the outputs, checkpoints and metrics and
//! evaluates (the others return `Ok(None)`), and every [`REPLICA_CHECK_EVERY`] steps and at the end
//! the ranks compare parameter checksums.

mod curve;
mod files;
mod observer;
mod outputs;
mod poses;

use std::path::Path;
use std::time::{Duration, Instant};

use splat_io::dataset::{Dataset, View};
use splat_render::Backend;

use crate::metrics::{Metrics, TimeBudget};
use crate::parallel::{Collective, Local};
use crate::report::HistoryPoint;
use crate::resident::ResidentEngine;
use crate::state::TrainState;
use crate::trainer::{Diverged, StepStats, TrainData, Trainer, BLOCK_SECONDS, BLOCK_STEPS};

pub use curve::{curve_steps, CURVE_FILE, CURVE_POINTS};
pub use files::{
    read_checkpoint, read_config, CheckpointInfo, IoWorker, RunConfig, RunError, CHECKPOINT_FILE,
    CHECKPOINT_INFO_FILE, CONFIG_FILE, HISTORY_FILE, REPORT_FILE, REPORT_TRAIN_VIEWS,
};
pub use observer::{Observer, OnStep, StepEvent};

use curve::{EvalInput, QualityCurve};

use files::{io_err, kept_checkpoint, read_json, remove_stale_temporaries, write_json};
use observer::RunRecord;

/// Steps between the replica checksum comparisons of a multi-rank run.
pub const REPLICA_CHECK_EVERY: u64 = 100;

/// How a run starts.
pub enum Start {
    Fresh,
    Resume(Box<TrainState>, CheckpointInfo),
}

impl Start {
    /// The step the run starts after (0 for a fresh run).
    pub fn first_step(&self) -> u64 {
        match self {
            Start::Fresh => 0,
            Start::Resume(state, _) => state.step,
        }
    }
}

/// Makes a backend (the run makes one for training and one for the evaluation).
pub type MakeBackend<'a> = &'a dyn Fn() -> Box<dyn Backend + Send>;

/// Makes the resident engine for the training views ([`crate::resident`]).
pub type MakeResident<'a> = &'a dyn Fn(&[View]) -> Box<dyn ResidentEngine>;

/// A training run, built with its options and then [`TrainRun::run`].
pub struct TrainRun<'a> {
    dir: &'a Path,
    cfg: &'a RunConfig,
    ds: &'a Dataset,
    make_backend: MakeBackend<'a>,
    start: Start,
    stop_after: Option<u64>,
    collective: Box<dyn Collective>,
    resident: Option<MakeResident<'a>>,
    /// With whether each runs on rank 0 only.
    observers: Vec<(Box<dyn Observer + 'a>, bool)>,
    budget: Option<TimeBudget>,
}

impl<'a> TrainRun<'a> {
    /// A fresh run of `cfg` on `ds` into `dir`, on one process, on the backend `make_backend` makes.
    pub fn new(
        dir: &'a Path,
        cfg: &'a RunConfig,
        ds: &'a Dataset,
        make_backend: MakeBackend<'a>,
    ) -> Self {
        TrainRun {
            dir,
            cfg,
            ds,
            make_backend,
            start: Start::Fresh,
            stop_after: None,
            collective: Box::new(Local),
            resident: None,
            observers: Vec::new(),
            budget: None,
        }
    }

    /// Ends training once the training clock reaches the budget's seconds less its calibration, even
    /// before the last step (one process only); the plan goes into `metrics.json`.
    pub fn time_budget(mut self, budget: Option<TimeBudget>) -> Self {
        self.budget = budget;
        self
    }

    /// Starts from a checkpoint instead of the initial points.
    pub fn start(mut self, start: Start) -> Self {
        self.start = start;
        self
    }

    /// Stops after this many completed iterations without final outputs (used to test resuming);
    /// [`TrainRun::run`] then returns `None`.
    pub fn stop_after(mut self, steps: Option<u64>) -> Self {
        self.stop_after = steps;
        self
    }

    /// Runs as one rank of a data-parallel group ([`crate::parallel`]).
    pub fn collective(mut self, collective: Box<dyn Collective>) -> Self {
        self.collective = collective;
        self
    }

    /// Runs the steps in blocks on the device of the engine `make` makes, when it can run this run
    /// (else says why and runs per stage).
    pub fn resident(mut self, make: Option<MakeResident<'a>>) -> Self {
        self.resident = make;
        self
    }

    /// Shows every step to `observer`, on every rank.
    pub fn observe(mut self, observer: impl Observer + 'a) -> Self {
        self.observers.push((Box::new(observer), false));
        self
    }

    /// Shows every step to `observer` on rank 0 only (progress output, a live viewer).
    pub fn observe_on_root(mut self, observer: impl Observer + 'a) -> Self {
        self.observers.push((Box::new(observer), true));
        self
    }

    /// Trains and writes the outputs; `None` on ranks other than 0 and when stopped by `stop_after`.
    pub fn run(self) -> Result<Option<Metrics>, RunError> {
        let make_backend = self.make_backend;
        let mut running = self.prepare()?;
        // The loop runs inside one rayon scope, on a pool thread: the stages' parallel splits then use
        // the worker's own queue instead of injecting jobs from outside, which keeps the steady state
        // free of allocations.
        let end = rayon::scope(|_| running.train_loop());
        for o in &mut running.observers {
            o.on_end();
        }
        running.conclude(end, make_backend)
    }

    /// The folder, `config.json`, the trainer (on its resident engine when there is one) and the
    /// observers of this rank.
    fn prepare(self) -> Result<Running<'a>, RunError> {
        let (dir, cfg, ds) = (self.dir, self.cfg, self.ds);
        let rank = self.collective.rank();
        if rank == 0 {
            std::fs::create_dir_all(dir.join("checkpoints")).map_err(io_err(dir))?;
            remove_stale_temporaries(dir);
            remove_stale_temporaries(&dir.join("checkpoints"));
            write_json(&dir.join(CONFIG_FILE), cfg)?;
        }
        let data = TrainData::of(ds);
        let backend = (self.make_backend)();
        let (trainer, prior_seconds) = match self.start {
            Start::Fresh => (
                Trainer::new(cfg.train.clone(), data, &ds.points, backend),
                0.0,
            ),
            Start::Resume(state, info) => (
                Trainer::resume(cfg.train.clone(), data, *state, backend),
                info.train_seconds,
            ),
        };
        let mut trainer = trainer.with_collective(self.collective);
        if let Some(make) = self.resident {
            go_resident(
                &mut trainer,
                make(&ds.train),
                cfg.checkpoint_every,
                rank == 0,
            );
        }
        let observers: Vec<_> = self
            .observers
            .into_iter()
            .filter(|(_, root_only)| rank == 0 || !root_only)
            .map(|(o, _)| o)
            .collect();
        let first_step = trainer.state.step;
        let total = cfg.train.per_step().iterations;
        let curve = (rank == 0 && !ds.test.is_empty()).then(|| {
            let curve = QualityCurve::new(dir, total, first_step, (self.make_backend)());
            trainer.set_sync_steps(curve.steps().to_vec());
            curve
        });
        let record = (rank == 0).then(|| {
            RunRecord::new(
                dir,
                cfg.checkpoint_every,
                total,
                earlier_history(dir, first_step),
            )
        });
        Ok(Running {
            dir,
            ds,
            trainer,
            observers,
            record,
            curve,
            worker: IoWorker::new(),
            started: Instant::now(),
            excluded: Duration::ZERO,
            budget: self.budget,
            prior_seconds,
            first_step,
            stop_after: self.stop_after,
            checksums: Vec::new(),
        })
    }
}

/// Moves the trainer onto its resident engine, or says why it stays per stage.
fn go_resident(
    trainer: &mut Trainer<'_>,
    engine: Box<dyn ResidentEngine>,
    sync_every: u64,
    say: bool,
) {
    match trainer.with_resident(engine) {
        Ok(note) => {
            trainer.set_sync_every(sync_every);
            if let (Some(note), true) = (note, say) {
                eprintln!("note: {note}");
            }
            if say {
                eprintln!(
                    "resident: steps run in blocks of up to {BLOCK_STEPS} (about {BLOCK_SECONDS} s \
                     each) on {}",
                    trainer.resident_name().unwrap_or("the device")
                );
            }
        }
        Err(why) if say => {
            eprintln!("note: not resident ({why}); every stage's data goes to the device and back")
        }
        Err(_) => {}
    }
}

/// The history of earlier sessions of this run, up to the checkpoint resumed from.
fn earlier_history(dir: &Path, first_step: u64) -> Vec<HistoryPoint> {
    read_json::<Vec<HistoryPoint>>(&dir.join(HISTORY_FILE))
        .map(|h| h.into_iter().filter(|p| p.step <= first_step).collect())
        .unwrap_or_default()
}

/// How the loop ended.
enum LoopEnd {
    Done,
    Stopped,
    WriteFailed,
    ReplicasDiverged(u64, Vec<u64>),
    Diverged(Diverged),
}

/// A run under way: the trainer and everything that watches it.
struct Running<'a> {
    dir: &'a Path,
    ds: &'a Dataset,
    trainer: Trainer<'a>,
    observers: Vec<Box<dyn Observer + 'a>>,
    /// History and checkpoints (rank 0).
    record: Option<RunRecord>,
    /// Test quality at fractions of the run (rank 0, with a test split).
    curve: Option<QualityCurve>,
    worker: IoWorker,
    started: Instant,
    /// Time of this session not counted as training (the curve's evaluations).
    excluded: Duration,
    budget: Option<TimeBudget>,
    /// Training seconds of the earlier sessions of a resumed run.
    prior_seconds: f64,
    first_step: u64,
    stop_after: Option<u64>,
    checksums: Vec<u64>,
}

impl Running<'_> {
    fn train_loop(&mut self) -> LoopEnd {
        while !self.trainer.done() {
            if self
                .stop_after
                .is_some_and(|s| self.trainer.state.step >= s)
            {
                return LoopEnd::Stopped;
            }
            if self.worker.has_failed() {
                return LoopEnd::WriteFailed;
            }
            if self.past_budget() {
                return LoopEnd::Done;
            }
            let stats = match self.trainer.step() {
                Ok(s) => s,
                Err(e) => return LoopEnd::Diverged(e),
            };
            let rank = self.trainer.rank();
            if crate::testhook::drift_requested(rank, stats.step) {
                self.trainer.state.gaussians.means[0][0] += 1e-3;
            }
            if let Some(end) = self.check_replicas(stats.step) {
                return end;
            }
            self.notify(&stats);
            self.measure_curve(stats.step);
        }
        LoopEnd::Done
    }

    /// A `--time-budget` run's training clock has reached its budget.
    fn past_budget(&self) -> bool {
        (self.budget.as_ref())
            .is_some_and(|b| self.train_seconds() >= b.seconds - b.calibration_seconds)
    }

    /// Seconds of training so far (earlier sessions included, the curve's evaluations not).
    fn train_seconds(&self) -> f64 {
        self.prior_seconds
            + self
                .started
                .elapsed()
                .saturating_sub(self.excluded)
                .as_secs_f64()
    }

    /// Evaluates the test views when `step` is a point of the curve, off the training clock.
    fn measure_curve(&mut self, step: u64) {
        if !self.curve.as_ref().is_some_and(|c| c.due(step)) {
            return;
        }
        let seconds = self.train_seconds();
        let t = Instant::now();
        self.trainer.sync();
        let eval = EvalInput {
            views: &self.ds.test,
            background: self.ds.background,
            writer: &self.worker,
        };
        let curve = self.curve.as_mut().expect("due");
        curve.measure(&self.trainer.state, eval, seconds);
        self.excluded += t.elapsed();
    }

    /// Every [`REPLICA_CHECK_EVERY`] steps and at the end of a multi-rank run: the ranks' parameter
    /// checksums, which differ only if a replica drifted.
    fn check_replicas(&mut self, step: u64) -> Option<LoopEnd> {
        let due = step.is_multiple_of(REPLICA_CHECK_EVERY) || self.trainer.done();
        if self.trainer.ranks() == 1 || !due {
            return None;
        }
        self.trainer.replica_checksums(&mut self.checksums);
        let c = &self.checksums;
        c.iter()
            .any(|&x| x != c[0])
            .then(|| LoopEnd::ReplicasDiverged(step, c.clone()))
    }

    /// Shows the step to every observer, the state read back first when one of them reads it.
    fn notify(&mut self, stats: &StepStats) {
        let seconds = self.train_seconds();
        let event = step_event(&self.trainer, &self.worker, stats, seconds);
        let record = self.record.as_ref().map(|r| r as &dyn Observer);
        let wanted = (self.observers.iter().map(|o| &**o))
            .chain(record)
            .any(|o| o.wants_state(&event));
        if wanted {
            self.trainer.sync();
        }
        let event = step_event(&self.trainer, &self.worker, stats, seconds);
        for o in self.observers.iter_mut() {
            o.on_step(&event);
        }
        if let Some(r) = self.record.as_mut() {
            r.on_step(&event);
        }
    }

    /// The run's result from how the loop ended: an error, `None` (stopped, or not rank 0), or the
    /// outputs written and their metrics.
    fn conclude(
        self,
        end: LoopEnd,
        make_backend: MakeBackend<'_>,
    ) -> Result<Option<Metrics>, RunError> {
        let (ranks, dir) = (self.trainer.ranks(), self.dir);
        let stopped = |why: String| RunError::Stopped(format!("{why}; {}", kept_checkpoint(dir)));
        match end {
            LoopEnd::Done if self.record.is_some() => {
                return self.write_outputs(make_backend).map(Some)
            }
            LoopEnd::Done | LoopEnd::Stopped => {}
            LoopEnd::WriteFailed => {
                let step = self.trainer.state.step;
                return Err(files::stopped_by_write(self.worker.finish(), dir, step));
            }
            LoopEnd::ReplicasDiverged(step, sums) => {
                self.worker.finish()?;
                return Err(stopped(format!(
                    "the replicas of the {ranks} ranks differ at step {step} (parameter checksums \
                     {sums:x?})"
                )));
            }
            LoopEnd::Diverged(e) => {
                self.worker.finish()?;
                return Err(stopped(e.to_string()));
            }
        }
        self.worker.finish()?;
        Ok(None)
    }
}

/// What the observers see of `stats`, the step the trainer just ran.
fn step_event<'s>(
    trainer: &'s Trainer<'_>,
    writer: &'s IoWorker,
    stats: &'s StepStats,
    train_seconds: f64,
) -> StepEvent<'s> {
    StepEvent {
        stats,
        state: &trainer.state,
        block_end: trainer.block_done(),
        done: trainer.done(),
        total_steps: trainer.cfg.iterations,
        train_seconds,
        writer,
    }
}
