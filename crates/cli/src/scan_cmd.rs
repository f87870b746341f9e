//! `splat scan`: a video or a folder of photos to a page you can send, in one command. Three stages,
//! each the command a user would otherwise run by hand:
//!
//! 1. **prepare** (`splat prepare`): COLMAP poses the photos (ffmpeg samples a video) into `DIR/dataset`;
//! 2. **train** (`splat train`, the default preset unless told otherwise) into `DIR/train`, with its
//!    exports, report and checkpoints;
//! 3. **page**: `DIR/scene.html` (`splat convert DIR/train DIR/scene.html --data DIR/dataset`), the scene
//!    and the viewer in one file that opens from disk.
//!
//! What has finished is recorded in `DIR/scan.json` (written through a temporary file after each
//! stage). Run again on the same `DIR` after a Ctrl-C or a kill, a scan skips the stages that
//! finished and resumes training from its last checkpoint (every `--checkpoint-every` steps); a
//! prepare that was cut off starts over (COLMAP keeps no state worth resuming). A finished `DIR`, or
//! one holding another input's scan, is not overwritten without `--force`; a folder holding files
//! a scan did not write is refused.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};
use splat_train::parallel::Local;
use splat_train::run;

use crate::dataset_args::load_dataset;
use crate::prepare_cmd::{run_prepare, PrepareOptionsArgs};
use crate::scan_eta::{self, PrepareGuess, ScanStage};
use crate::scene_page::{write_page, PageFrame};
use crate::train_cmd::{run_training, TrainArgs, TrainOptions};

#[derive(Args)]
pub struct ScanArgs {
    /// A video file, a folder of photos (JPEG or PNG), or a folder with an images/ folder in it.
    pub input: PathBuf,
    /// The folder to write: dataset/ (the posed photos), train/ (the trained scene, its report and
    /// checkpoints), scene.html (the page to send) and scan.json (what has finished).
    #[arg(long, short)]
    pub out: PathBuf,
    /// Start over in a folder that holds a finished scan or another input's; and train even when the
    /// memory estimate exceeds the memory available.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub prepare: PrepareOptionsArgs,
    #[command(flatten)]
    pub train: TrainOptions,
}

/// `DIR/scan.json`: the input and the stages that finished, with their seconds.
#[derive(Serialize, Deserialize, Default)]
struct ScanRecord {
    input: PathBuf,
    prepare_seconds: Option<f64>,
    train_seconds: Option<f64>,
    page_seconds: Option<f64>,
}

const RECORD_FILE: &str = "scan.json";
const DATASET_DIR: &str = "dataset";
const TRAIN_DIR: &str = "train";
const PAGE_FILE: &str = "scene.html";
/// Everything a scan writes in `DIR` (besides the temporary files of atomic writes, `.NAME.tmpN`).
const OURS: [&str; 4] = [RECORD_FILE, DATASET_DIR, TRAIN_DIR, PAGE_FILE];

impl ScanRecord {
    fn finished(&self) -> bool {
        self.page_seconds.is_some()
    }

    fn save(&self, dir: &Path) -> Result<()> {
        let path = dir.join(RECORD_FILE);
        let json = serde_json::to_vec_pretty(self).expect("a record serializes");
        splat_io::atomic::write_atomic(&path, &json)
            .with_context(|| format!("cannot write {}", path.display()))
    }
}

pub fn scan(args: ScanArgs) -> Result<()> {
    // Every option is checked before anything runs.
    let prepare_opts = args.prepare.options()?;
    let input = std::fs::canonicalize(&args.input)
        .with_context(|| format!("{}: no such file or folder", args.input.display()))?;
    let dir = &args.out;
    let mut record = make_room(dir, &input, args.force)?;
    let started = Instant::now();
    let dataset = dir.join(DATASET_DIR);
    let train_dir = dir.join(TRAIN_DIR);

    if record.prepare_seconds.is_none() {
        stage(1, "prepare", "posing the photos with COLMAP");
        scan_eta::set_stage(Some(prepare_estimate(&args, &input, &prepare_opts)));
        let t = Instant::now();
        let s = run_prepare(&input, &dataset, &prepare_opts);
        scan_eta::set_stage(None);
        let s = s?;
        eprintln!(
            "scan: {} of {} images registered, {} points",
            s.registered, s.images, s.points
        );
        record.prepare_seconds = Some(t.elapsed().as_secs_f64());
        record.save(dir)?;
    } else {
        eprintln!("scan: [1/3] prepare finished before: {}", dataset.display());
    }

    let trained = if record.train_seconds.is_none() {
        let t = Instant::now();
        let train_args = train_args(&args, &dataset, &train_dir)?;
        scan_eta::set_stage(Some(ScanStage {
            index: 2,
            name: "train",
            later_seconds: scan_eta::PAGE_SECONDS,
            prepare: None,
        }));
        let trained = run_training(&train_args, Box::new(Local), false);
        scan_eta::set_stage(None);
        let trained = trained?;
        if trained.metrics.is_none() {
            println!(
                "stopped; continue with: {} scan {} --out {}",
                crate::invocation::program(),
                crate::shell_word(&args.input),
                crate::shell_word(dir)
            );
            return Ok(());
        }
        record.train_seconds = Some(t.elapsed().as_secs_f64());
        record.save(dir)?;
        Some(trained)
    } else {
        eprintln!("scan: [2/3] train finished before: {}", train_dir.display());
        None
    };

    stage(3, "page", "the scene and the viewer in one file");
    let t = Instant::now();
    let page = dir.join(PAGE_FILE);
    let bytes = write_scene_page(&train_dir, &page)?;
    record.page_seconds = Some(t.elapsed().as_secs_f64());
    record.save(dir)?;

    print_outputs(dir, &record, bytes, started.elapsed().as_secs_f64());
    if let Some(trained) = trained {
        trained.serve_if_viewing();
    }
    Ok(())
}

/// The estimate shown while prepare runs: prepare by the images it will have, training by its steps
/// (or its time budget) and the photos' size (720p for a video until its frames exist).
fn prepare_estimate(
    args: &ScanArgs,
    input: &Path,
    opts: &splat_prepare::PrepareOptions,
) -> ScanStage {
    let photos_dir = match input.join("images").is_dir() {
        true => input.join("images"),
        false => input.to_path_buf(),
    };
    let photos = match input.is_dir() {
        true => splat_io::dataset::list_images(&photos_dir).unwrap_or_default(),
        false => Vec::new(),
    };
    // A video's frames as asked for (with --fps, of a 20 s video): the projection from prepare's own
    // stages replaces the guess once its features are done.
    let images = match (photos.len(), opts.frames) {
        (0, splat_prepare::FrameRate::Count(n)) => n,
        (0, splat_prepare::FrameRate::PerSecond(f)) => (f * 20.0).round() as usize,
        (n, _) => n,
    };
    let size = photos
        .first()
        .and_then(|n| image::image_dimensions(photos_dir.join(n)).ok())
        .unwrap_or((1280, 720));
    let downscale = args.train.data_args.downscale;
    let steps = args
        .train
        .iters
        .unwrap_or_else(|| args.train.preset.preset().iterations());
    let train = match args.train.time_budget {
        Some(budget) => budget,
        None => scan_eta::train_model(steps, size.0, size.1, downscale),
    };
    ScanStage {
        index: 1,
        name: "prepare",
        later_seconds: train + scan_eta::PAGE_SECONDS,
        prepare: Some(PrepareGuess {
            seconds: scan_eta::prepare_model(images),
            train_steps: steps,
            downscale,
            train_budget: args.train.time_budget,
        }),
    }
}

fn stage(n: usize, name: &str, what: &str) {
    eprintln!("scan: [{n}/3] {name}: {what}");
}

/// The record to continue from: `dir` is made if absent; a finished scan or another input's is
/// cleared only with `force`; a folder holding anything else is refused.
fn make_room(dir: &Path, input: &Path, force: bool) -> Result<ScanRecord> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
    let record_path = dir.join(RECORD_FILE);
    let record: Option<ScanRecord> = match record_path.is_file() {
        true => Some(
            std::fs::read(&record_path)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .with_context(|| format!("{}: unreadable scan record", record_path.display()))?,
        ),
        false => None,
    };
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    for entry in entries {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let temporary = name.starts_with('.') && name.contains(".tmp");
        if !temporary && (record.is_none() || !OURS.contains(&name.as_str())) {
            bail!(
                "{} holds {name}, which splat scan did not write: give an empty or new folder as --out",
                dir.display()
            );
        }
    }
    let fresh = ScanRecord {
        input: input.to_path_buf(),
        ..Default::default()
    };
    let Some(record) = record else {
        fresh.save(dir)?;
        return Ok(fresh);
    };
    let other_input = record.input != input;
    if !force && (other_input || record.finished()) {
        let why = match other_input {
            true => format!("a scan of {}", record.input.display()),
            false => format!("a finished scan (open {})", dir.join(PAGE_FILE).display()),
        };
        bail!("{} holds {why}; --force starts over", dir.display());
    }
    if !(force || other_input || record.finished()) {
        if record.prepare_seconds.is_some() {
            eprintln!("scan: continuing the scan in {}", dir.display());
        }
        return Ok(record);
    }
    eprintln!("scan: --force: starting over in {}", dir.display());
    for name in [DATASET_DIR, TRAIN_DIR] {
        let p = dir.join(name);
        if p.exists() {
            std::fs::remove_dir_all(&p)
                .with_context(|| format!("cannot remove {}", p.display()))?;
        }
    }
    let page = dir.join(PAGE_FILE);
    if page.exists() {
        std::fs::remove_file(&page).with_context(|| format!("cannot remove {}", page.display()))?;
    }
    fresh.save(dir)?;
    Ok(fresh)
}

/// `splat train`'s arguments for the stage: a fresh run, or a resumed one where a checkpoint is.
fn train_args(args: &ScanArgs, dataset: &Path, train_dir: &Path) -> Result<TrainArgs> {
    let mut opts = args.train.clone();
    let checkpoint = train_dir.join(run::CHECKPOINT_FILE);
    if checkpoint.is_file() && train_dir.join(run::CONFIG_FILE).is_file() {
        stage(
            2,
            "train",
            "continuing from the last checkpoint, with the run's own settings",
        );
        // A resumed run keeps its plan; the budget was spent on planning it.
        opts.time_budget = None;
        return Ok(TrainArgs {
            data: None,
            out: None,
            resume: Some(train_dir.to_path_buf()),
            opts,
            force: args.force,
        });
    }
    if train_dir.exists() {
        // Cut off before its first checkpoint: nothing to keep.
        std::fs::remove_dir_all(train_dir)
            .with_context(|| format!("cannot remove {}", train_dir.display()))?;
    }
    stage(2, "train", "training the scene");
    Ok(TrainArgs {
        data: Some(dataset.to_path_buf()),
        out: Some(train_dir.to_path_buf()),
        resume: None,
        opts,
        force: args.force,
    })
}

/// Writes the page of the run in `train_dir`, listing the cameras of the dataset it trained on; its
/// size in bytes.
fn write_scene_page(train_dir: &Path, page: &Path) -> Result<usize> {
    let cfg = run::read_config(train_dir)
        .with_context(|| format!("{}: no finished run", train_dir.display()))?;
    let mut load = cfg.load.clone();
    load.eval = false;
    let ds = load_dataset(&cfg.data, &load)?;
    let g = crate::scene_files::load_scene(train_dir)?;
    let frame = PageFrame::of_dataset(&ds)?;
    Ok(write_page(page, &g, &frame)?.html.len())
}

fn print_outputs(dir: &Path, record: &ScanRecord, page_bytes: usize, seconds: f64) {
    let s = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0} s"));
    println!(
        "scan finished: prepare {}, train {}, page {} (this run {seconds:.0} s)",
        s(record.prepare_seconds),
        s(record.train_seconds),
        s(record.page_seconds)
    );
    let train = dir.join(TRAIN_DIR);
    println!(
        "  {}  the page to send: {:.1} MB, opens by double-click, no server or network",
        dir.join(PAGE_FILE).display(),
        page_bytes as f64 / 1e6
    );
    println!(
        "  {}  the scene (INRIA PLY); report: {}",
        train.join("point_cloud.ply").display(),
        train.join(run::REPORT_FILE).display()
    );
    println!(
        "  {}  the posed photos (COLMAP)",
        dir.join(DATASET_DIR).display()
    );
    println!(
        "open it: double-click {}; or serve it with the photos: {} view {} --data {}",
        dir.join(PAGE_FILE).display(),
        crate::invocation::program(),
        crate::shell_word(&train),
        crate::shell_word(&dir.join(DATASET_DIR))
    );
}
