//! What watches a run: every step is shown to each [`Observer`] (a progress bar, a live viewer, the
//! run's own record of history and checkpoints), so adding one does not lengthen the loop. An
//! observer only reads: the state it sees is a copy's worth of `&`, and files it writes go through
//! the run's background writer ([`StepEvent::writer`]), so watching never blocks training on a disk.

use std::path::{Path, PathBuf};

use super::files::{submit_checkpoint, IoWorker};
use crate::report::{HistoryPoint, HistoryRecorder};
use crate::state::TrainState;
use crate::trainer::StepStats;

/// One step as the observers see it.
pub struct StepEvent<'s> {
    pub stats: &'s StepStats,
    /// The state after the step. Current when some observer asked for it
    /// ([`Observer::wants_state`]); otherwise, with resident blocks, the state of the last time it
    /// was read back (on the host it is always current).
    pub state: &'s TrainState,
    /// The step ends a resident block (always, on the host): the state can be read back here.
    pub block_end: bool,
    /// The run has no more steps.
    pub done: bool,
    /// Optimizer steps of the whole run.
    pub total_steps: u64,
    /// Seconds of training so far, earlier sessions of a resumed run included.
    pub train_seconds: f64,
    /// The run's background writer: files submitted here are written in order, beside training.
    pub writer: &'s IoWorker,
}

/// Something that watches a run, called after every step on the ranks it was added for.
pub trait Observer: Send {
    /// Whether this observer reads the state after this step, decided from everything in `event` but
    /// the state, which is copied back from the device first when any observer asks. Only at a
    /// block's end (`event.block_end`): the run ends blocks at its checkpoints, and inside a block the
    /// device is ahead of the step.
    fn wants_state(&self, event: &StepEvent<'_>) -> bool {
        let _ = event;
        false
    }

    /// After each step.
    fn on_step(&mut self, event: &StepEvent<'_>);

    /// Once the steps are over (before the final outputs are written), however the run ended.
    fn on_end(&mut self) {}
}

/// An observer made of a closure that sees each step's statistics.
pub struct OnStep<F>(pub F);

impl<F: FnMut(&StepStats) + Send> Observer for OnStep<F> {
    fn on_step(&mut self, event: &StepEvent<'_>) {
        (self.0)(event.stats)
    }
}

/// The run's own record on rank 0: the training history (about 500 points, see
/// [`HistoryRecorder`]) and, every `checkpoint_every` steps, a checkpoint with the history up to it.
pub(super) struct RunRecord {
    dir: PathBuf,
    checkpoint_every: u64,
    pub history: HistoryRecorder,
}

impl RunRecord {
    /// `earlier`: the history of the earlier sessions of a resumed run.
    pub fn new(
        dir: &Path,
        checkpoint_every: u64,
        total_steps: u64,
        earlier: Vec<HistoryPoint>,
    ) -> Self {
        let mut history = HistoryRecorder::new(total_steps, earlier);
        history.points.reserve(520);
        RunRecord {
            dir: dir.to_path_buf(),
            checkpoint_every,
            history,
        }
    }

    fn checkpoint_due(&self, event: &StepEvent<'_>) -> bool {
        self.checkpoint_every > 0
            && event.stats.step.is_multiple_of(self.checkpoint_every)
            && !event.done
    }

    /// Writes the checkpoint of `state` (current) with the history so far, in the background.
    pub fn checkpoint(&self, writer: &IoWorker, state: &TrainState, train_seconds: f64) {
        let history = self.history.points.clone();
        submit_checkpoint(writer, &self.dir, state.clone(), train_seconds, history);
    }
}

impl Observer for RunRecord {
    fn wants_state(&self, event: &StepEvent<'_>) -> bool {
        self.checkpoint_due(event)
    }

    fn on_step(&mut self, event: &StepEvent<'_>) {
        let s = event.stats;
        self.history
            .record(s.step, s.loss, s.psnr, s.num_gaussians, event.done);
        if self.checkpoint_due(event) {
            self.checkpoint(event.writer, event.state, event.train_seconds);
        }
    }
}
