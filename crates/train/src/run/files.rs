//! A run's files: the background writer ([`IoWorker`]), `config.json`, the checkpoint with its
//! progress and history, and what a stopped run tells the user about them. Every file is written
//! atomically (`splat_io::write_atomic`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};
use splat_io::dataset::LoadOptions;
use splat_io::{write_atomic, write_atomic_with};

use crate::checkpoint;
use crate::config::TrainConfig;
use crate::report::HistoryPoint;
use crate::state::TrainState;

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

pub(super) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub(super) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), RunError> {
    let text = serde_json::to_string_pretty(value).expect("serializable");
    write_atomic(path, text.as_bytes()).map_err(io_err(path))
}

pub(super) fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, RunError> {
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

pub(super) fn submit_checkpoint(
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
pub(super) fn remove_stale_temporaries(dir: &Path) {
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
pub(super) fn stopped_by_write(finished: Result<(), RunError>, dir: &Path, step: u64) -> RunError {
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
pub(super) fn kept_checkpoint(dir: &Path) -> String {
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
