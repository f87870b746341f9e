//! `splat prepare`: photos or a video to a COLMAP dataset (see `splat_prepare` for the pipeline).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use splat_prepare::{CameraModel, Event, FrameRate, Matcher, PrepareOptions, Summary, ToolPaths};

#[derive(Args)]
pub struct PrepareArgs {
    /// A folder of photos (JPEG or PNG; or a folder with an images/ folder in it), or a video file.
    pub input: PathBuf,
    /// The dataset folder to write (new, empty, or made by an earlier `splat prepare`).
    #[arg(long, short)]
    pub out: PathBuf,
    #[command(flatten)]
    pub opts: PrepareOptionsArgs,
}

/// Everything `splat prepare` takes but the input and the dataset folder (`splat scan` passes these
/// through).
#[derive(Args)]
pub struct PrepareOptionsArgs {
    /// Frames to take from a video over its whole length (about; default 150; at least 10).
    #[arg(long, conflicts_with = "fps")]
    pub frames: Option<usize>,
    /// Frames per second to take from a video instead of a total.
    #[arg(long)]
    pub fps: Option<f64>,
    /// COLMAP camera model: simple-radial (one focal length, one distortion term) suits most phone
    /// photos; opencv (two focal lengths, four distortion terms) wide or strongly distorting lenses;
    /// opencv-fisheye (k1..k4 on the angle; radial-fisheye two, simple-radial-fisheye one) fisheye
    /// lenses, which `splat train` renders natively (no pinhole image holds their field of view).
    #[arg(long, value_enum, default_value_t = CameraArg::SimpleRadial)]
    pub camera_model: CameraArg,
    /// One camera per photo instead of one shared by all (photos from several devices or zooms).
    #[arg(long)]
    pub camera_per_image: bool,
    /// How pairs are matched: exhaustive (every pair; default up to 150 photos) or sequential
    /// (neighbours in file order plus loop pairs; default for video and larger sets).
    #[arg(long, value_enum)]
    pub matcher: Option<MatcherArg>,
    /// A COLMAP vocabulary tree (e.g. vocab_tree_flickr100K_words32K.bin) for COLMAP's own loop
    /// detection in sequential matching; without one, loop pairs come from thumbnail similarity.
    #[arg(long)]
    pub vocab_tree: Option<PathBuf>,
    /// Match SIFT descriptors with COLMAP's own CPU matcher (approximate nearest neighbours) instead
    /// of splat's exact one: the same rule, 99.7% the same matches, 4x the time here. COLMAP
    /// verifies the pairs either way.
    #[arg(long)]
    pub colmap_matching: bool,
    /// Least share of the photos that must be registered, else an error.
    #[arg(long, default_value_t = 0.5)]
    pub min_registered: f64,
    /// Threads COLMAP uses (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// The colmap program (default: `colmap` on PATH).
    #[arg(long)]
    pub colmap: Option<PathBuf>,
    /// The ffmpeg program (default: `ffmpeg` on PATH).
    #[arg(long)]
    pub ffmpeg: Option<PathBuf>,
    /// The ffprobe program (default: `ffprobe` on PATH).
    #[arg(long)]
    pub ffprobe: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum CameraArg {
    SimplePinhole,
    Pinhole,
    SimpleRadial,
    Radial,
    Opencv,
    OpencvFisheye,
    SimpleRadialFisheye,
    RadialFisheye,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum MatcherArg {
    Exhaustive,
    Sequential,
}

impl PrepareOptionsArgs {
    pub fn options(&self) -> Result<PrepareOptions> {
        if !(self.min_registered > 0.0 && self.min_registered <= 1.0) {
            bail!(
                "--min-registered must be in (0, 1], got {}",
                self.min_registered
            );
        }
        let frames = match (self.frames, self.fps) {
            (_, Some(f)) if !(f.is_finite() && f > 0.0 && f <= 240.0) => {
                bail!("--fps must be in (0, 240], got {f}")
            }
            (_, Some(f)) => FrameRate::PerSecond(f),
            (Some(n), None) if !(splat_prepare::video::MIN_FRAMES..=100_000).contains(&n) => {
                bail!(
                    "--frames must be between {} and 100000, got {n}",
                    splat_prepare::video::MIN_FRAMES
                )
            }
            (Some(n), None) => FrameRate::Count(n),
            (None, None) => FrameRate::default(),
        };
        if self.threads == Some(0) {
            bail!("--threads must be at least 1");
        }
        Ok(PrepareOptions {
            camera_model: match self.camera_model {
                CameraArg::SimplePinhole => CameraModel::SimplePinhole,
                CameraArg::Pinhole => CameraModel::Pinhole,
                CameraArg::SimpleRadial => CameraModel::SimpleRadial,
                CameraArg::Radial => CameraModel::Radial,
                CameraArg::Opencv => CameraModel::Opencv,
                CameraArg::OpencvFisheye => CameraModel::OpencvFisheye,
                CameraArg::SimpleRadialFisheye => CameraModel::SimpleRadialFisheye,
                CameraArg::RadialFisheye => CameraModel::RadialFisheye,
            },
            single_camera: !self.camera_per_image,
            matcher: self.matcher.map(|m| match m {
                MatcherArg::Exhaustive => Matcher::Exhaustive,
                MatcherArg::Sequential => Matcher::Sequential,
            }),
            frames,
            vocab_tree: self.vocab_tree.clone(),
            colmap_matching: self.colmap_matching,
            threads: self.threads,
            min_registered: self.min_registered,
            tools: ToolPaths {
                colmap: self.colmap.clone(),
                ffmpeg: self.ffmpeg.clone(),
                ffprobe: self.ffprobe.clone(),
            },
        })
    }
}

/// Prints stages as they go: a bar on a terminal, a line per stage otherwise.
struct StageProgress {
    bar: Option<ProgressBar>,
    stage: &'static str,
    started: Instant,
    terminal: bool,
    /// When prepare began (for `splat scan`'s estimate of the time left, [`crate::scan_eta`]).
    prepare_started: Instant,
    /// The images folder, where the frames are once the features stage starts.
    images: PathBuf,
}

impl StageProgress {
    fn event(&mut self, e: Event) {
        match e {
            Event::Start { stage, total } => {
                self.finish_bar();
                if stage == "features" {
                    crate::scan_eta::images_ready(&self.images);
                }
                // As the stage before ended: this one's share is still to come.
                let note = self.scan_note(0.0).map(|n| format!(" {n}"));
                self.stage = stage;
                self.started = Instant::now();
                if self.terminal {
                    let b = ProgressBar::new(total);
                    b.set_style(
                        ProgressStyle::with_template(
                            "{prefix:>12} {bar:30} {pos}/{len} {elapsed} {msg}",
                        )
                        .expect("valid template"),
                    );
                    b.set_prefix(stage);
                    b.set_message(note.unwrap_or_default());
                    self.bar = Some(b);
                } else {
                    eprintln!("{stage}: started{}", note.unwrap_or_default());
                }
            }
            Event::Total { total } => {
                if let Some(b) = &self.bar {
                    b.set_length(total);
                }
            }
            Event::Advance { done } => {
                if let Some(b) = &self.bar {
                    b.set_position(done);
                    let elapsed = self.started.elapsed().as_secs_f64();
                    let left =
                        crate::scan_eta::left_by_rate(done, b.length().unwrap_or(0), elapsed);
                    if let Some(note) = left.and_then(|l| self.scan_note(l)) {
                        b.set_message(note);
                    }
                }
            }
            Event::Done { summary } => {
                self.finish_bar();
                let note = self.scan_note(0.0).map(|n| format!(" {n}"));
                eprintln!(
                    "{}: {summary} ({:.1} s){}",
                    self.stage,
                    self.started.elapsed().as_secs_f64(),
                    note.unwrap_or_default()
                );
            }
            Event::Note { message } => match &self.bar {
                Some(b) => b.println(format!("note: {message}")),
                None => eprintln!("note: {message}"),
            },
        }
    }

    /// `splat scan`'s time left, with `stage_left` seconds of this stage to go.
    fn scan_note(&self, stage_left: f64) -> Option<String> {
        let elapsed = self.prepare_started.elapsed().as_secs_f64();
        crate::scan_eta::prepare_note(self.stage, elapsed, stage_left)
    }

    fn finish_bar(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

pub fn prepare(args: PrepareArgs) -> Result<()> {
    let opts = args.opts.options()?;
    let started = Instant::now();
    let summary = run_prepare(&args.input, &args.out, &opts)?;
    println!(
        "prepared {}: {} of {} images registered, {} points, in {:.0} s (log: {})",
        args.out.display(),
        summary.registered,
        summary.images,
        summary.points,
        started.elapsed().as_secs_f64(),
        args.out.join("prepare.log").display()
    );
    println!(
        "train it: {} train {} --out {} --eval",
        crate::invocation::program(),
        crate::shell_word(&args.out),
        crate::shell_word(&args.out.with_file_name(format!(
            "{}-trained",
            args.out
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "splat".into())
        )))
    );
    Ok(())
}

/// Runs the pipeline with its stages' progress on stderr.
pub fn run_prepare(input: &Path, out: &Path, opts: &PrepareOptions) -> Result<Summary> {
    let mut progress = StageProgress {
        bar: None,
        stage: "prepare",
        started: Instant::now(),
        terminal: std::io::stderr().is_terminal(),
        prepare_started: Instant::now(),
        images: out.join("images"),
    };
    let result = splat_prepare::prepare(input, out, opts, &mut |e| progress.event(e));
    progress.finish_bar();
    Ok(result?)
}
