//! `splat prepare`: from photos or a video to a posed COLMAP dataset that `splat train` reads.
//!
//! The pipeline, each stage in its own module:
//! 1. Input ([`video`]): a folder of JPEG/PNG photos is copied to `DATASET/images/`; a video is sampled
//!    by ffmpeg at a steady rate and the blurriest frame of each run of neighbours is dropped
//!    ([`sharpness`]).
//! 2. Structure from motion ([`colmap`]), COLMAP as a child process without a shell, on the CPU: SIFT
//!    features (one shared camera by default), matching (every pair up to [`EXHAUSTIVE_MAX`] photos;
//!    sequential for video frames and larger sets, with loop pairs from [`loops`]), incremental mapping.
//! 3. The model with the most registered images becomes `DATASET/sparse/0`; fewer registered than
//!    [`PrepareOptions::min_registered`] of the images is an error that says what usually helps.
//! 4. `images_2`, `images_4`, `images_8` ([`pyramid`]).
//!
//! COLMAP's work (database, every model, loop pairs, extracted frames) stays in `DATASET/colmap/`,
//! everything the tools print in `DATASET/prepare.log`. Running again on the same folder starts over:
//! what an earlier `splat prepare` wrote there is replaced, and a folder holding anything else is
//! refused, so nothing of the user's is overwritten. COLMAP's multi-threaded RANSAC and bundle
//! adjustment can give slightly different poses from run to run; splat's own steps are deterministic.

pub mod align;
pub mod colmap;
pub mod loops;
pub mod masks;
pub mod matcher;
pub mod pyramid;
pub mod sharpness;
pub mod tools;
pub mod video;

use std::path::{Path, PathBuf};
use std::time::Instant;

use splat_io::dataset::DatasetError;

pub use colmap::{CameraModel, Matcher};
pub use video::FrameRate;

use tools::{Log, Tool};

/// Photo sets up to this size are matched exhaustively by default.
pub const EXHAUSTIVE_MAX: usize = 150;

/// What usually helps when too few photos register.
const PHOTO_ADVICE: &str = "more overlap between photos (every part of the scene in three or more, \
     taken from nearby positions), sharper photos, textured rather than plain or shiny surfaces, and \
     for photos in capture order --matcher exhaustive";
/// What usually helps when too few frames of a video register.
const VIDEO_ADVICE: &str = "move around the subject while filming (a camera that stands still or \
     only turns on the spot sees no depth), slowly enough for sharp frames, over textured rather \
     than plain or shiny surfaces";

/// What can go wrong, each naming the file, the program or the count involved.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    #[error(
        "{name} is not installed (looked for {}); install it with `apt-get install {package}` \
         (Debian, Ubuntu) or give its path with --{name}",
        looked_for.display()
    )]
    MissingTool {
        name: &'static str,
        package: &'static str,
        looked_for: PathBuf,
    },
    #[error("{message} (everything it printed is in {})", log.display())]
    ToolFailed {
        name: &'static str,
        message: String,
        log: PathBuf,
    },
    #[error("{}: no images here (looked for .jpg, .jpeg and .png files, and in an images/ folder)", path.display())]
    NoImages { path: PathBuf },
    #[error("{}: not a video ffmpeg can read: {why}", path.display())]
    UnreadableVideo { path: PathBuf, why: String },
    #[error("{}: {message}", path.display())]
    BadInput { path: PathBuf, message: String },
    #[error(
        "only {registered} of {total} {what} were registered (at least {needed} are needed). What \
         usually helps: {advice}. COLMAP's output is in {}",
        log.display()
    )]
    TooFewRegistered {
        registered: usize,
        total: usize,
        needed: usize,
        /// "images" or "frames".
        what: &'static str,
        advice: &'static str,
        log: PathBuf,
    },
    #[error(
        "{}: holds {entry:?}, which splat prepare did not write; give a new or empty folder to --out",
        path.display()
    )]
    NotOurs { path: PathBuf, entry: String },
}

impl PrepareError {
    /// An I/O error at `path`; a full disk (or a file-size limit) says so and what to do.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        use std::io::ErrorKind::{FileTooLarge, StorageFull};
        let source = match source.kind() {
            StorageFull | FileTooLarge => std::io::Error::new(
                source.kind(),
                format!("{source}: the disk is full (or a file-size limit was reached); free some space and run again"),
            ),
            _ => source,
        };
        PrepareError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Progress, as stages start, advance and end.
#[derive(Clone, Debug)]
pub enum Event {
    /// A stage starts; `total` is 0 when not known yet.
    Start {
        stage: &'static str,
        total: u64,
    },
    /// The stage's total became known.
    Total {
        total: u64,
    },
    Advance {
        done: u64,
    },
    /// The stage ended; what it did, with its counts.
    Done {
        summary: String,
    },
    Note {
        message: String,
    },
}

/// Programs `splat prepare` runs; `None` looks them up on `PATH`.
#[derive(Clone, Debug, Default)]
pub struct ToolPaths {
    pub colmap: Option<PathBuf>,
    pub ffmpeg: Option<PathBuf>,
    pub ffprobe: Option<PathBuf>,
}

#[derive(Clone, Debug)]
pub struct PrepareOptions {
    pub camera_model: CameraModel,
    pub single_camera: bool,
    /// `None`: exhaustive for up to [`EXHAUSTIVE_MAX`] photos, else sequential; sequential for video.
    pub matcher: Option<Matcher>,
    pub frames: FrameRate,
    pub vocab_tree: Option<PathBuf>,
    /// COLMAP's own descriptor matching instead of [`matcher`]'s (the same matches, slower).
    pub colmap_matching: bool,
    /// Threads for COLMAP (`None`: all).
    pub threads: Option<usize>,
    /// Least share of the images that must be registered.
    pub min_registered: f64,
    pub tools: ToolPaths,
}

impl Default for PrepareOptions {
    fn default() -> Self {
        PrepareOptions {
            camera_model: CameraModel::SimpleRadial,
            single_camera: true,
            matcher: None,
            frames: FrameRate::default(),
            vocab_tree: None,
            colmap_matching: false,
            threads: None,
            min_registered: 0.5,
            tools: ToolPaths::default(),
        }
    }
}

/// What `prepare` made.
#[derive(Clone, Debug)]
pub struct Summary {
    pub images: usize,
    pub registered: usize,
    pub points: u64,
    pub reprojection_error_px: Option<f64>,
    pub matcher: Matcher,
    pub pairs_tried: u64,
    pub pairs_verified: Option<u64>,
    /// Seconds per stage, in order.
    pub seconds: Vec<(&'static str, f64)>,
}

/// What `DATASET` holds that splat prepare writes.
const OURS: [&str; 8] = [
    "prepare.log",
    "colmap",
    "sparse",
    "images",
    "masks",
    "images_2",
    "images_4",
    "images_8",
];

/// Where the photos come from.
enum Source {
    /// A folder of photos, copied to `DATASET/images` unless it is that folder.
    Photos {
        dir: PathBuf,
        names: Vec<String>,
    },
    Video(PathBuf),
}

fn resolve_input(input: &Path) -> Result<Source, PrepareError> {
    if input.is_file() {
        let ext = input
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        if ["jpg", "jpeg", "png"].contains(&ext.as_str()) {
            return Err(PrepareError::BadInput {
                path: input.to_path_buf(),
                message: "one photo: give the folder that holds the photos".into(),
            });
        }
        return Ok(Source::Video(input.to_path_buf()));
    }
    if !input.is_dir() {
        return Err(PrepareError::io(
            input,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or folder"),
        ));
    }
    for dir in [input.to_path_buf(), input.join("images")] {
        if dir.is_dir() {
            let names = splat_io::dataset::list_images(&dir)?;
            if !names.is_empty() {
                return Ok(Source::Photos { dir, names });
            }
        }
    }
    Err(PrepareError::NoImages {
        path: input.to_path_buf(),
    })
}

/// Makes `out` ready: created, checked to hold only what splat prepare writes (or the input photos
/// in `out/images`), and cleared of an earlier run's outputs.
fn make_room(out: &Path, photos_in_place: bool) -> Result<(), PrepareError> {
    std::fs::create_dir_all(out).map_err(|e| PrepareError::io(out, e))?;
    let ours = out.join("prepare.log").is_file();
    let entries = std::fs::read_dir(out).map_err(|e| PrepareError::io(out, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| PrepareError::io(out, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let in_place = photos_in_place && (name == "images" || name == "masks");
        let allowed = in_place || (ours && OURS.contains(&name.as_str()));
        if !allowed {
            return Err(PrepareError::NotOurs {
                path: out.to_path_buf(),
                entry: name,
            });
        }
    }
    for name in OURS.iter().skip(1) {
        if (*name == "images" || *name == "masks") && photos_in_place {
            continue;
        }
        let p = out.join(name);
        if p.is_dir() {
            std::fs::remove_dir_all(&p).map_err(|e| PrepareError::io(&p, e))?;
        }
    }
    Ok(())
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Runs the whole pipeline from `input` (a folder of photos or a video) into the dataset folder `out`.
pub fn prepare(
    input: &Path,
    out: &Path,
    opts: &PrepareOptions,
    events: &mut dyn FnMut(Event),
) -> Result<Summary, PrepareError> {
    let source = resolve_input(input)?;
    // Every program is found before anything is written.
    let colmap = Tool::find("colmap", "colmap", opts.tools.colmap.as_deref())?;
    let video_tools = match &source {
        Source::Video(_) => Some((
            Tool::find("ffmpeg", "ffmpeg", opts.tools.ffmpeg.as_deref())?,
            Tool::find("ffprobe", "ffmpeg", opts.tools.ffprobe.as_deref())?,
        )),
        Source::Photos { .. } => None,
    };
    let images = out.join("images");
    let in_place = matches!(&source, Source::Photos { dir, .. } if same_dir(dir, &images));
    make_room(out, in_place)?;
    let work = out.join("colmap");
    std::fs::create_dir_all(&work).map_err(|e| PrepareError::io(&work, e))?;
    let mut log = Log::create(&out.join("prepare.log"))?;
    log.line(&format!(
        "splat prepare {} --out {}",
        input.display(),
        out.display()
    ))?;
    let mut run = Stages {
        colmap,
        images,
        work,
        log,
        events,
        seconds: Vec::new(),
    };
    let masks_from = match &source {
        Source::Photos { dir, .. } => masks::find_input_masks(input, dir),
        Source::Video(_) => None,
    };
    let (names, is_video) = run.gather(source, video_tools, in_place, opts.frames)?;
    let mask_path = match masks_from {
        Some(from) => {
            masks::copy_masks(&from, &out.join("masks"), &run.images, &names, run.events)?
        }
        None => None,
    };
    let settings = colmap::ColmapSettings {
        camera_model: opts.camera_model,
        single_camera: opts.single_camera && same_size(&run.images, &names, run.events)?,
        vocab_tree: opts.vocab_tree.clone(),
        threads: opts.threads.map_or(-1, |t| t as i64),
        mask_path,
        video_frames: is_video,
        colmap_matching: opts.colmap_matching,
    };
    let matcher = opts
        .matcher
        .unwrap_or(if is_video || names.len() > EXHAUSTIVE_MAX {
            Matcher::Sequential
        } else {
            Matcher::Exhaustive
        });
    let (tried, mapper) = run.structure_from_motion(&names, &settings, matcher)?;
    let verified = mapper
        .pairs_loaded
        .map(|n| n - mapper.pairs_ignored.unwrap_or(0).min(n));
    let (registered, stats) =
        run.install_largest_model(&names, opts.min_registered, verified, out, is_video)?;
    let t = Instant::now();
    (run.events)(Event::Start {
        stage: "images_2/4/8",
        total: 0,
    });
    pyramid::write_pyramid(out, &names)?;
    run.seconds
        .push(("images_2/4/8", t.elapsed().as_secs_f64()));
    (run.events)(Event::Done {
        summary: "images_2, images_4 and images_8 written".into(),
    });
    run.log.line("done")?;
    Ok(Summary {
        images: names.len(),
        registered,
        points: stats.points,
        reprojection_error_px: stats.reprojection_error_px,
        matcher,
        pairs_tried: tried,
        pairs_verified: verified,
        seconds: run.seconds,
    })
}

/// What the stages share: COLMAP, the folders, the log, progress and stage times.
struct Stages<'a> {
    colmap: Tool,
    images: PathBuf,
    work: PathBuf,
    log: Log,
    events: &'a mut dyn FnMut(Event),
    seconds: Vec<(&'static str, f64)>,
}

impl Stages<'_> {
    /// The photos in `images/` (copied there, or frames extracted there) and whether they are video
    /// frames.
    fn gather(
        &mut self,
        source: Source,
        video_tools: Option<(Tool, Tool)>,
        in_place: bool,
        frames: FrameRate,
    ) -> Result<(Vec<String>, bool), PrepareError> {
        let t = Instant::now();
        let (names, is_video) = match (source, video_tools) {
            (Source::Video(video), Some((ffmpeg, ffprobe))) => {
                let frames = video::extract(
                    (&ffmpeg, &ffprobe),
                    &video,
                    frames,
                    &self.work.join("frames"),
                    &self.images,
                    &mut self.log,
                    self.events,
                )?;
                self.seconds.push(("frames", t.elapsed().as_secs_f64()));
                let names = frames
                    .kept
                    .iter()
                    .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .collect();
                (names, true)
            }
            (Source::Photos { dir, names }, _) => {
                if !in_place {
                    copy_photos(&dir, &self.images, &names)?;
                }
                (names, false)
            }
            (Source::Video(_), None) => unreachable!("video tools are found for a video"),
        };
        (self.events)(Event::Note {
            message: format!(
                "{} {} in {}",
                names.len(),
                if is_video { "frames" } else { "photos" },
                self.images.display()
            ),
        });
        Ok((names, is_video))
    }

    /// Features, matching and mapping; the pairs tried and what the mapper said.
    fn structure_from_motion(
        &mut self,
        names: &[String],
        settings: &colmap::ColmapSettings,
        matcher: Matcher,
    ) -> Result<(u64, colmap::MapperStats), PrepareError> {
        let db = self.work.join("database.db");
        let t = Instant::now();
        let (colmap, images, log) = (&self.colmap, &self.images, &mut self.log);
        colmap::extract_features(colmap, &db, images, names.len(), settings, log, self.events)?;
        self.seconds.push(("features", t.elapsed().as_secs_f64()));
        let t = Instant::now();
        let tried = colmap::match_features(
            colmap,
            &db,
            images,
            names,
            matcher,
            settings,
            &self.work,
            log,
            self.events,
        )?;
        self.seconds.push(("matching", t.elapsed().as_secs_f64()));
        (self.events)(Event::Done {
            summary: format!("{}: {tried} image pairs tried", matcher.name()),
        });
        let t = Instant::now();
        let models = self.work.join("sparse");
        let mapped = colmap::map(
            colmap,
            &db,
            images,
            &models,
            names.len(),
            settings,
            log,
            self.events,
        );
        // COLMAP's mapper fails outright when no pair matched: that is none registered.
        let mapper = match mapped {
            Err(PrepareError::ToolFailed { .. }) if colmap::largest_model(&models).is_none() => {
                colmap::MapperStats::default()
            }
            r => r?,
        };
        self.seconds.push(("mapping", t.elapsed().as_secs_f64()));
        Ok((tried, mapper))
    }

    /// The model with the most registered images as `out/sparse/0`, or the error that too few are.
    fn install_largest_model(
        &mut self,
        names: &[String],
        min_registered: f64,
        verified: Option<u64>,
        out: &Path,
        video: bool,
    ) -> Result<(usize, colmap::ModelStats), PrepareError> {
        let needed = ((min_registered * names.len() as f64).ceil() as usize)
            .max(3)
            .min(names.len());
        let best = colmap::largest_model(&self.work.join("sparse"));
        let registered = best.as_ref().map_or(0, |b| b.1);
        let Some((model, _)) = best.filter(|_| registered >= needed) else {
            let (what, advice) = match video {
                true => ("frames", VIDEO_ADVICE),
                false => ("images", PHOTO_ADVICE),
            };
            return Err(PrepareError::TooFewRegistered {
                registered,
                total: names.len(),
                needed,
                what,
                advice,
                log: self.log.path().to_path_buf(),
            });
        };
        let stats = colmap::analyze(&self.colmap, &model, &mut self.log)?;
        (self.events)(Event::Done {
            summary: format!(
                "{registered} of {} images registered, {} points{}; {} image pairs with verified geometry",
                names.len(),
                stats.points,
                stats
                    .reprojection_error_px
                    .map_or(String::new(), |e| format!(", mean reprojection error {e:.2} px")),
                verified.map_or("?".into(), |v| v.to_string())
            ),
        });
        install_model(&model, &out.join("sparse").join("0"))?;
        Ok((registered, stats))
    }
}

fn copy_photos(from: &Path, to: &Path, names: &[String]) -> Result<(), PrepareError> {
    std::fs::create_dir_all(to).map_err(|e| PrepareError::io(to, e))?;
    for name in names {
        let (src, dst) = (from.join(name), to.join(name));
        // Reading the photo rarely fails (it was listed); the write is what a full disk stops.
        std::fs::copy(&src, &dst).map_err(|e| PrepareError::io(&dst, e))?;
    }
    Ok(())
}

/// Whether every photo has the size of the first (a shared camera needs it); unreadable files are
/// an error naming them.
fn same_size(
    dir: &Path,
    names: &[String],
    events: &mut dyn FnMut(Event),
) -> Result<bool, PrepareError> {
    let mut sizes = std::collections::BTreeSet::new();
    for name in names {
        let p = dir.join(name);
        let size = image::image_dimensions(&p).map_err(|e| PrepareError::BadInput {
            path: p.clone(),
            message: format!("not an image splat can read: {e}"),
        })?;
        sizes.insert(size);
    }
    if sizes.len() > 1 {
        events(Event::Note {
            message: format!(
                "the photos come in {} sizes: one camera per photo instead of a shared one",
                sizes.len()
            ),
        });
    }
    Ok(sizes.len() <= 1)
}

/// Copies the model's files into `dst` (each written atomically).
fn install_model(model: &Path, dst: &Path) -> Result<(), PrepareError> {
    std::fs::create_dir_all(dst).map_err(|e| PrepareError::io(dst, e))?;
    for entry in std::fs::read_dir(model).map_err(|e| PrepareError::io(model, e))? {
        let path = entry.map_err(|e| PrepareError::io(model, e))?.path();
        if path.is_file() {
            let bytes = std::fs::read(&path).map_err(|e| PrepareError::io(&path, e))?;
            let to = dst.join(path.file_name().expect("a file"));
            splat_io::write_atomic(&to, &bytes).map_err(|e| PrepareError::io(&to, e))?;
        }
    }
    Ok(())
}
