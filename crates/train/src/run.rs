//! A whole training run with its outputs: `config.json`, `checkpoints/`, `point_cloud.ply`, `renders/`,
//! `metrics.json`. Checkpoints, the PLY and the renders are written by a background thread ([`IoWorker`])
//! from copies, so the loop never waits on the disk; every file is written atomically.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use splat_io::dataset::{Dataset, LoadOptions};
use splat_io::{write_atomic, write_atomic_with};
use splat_render::Backend;

use crate::checkpoint;
use crate::config::TrainConfig;
use crate::eval::{evaluate, means, ViewMetrics};
use crate::report::{HistoryPoint, HistoryRecorder, ReportView};
use crate::state::TrainState;
use crate::trainer::{StepStats, Trainer};

/// Everything a run was started with; `DIR/config.json`, which `--resume` reads back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub data: PathBuf,
    pub load: LoadOptions,
    pub train: TrainConfig,
    pub checkpoint_every: u64,
    /// The backend the run was started on (the CLI's `--backend` value), which `--resume` uses unless
    /// told otherwise. Absent in configs written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
}

/// Progress of the latest checkpoint, beside it (`checkpoints/latest.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointInfo {
    pub step: u64,
    pub train_seconds: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Means over the evaluated views.
    pub psnr: f64,
    pub ssim: f64,
    pub num_gaussians: usize,
    pub iterations: u64,
    pub train_seconds: f64,
    pub its_per_second: f64,
    /// `test` (held-out views) or `train` (no test split: metrics on the training views).
    pub split: String,
    pub backend: String,
    /// Steps skipped because the loss or a gradient was not finite (this process).
    pub skipped_steps: u64,
    pub views: Vec<ViewMetrics>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    #[error("{0}")]
    Background(String),
    #[error("{0}")]
    Stopped(String),
}

pub const CONFIG_FILE: &str = "config.json";
pub const CHECKPOINT_FILE: &str = "checkpoints/latest.ckpt";
pub const CHECKPOINT_INFO_FILE: &str = "checkpoints/latest.json";
/// The training history up to the checkpoint (for the report of a resumed run).
pub const HISTORY_FILE: &str = "checkpoints/history.json";
pub const REPORT_FILE: &str = "report.html";
/// Training views shown in the report of a run without a test split.
pub const REPORT_TRAIN_VIEWS: usize = 24;

type Job = Box<dyn FnOnce() -> Result<(), String> + Send>;

/// A thread that runs file writes in order, beside training.
pub struct IoWorker {
    tx: Option<Sender<Job>>,
    handle: Option<JoinHandle<Vec<String>>>,
    failed: Arc<AtomicBool>,
}

impl Default for IoWorker {
    fn default() -> Self {
        Self::new()
    }
}

impl IoWorker {
    pub fn new() -> Self {
        let (tx, rx) = channel::<Job>();
        let failed = Arc::new(AtomicBool::new(false));
        let flag = failed.clone();
        let handle = std::thread::Builder::new()
            .name("splat-io".into())
            .spawn(move || {
                let mut errors = Vec::new();
                for job in rx {
                    if let Err(e) = job() {
                        errors.push(e);
                        flag.store(true, Ordering::Release);
                    }
                }
                errors
            })
            .expect("spawn the I/O thread");
        IoWorker {
            tx: Some(tx),
            handle: Some(handle),
            failed,
        }
    }

    pub fn submit(&self, job: impl FnOnce() -> Result<(), String> + Send + 'static) {
        if let Some(tx) = &self.tx {
            // A send fails only if the thread died; finish() reports that.
            let _ = tx.send(Box::new(job));
        }
    }

    /// Waits until every write submitted so far has run.
    pub fn drain(&self) {
        let (done_tx, done_rx) = channel::<()>();
        self.submit(move || {
            let _ = done_tx.send(());
            Ok(())
        });
        // An error here means the thread is gone; `finish` reports why.
        let _ = done_rx.recv();
    }

    /// Whether a write has failed (training stops then rather than run on without saving).
    pub fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Waits for every queued write; returns the first error.
    pub fn finish(mut self) -> Result<(), RunError> {
        drop(self.tx.take());
        let errors = match self.handle.take().map(|h| h.join()) {
            Some(Ok(e)) => e,
            Some(Err(_)) => vec!["the I/O thread panicked".into()],
            None => Vec::new(),
        };
        match errors.into_iter().next() {
            Some(e) => Err(RunError::Background(e)),
            None => Ok(()),
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), RunError> {
    let text = serde_json::to_string_pretty(value).expect("serializable");
    write_atomic(path, text.as_bytes()).map_err(io_err(path))
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, RunError> {
    let text = std::fs::read_to_string(path).map_err(io_err(path))?;
    serde_json::from_str(&text).map_err(|e| RunError::Invalid {
        path: path.to_path_buf(),
        message: format!("invalid JSON: {e}"),
    })
}

/// Reads a run's `config.json`.
pub fn read_config(dir: &Path) -> Result<RunConfig, RunError> {
    read_json(&dir.join(CONFIG_FILE))
}

/// Reads a run's latest checkpoint.
pub fn read_checkpoint(dir: &Path) -> Result<(TrainState, CheckpointInfo), RunError> {
    let path = dir.join(CHECKPOINT_FILE);
    let bytes = std::fs::read(&path).map_err(io_err(&path))?;
    let state = checkpoint::from_bytes(&bytes).map_err(|message| RunError::Invalid {
        path: path.clone(),
        message,
    })?;
    let info: CheckpointInfo = read_json(&dir.join(CHECKPOINT_INFO_FILE)).unwrap_or_default();
    Ok((state, info))
}

fn submit_checkpoint(
    worker: &IoWorker,
    dir: &Path,
    state: TrainState,
    train_seconds: f64,
    history: Vec<HistoryPoint>,
) {
    let ckpt = dir.join(CHECKPOINT_FILE);
    let info_path = dir.join(CHECKPOINT_INFO_FILE);
    let history_path = dir.join(HISTORY_FILE);
    worker.submit(move || {
        // The history first: a checkpoint is never newer than the history beside it.
        let text = serde_json::to_string(&history).expect("serializable");
        write_atomic(&history_path, text.as_bytes())
            .map_err(|e| format!("{}: {e}", history_path.display()))?;
        let bytes = checkpoint::to_bytes(&state);
        let step = state.step;
        write_atomic_with(&ckpt, &bytes, &|| {
            crate::testhook::pause_point("checkpoint-write", step)
        })
        .map_err(|e| format!("{}: {e}", ckpt.display()))?;
        let info = CheckpointInfo {
            step: state.step,
            train_seconds,
        };
        let text = serde_json::to_string_pretty(&info).expect("serializable");
        write_atomic(&info_path, text.as_bytes())
            .map_err(|e| format!("{}: {e}", info_path.display()))
    });
}

/// Removes the temporary files a killed run left (`.NAME.tmpPID`, see `write_atomic`); the files
/// with final names are complete by construction.
fn remove_stale_temporaries(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name.contains(".tmp") && e.path().is_file() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The error of a failed background write, with what it means for the run.
fn stopped_by_write(finished: Result<(), RunError>, dir: &Path, step: u64) -> RunError {
    let cause = match finished {
        Err(e) => e.to_string(),
        Ok(()) => "a background write failed".into(),
    };
    RunError::Background(format!(
        "cannot write {cause}; training stopped at step {step}, {}",
        kept_checkpoint(dir)
    ))
}

/// What a stopped run leaves to resume from.
fn kept_checkpoint(dir: &Path) -> String {
    match read_checkpoint_step(dir) {
        Some(s) => format!(
            "the checkpoint of step {s} is intact; `splat train --resume {}` continues from it",
            dir.display()
        ),
        None => "no complete checkpoint was written".into(),
    }
}

fn read_checkpoint_step(dir: &Path) -> Option<u64> {
    read_checkpoint(dir).ok().map(|(s, _)| s.step)
}

enum LoopEnd {
    Done,
    Stopped,
    WriteFailed,
    ReplicasDiverged(u64, Vec<u64>),
    Diverged(crate::trainer::Diverged),
}

/// How a run starts.
pub enum Start {
    Fresh,
    Resume(Box<TrainState>, CheckpointInfo),
}

/// Trains on `ds` and writes the outputs into `dir`. `progress` sees every step. With `stop_after`, the run
/// stops after that many completed iterations without final outputs (used to test resuming) and returns
/// `None`.
pub fn train_run(
    dir: &Path,
    cfg: &RunConfig,
    ds: &Dataset,
    start: Start,
    make_backend: &dyn Fn() -> Box<dyn Backend + Send>,
    stop_after: Option<u64>,
    progress: &mut (dyn FnMut(&StepStats) + Send),
) -> Result<Option<Metrics>, RunError> {
    train_run_parallel(
        dir,
        cfg,
        ds,
        start,
        make_backend,
        stop_after,
        &mut |s, _| progress(s),
        Box::new(crate::parallel::Local),
        None,
    )
}

/// Blocks of steps on a device that holds the state ([`crate::resident`]).
pub struct ResidentOptions<'a> {
    /// Makes the engine for the training views.
    pub make: &'a dyn Fn(&[splat_io::dataset::View]) -> Box<dyn crate::resident::ResidentEngine>,
    /// Copy the state back after every block (a live viewer reads it from `progress`); otherwise only
    /// at checkpoints and at the end.
    pub sync_each_block: bool,
}

/// Steps between the replica checksum comparisons of a multi-rank run.
pub const REPLICA_CHECK_EVERY: u64 = 100;

/// [`train_run`] as one rank of a data-parallel group (and `progress` sees the state after each step,
/// for the live viewer): every rank trains, rank 0 alone writes the
/// outputs, checkpoints and metrics and evaluates; the others return `Ok(None)` at the end. Every
/// [`REPLICA_CHECK_EVERY`] steps and at the end the ranks compare parameter checksums.
pub fn train_run_parallel(
    dir: &Path,
    cfg: &RunConfig,
    ds: &Dataset,
    start: Start,
    make_backend: &dyn Fn() -> Box<dyn Backend + Send>,
    stop_after: Option<u64>,
    progress: &mut (dyn FnMut(&StepStats, &TrainState) + Send),
    collective: Box<dyn crate::parallel::Collective>,
    resident: Option<ResidentOptions<'_>>,
) -> Result<Option<Metrics>, RunError> {
    let rank = collective.rank();
    let is_root = rank == 0;
    let ranks = collective.size();
    if is_root {
        std::fs::create_dir_all(dir.join("checkpoints")).map_err(io_err(dir))?;
        remove_stale_temporaries(dir);
        remove_stale_temporaries(&dir.join("checkpoints"));
        write_json(&dir.join(CONFIG_FILE), cfg)?;
    }
    let (trainer, prior_seconds) = match start {
        Start::Fresh => (
            Trainer::new(
                cfg.train.clone(),
                &ds.train,
                &ds.points,
                ds.background,
                ds.scene_extent,
                make_backend(),
            ),
            0.0,
        ),
        Start::Resume(state, info) => (
            Trainer::resume(
                cfg.train.clone(),
                &ds.train,
                ds.background,
                ds.scene_extent,
                make_backend(),
                *state,
            ),
            info.train_seconds,
        ),
    };
    let mut trainer = trainer.with_collective(collective);
    let sync_each_block = resident.as_ref().is_some_and(|r| r.sync_each_block);
    if let Some(r) = &resident {
        match trainer.with_resident((r.make)(&ds.train)) {
            Ok(note) => {
                trainer.set_sync_every(cfg.checkpoint_every);
                if let (Some(note), true) = (note, is_root) {
                    eprintln!("note: {note}");
                }
                if is_root {
                    eprintln!(
                        "resident: steps run in blocks of up to {} (about {} s each) on {}",
                        crate::trainer::BLOCK_STEPS,
                        crate::trainer::BLOCK_SECONDS,
                        trainer.resident_name().unwrap_or("the device")
                    );
                }
            }
            Err(why) => {
                if is_root {
                    eprintln!("note: not resident ({why}); every stage's data goes to the device and back");
                }
            }
        }
    }
    let first_step_of_run = trainer.state.step;
    // History of earlier sessions of this run, up to the checkpoint resumed from.
    let earlier: Vec<HistoryPoint> = read_json::<Vec<HistoryPoint>>(&dir.join(HISTORY_FILE))
        .map(|h| {
            h.into_iter()
                .filter(|p| p.step <= first_step_of_run)
                .collect()
        })
        .unwrap_or_default();
    let total_steps = cfg.train.per_step().iterations;
    let mut history = HistoryRecorder::new(total_steps, earlier);
    history.points.reserve(520);
    let backend_name = trainer.backend_name().to_string();
    let mut checksums = Vec::with_capacity(ranks);
    let worker = IoWorker::new();
    let started = Instant::now();
    let first_step = trainer.state.step;
    // The loop runs inside one rayon scope, on a pool thread: the stages' parallel splits then use the
    // worker's own queue instead of injecting jobs from outside, which keeps the steady state free of
    // allocations.
    let end = rayon::scope(|_| {
        while !trainer.done() {
            if stop_after.is_some_and(|s| trainer.state.step >= s) {
                return LoopEnd::Stopped;
            }
            if worker.has_failed() {
                return LoopEnd::WriteFailed;
            }
            let stats = match trainer.step() {
                Ok(s) => s,
                Err(e) => return LoopEnd::Diverged(e),
            };
            if sync_each_block && trainer.block_done() {
                trainer.sync();
            }
            progress(&stats, &trainer.state);
            history.record(
                stats.step,
                stats.loss,
                stats.psnr,
                stats.num_gaussians,
                trainer.done(),
            );
            if crate::testhook::drift_requested(rank, stats.step) {
                trainer.state.gaussians.means[0][0] += 1e-3;
            }
            if ranks > 1 && (stats.step % REPLICA_CHECK_EVERY == 0 || trainer.done()) {
                trainer.replica_checksums(&mut checksums);
                if checksums.iter().any(|&c| c != checksums[0]) {
                    return LoopEnd::ReplicasDiverged(stats.step, checksums.clone());
                }
            }
            if is_root
                && cfg.checkpoint_every > 0
                && stats.step % cfg.checkpoint_every == 0
                && !trainer.done()
            {
                trainer.sync();
                let secs = prior_seconds + started.elapsed().as_secs_f64();
                submit_checkpoint(
                    &worker,
                    dir,
                    trainer.state.clone(),
                    secs,
                    history.points.clone(),
                );
            }
        }
        LoopEnd::Done
    });
    match end {
        LoopEnd::Done => {}
        LoopEnd::Stopped => {
            worker.finish()?;
            return Ok(None);
        }
        LoopEnd::ReplicasDiverged(step, sums) => {
            worker.finish()?;
            return Err(RunError::Stopped(format!(
                "the replicas of the {ranks} ranks differ at step {step} (parameter checksums \
                 {sums:x?}); {}",
                kept_checkpoint(dir)
            )));
        }
        LoopEnd::WriteFailed => {
            return Err(stopped_by_write(worker.finish(), dir, trainer.state.step));
        }
        LoopEnd::Diverged(e) => {
            worker.finish()?;
            return Err(RunError::Stopped(format!("{e}; {}", kept_checkpoint(dir))));
        }
    }
    if !is_root {
        worker.finish()?;
        return Ok(None);
    }
    // The last steps can outrun a checkpoint still being written: the run's outputs are written only
    // once every earlier write is known to have succeeded, as if the loop had seen the failure.
    worker.drain();
    if worker.has_failed() {
        return Err(stopped_by_write(worker.finish(), dir, trainer.state.step));
    }
    trainer.sync();
    let this_run = started.elapsed().as_secs_f64();
    let train_seconds = prior_seconds + this_run;
    submit_checkpoint(
        &worker,
        dir,
        trainer.state.clone(),
        train_seconds,
        history.points.clone(),
    );

    // The 3D filter, if any, baked in: files and renderers outside training have no filter.
    let gaussians = trainer.state.export_gaussians();
    let ply_path = dir.join("point_cloud.ply");
    let ply_gaussians = gaussians.clone();
    worker
        .submit(move || splat_io::write_ply(&ply_path, &ply_gaussians).map_err(|e| e.to_string()));

    let (views, split) = ds.eval_views();
    let renders = dir.join("renders");
    if split == "test" {
        std::fs::create_dir_all(&renders).map_err(io_err(&renders))?;
    }
    let mut backend = make_backend();
    let mut report_views = Vec::new();
    // Every test view goes into the report; without a test split, at most REPORT_TRAIN_VIEWS evenly
    // spaced training views (the page would otherwise grow with the dataset).
    let report_every = if split == "test" {
        1
    } else {
        views.len().div_ceil(REPORT_TRAIN_VIEWS).max(1)
    };
    let mut evaluated = 0usize;
    let view_metrics = evaluate(
        backend.as_mut(),
        &gaussians,
        views,
        ds.background,
        trainer.state.active_sh_degree,
        |view, img| {
            if evaluated.is_multiple_of(report_every) {
                report_views.push(ReportView::new(&view.name, &view.image, img));
            }
            evaluated += 1;
            if split == "test" {
                let path = renders.join(view.render_file_name());
                let (w, h, img) = (view.camera.width, view.camera.height, img.to_vec());
                worker.submit(move || {
                    splat_io::images::save_png(&path, w, h, &img).map_err(|e| e.to_string())
                });
            }
        },
    );
    worker
        .finish()
        .map_err(|e| stopped_by_write(Err(e), dir, trainer.state.step))?;
    let (psnr, ssim) = means(&view_metrics);
    let iterations = trainer.state.step;
    let metrics = Metrics {
        psnr,
        ssim,
        num_gaussians: gaussians.len(),
        iterations,
        train_seconds,
        its_per_second: (iterations - first_step) as f64 / this_run.max(1e-9),
        split: split.into(),
        backend: backend_name,
        skipped_steps: trainer.skipped_steps,
        views: view_metrics,
    };
    write_json(&dir.join("metrics.json"), &metrics)?;
    let report = dir.join(REPORT_FILE);
    let html = crate::report::report_html(&metrics, &history.points, &report_views);
    write_atomic(&report, html.as_bytes()).map_err(io_err(&report))?;
    Ok(Some(metrics))
}
