//! The COLMAP stages: SIFT feature extraction, matching with geometric verification, incremental
//! mapping, then the statistics of the model. All on the CPU (`use_gpu 0`: Debian's COLMAP is built
//! without CUDA). Progress comes from COLMAP's own lines: `Processed file [i/n]`, `Matching block
//! [i/n, j/n]`, `Matching image [i/n]`, `Registering image #id (k)`.

use std::path::{Path, PathBuf};

use crate::tools::{bracket_count, run, Log, Tool};
use crate::{Event, PrepareError};

/// COLMAP camera models `splat prepare` offers (all of them `splat train` reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CameraModel {
    SimplePinhole,
    Pinhole,
    SimpleRadial,
    Radial,
    Opencv,
    /// Fisheye lenses (action cameras, wide phone lenses): `splat train` renders them natively.
    OpencvFisheye,
    SimpleRadialFisheye,
    RadialFisheye,
}

impl CameraModel {
    pub fn colmap_name(self) -> &'static str {
        match self {
            CameraModel::SimplePinhole => "SIMPLE_PINHOLE",
            CameraModel::Pinhole => "PINHOLE",
            CameraModel::SimpleRadial => "SIMPLE_RADIAL",
            CameraModel::Radial => "RADIAL",
            CameraModel::Opencv => "OPENCV",
            CameraModel::OpencvFisheye => "OPENCV_FISHEYE",
            CameraModel::SimpleRadialFisheye => "SIMPLE_RADIAL_FISHEYE",
            CameraModel::RadialFisheye => "RADIAL_FISHEYE",
        }
    }
}

/// How image pairs are chosen for matching.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Matcher {
    /// Every pair: best for unordered photos, quadratic in their number.
    Exhaustive,
    /// Each frame with its neighbours in order (10, then 2^k further), plus loop pairs.
    Sequential,
}

impl Matcher {
    pub fn name(self) -> &'static str {
        match self {
            Matcher::Exhaustive => "exhaustive",
            Matcher::Sequential => "sequential",
        }
    }
}

/// Neighbours each frame is matched with by the sequential matcher (COLMAP's default).
pub const SEQUENTIAL_OVERLAP: usize = 10;

/// Settings of the COLMAP stages.
#[derive(Clone, Debug)]
pub struct ColmapSettings {
    pub camera_model: CameraModel,
    /// One camera shared by all images (a single device and zoom), else one per image.
    pub single_camera: bool,
    /// COLMAP's vocabulary tree for its own loop detection in sequential matching; without one,
    /// [`crate::loops`] proposes the loop pairs.
    pub vocab_tree: Option<PathBuf>,
    /// Threads COLMAP uses (`-1`: all).
    pub threads: i64,
    /// Masks (`NAME.png` per image, black = no features there), COLMAP's `ImageReader.mask_path`.
    pub mask_path: Option<PathBuf>,
    /// The images are a video's frames: extract and map with [`VIDEO_EXTRACTION`] and
    /// [`VIDEO_MAPPER`].
    pub video_frames: bool,
    /// Match descriptors with COLMAP's own matcher instead of [`crate::matcher`] (for comparisons;
    /// COLMAP verifies the pairs either way).
    pub colmap_matching: bool,
}

/// SIFT options for video frames: COLMAP's automatic reconstructor at `--quality medium` (its
/// `ModifyForMediumQuality`): at most 1,600 pixels on the long side and 4,096 features per frame.
/// Matching a pair takes time in proportion to the product of the two frames' features (splat's
/// brute-force search, [`crate::matcher`]), and neighbouring frames share most of their view, so
/// fewer features suffice.
pub const VIDEO_EXTRACTION: [(&str, &str); 2] = [
    ("SiftExtraction.max_image_size", "1600"),
    ("SiftExtraction.max_num_features", "4096"),
];

/// Mapper options for video frames: COLMAP's automatic reconstructor for video data at medium
/// quality (`ModifyForVideoData` then `ModifyForMediumQuality`): a wider initial triangulation
/// angle (neighbouring frames have short baselines), global bundle adjustment only after the
/// model grew by 54% (not 10%), and fewer adjustment iterations. Mapping 21 -> 13 s and 37 -> 13 s on
/// the two videos here at the same registration and reprojection error (NOTES.md).
pub const VIDEO_MAPPER: [(&str, &str); 6] = [
    ("Mapper.init_min_tri_angle", "8"),
    ("Mapper.ba_global_images_ratio", "1.54"),
    ("Mapper.ba_global_points_ratio", "1.54"),
    ("Mapper.ba_local_max_num_iterations", "16"),
    ("Mapper.ba_global_max_num_iterations", "33"),
    ("Mapper.ba_global_max_refinements", "2"),
];

fn video_options(on: bool, table: &[(&str, &str)]) -> Vec<[String; 2]> {
    match on {
        true => table.iter().map(|(k, v)| arg(k, v)).collect(),
        false => Vec::new(),
    }
}

fn arg(name: &str, value: impl std::fmt::Display) -> [String; 2] {
    [format!("--{name}"), value.to_string()]
}

/// `colmap SUBCOMMAND --option value ...` as arguments.
fn command(subcommand: &str, options: &[[String; 2]]) -> Vec<String> {
    std::iter::once(subcommand.to_string())
        .chain(options.iter().flatten().cloned())
        .collect()
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// SIFT features of every image of `images` into the database `db`.
pub fn extract_features(
    colmap: &Tool,
    db: &Path,
    images: &Path,
    count: usize,
    settings: &ColmapSettings,
    log: &mut Log,
    events: &mut dyn FnMut(Event),
) -> Result<(), PrepareError> {
    events(Event::Start {
        stage: "features",
        total: count as u64,
    });
    let mut options = vec![
        arg("database_path", path_str(db)),
        arg("image_path", path_str(images)),
        arg(
            "ImageReader.camera_model",
            settings.camera_model.colmap_name(),
        ),
        arg("ImageReader.single_camera", settings.single_camera as u8),
        arg("SiftExtraction.use_gpu", 0),
        arg("SiftExtraction.num_threads", settings.threads),
    ];
    if let Some(m) = &settings.mask_path {
        options.push(arg("ImageReader.mask_path", path_str(m)));
    }
    options.extend(video_options(settings.video_frames, &VIDEO_EXTRACTION));
    let args = command("feature_extractor", &options);
    let mut features = Vec::new();
    run(colmap, &args, log, &mut |line| {
        if let Some((done, _)) = bracket_count(line, "Processed file") {
            events(Event::Advance { done });
        } else if let Some(n) = line.trim().strip_prefix("Features:") {
            features.extend(n.trim().parse::<u64>().ok());
        }
    })?;
    let mean = features.iter().sum::<u64>() / features.len().max(1) as u64;
    events(Event::Done {
        summary: format!(
            "SIFT features of {} images ({} camera{}), {mean} per image on average",
            features.len(),
            settings.camera_model.colmap_name(),
            if settings.single_camera {
                ", one shared"
            } else {
                "s, one per image"
            }
        ),
    });
    Ok(())
}

/// Matches the images of `db` and verifies each pair's geometry. `names` are the image file names in
/// capture order (for the loop pairs of sequential matching). Returns the number of pairs tried.
pub fn match_features(
    colmap: &Tool,
    db: &Path,
    images: &Path,
    names: &[String],
    matcher: Matcher,
    settings: &ColmapSettings,
    work: &Path,
    log: &mut Log,
    events: &mut dyn FnMut(Event),
) -> Result<u64, PrepareError> {
    let n = names.len();
    let common = [
        arg("database_path", path_str(db)),
        arg("SiftMatching.use_gpu", 0),
        arg("SiftMatching.num_threads", settings.threads),
    ];
    // COLMAP's own loop detection (a vocabulary tree) needs its own sequential matcher.
    let colmap_loops = matcher == Matcher::Sequential && settings.vocab_tree.is_some();
    if !(settings.colmap_matching || colmap_loops) {
        let ours = OursToVerify {
            colmap,
            common: &common,
            db,
            work,
        };
        return ours.run(images, names, matcher, log, events);
    }
    let mut tried;
    match matcher {
        Matcher::Exhaustive => {
            tried = (n * n.saturating_sub(1) / 2) as u64;
            let args = command("exhaustive_matcher", &common);
            events(Event::Start {
                stage: "matching",
                total: 0,
            });
            run(colmap, &args, log, &mut |line| {
                if let Some((i, blocks)) = bracket_count(line, "Matching block") {
                    let j = line
                        .split(", ")
                        .nth(1)
                        .and_then(|r| r.split('/').next())
                        .and_then(|j| j.trim().parse::<u64>().ok())
                        .unwrap_or(1);
                    events(Event::Total {
                        total: blocks * blocks,
                    });
                    events(Event::Advance {
                        done: (i - 1) * blocks + j,
                    });
                }
            })?;
        }
        Matcher::Sequential => {
            let loop_detection = settings.vocab_tree.is_some();
            let mut args = command("sequential_matcher", &common);
            args.extend(arg("SequentialMatching.overlap", SEQUENTIAL_OVERLAP));
            args.extend(arg("SequentialMatching.quadratic_overlap", 1));
            args.extend(arg(
                "SequentialMatching.loop_detection",
                loop_detection as u8,
            ));
            if let Some(tree) = &settings.vocab_tree {
                args.extend(arg("SequentialMatching.vocab_tree_path", path_str(tree)));
            }
            events(Event::Start {
                stage: "matching",
                total: n as u64,
            });
            run(colmap, &args, log, &mut |line| {
                if let Some((done, _)) = bracket_count(line, "Matching image") {
                    events(Event::Advance { done });
                }
            })?;
            tried = sequential_pairs(n);
            if !loop_detection {
                tried += match_loop_pairs(colmap, &common, images, names, work, log, events)?;
            }
        }
    }
    Ok(tried)
}

/// Our matcher ([`crate::matcher`]) on the pairs COLMAP's would try, then COLMAP's verification of
/// them (`matches_importer --match_type raw`).
struct OursToVerify<'a> {
    colmap: &'a Tool,
    common: &'a [[String; 2]],
    db: &'a Path,
    work: &'a Path,
}

impl OursToVerify<'_> {
    fn run(
        &self,
        images: &Path,
        names: &[String],
        matcher: Matcher,
        log: &mut Log,
        events: &mut dyn FnMut(Event),
    ) -> Result<u64, PrepareError> {
        let n = names.len();
        let (mut pairs, loops) = match matcher {
            Matcher::Exhaustive => {
                let all = (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j)));
                (all.collect::<Vec<_>>(), Vec::new())
            }
            Matcher::Sequential => (sequential_pair_list(n), proposed_loop_pairs(images, names)?),
        };
        let known: std::collections::HashSet<(usize, usize)> = pairs.iter().copied().collect();
        pairs.extend(loops.iter().filter(|p| !known.contains(p)));
        events(Event::Start {
            stage: "matching",
            total: pairs.len() as u64,
        });
        let database = crate::matcher::read_database(self.db)?;
        let named: Vec<(String, String)> = pairs
            .iter()
            .map(|&(i, j)| (names[i].clone(), names[j].clone()))
            .collect();
        let list = self.work.join("raw_matches.txt");
        let options = crate::matcher::MatchOptions::default();
        let mut advance = |done: usize| events(Event::Advance { done: done as u64 });
        crate::matcher::match_pairs_to_file(&database, &named, &options, &list, &mut advance)?;
        log.line(&format!(
            "{} pairs matched by splat ({} loop pairs by thumbnail similarity), verified by COLMAP: {}",
            pairs.len(),
            loops.len(),
            list.display()
        ))?;
        let mut args = command("matches_importer", self.common);
        args.extend(arg("match_list_path", path_str(&list)));
        args.extend(arg("match_type", "raw"));
        run(self.colmap, &args, log, &mut |_| {})?;
        if !loops.is_empty() {
            events(Event::Note {
                message: format!(
                    "{} loop pairs proposed by thumbnail similarity (no vocabulary tree given)",
                    loops.len()
                ),
            });
        }
        Ok(pairs.len() as u64)
    }
}

/// Loop pairs (indices into `names`) proposed by thumbnail similarity.
fn proposed_loop_pairs(
    images: &Path,
    names: &[String],
) -> Result<Vec<(usize, usize)>, PrepareError> {
    use rayon::prelude::*;
    let thumbs = names
        .par_iter()
        .map(|n| crate::loops::thumbnail(&images.join(n)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(crate::loops::loop_pairs(&thumbs, SEQUENTIAL_OVERLAP))
}

/// Pairs COLMAP's sequential matcher tries: each frame with the next `SEQUENTIAL_OVERLAP` and with
/// the frames 2^k further (quadratic overlap), `k` from 0 up to the overlap.
pub fn sequential_pairs(n: usize) -> u64 {
    sequential_pair_list(n).len() as u64
}

/// [`sequential_pairs`]' pairs, in order.
pub fn sequential_pair_list(n: usize) -> Vec<(usize, usize)> {
    let mut pairs = std::collections::BTreeSet::new();
    for i in 0..n {
        for k in 1..=SEQUENTIAL_OVERLAP {
            if i + k < n {
                pairs.insert((i, i + k));
            }
            let q = 1usize << (k - 1);
            if i + q < n {
                pairs.insert((i, i + q));
            }
        }
    }
    pairs.into_iter().collect()
}

/// Proposes loop pairs by thumbnail similarity and has COLMAP match and verify them.
fn match_loop_pairs(
    colmap: &Tool,
    common: &[[String; 2]],
    images: &Path,
    names: &[String],
    work: &Path,
    log: &mut Log,
    events: &mut dyn FnMut(Event),
) -> Result<u64, PrepareError> {
    let pairs = proposed_loop_pairs(images, names)?;
    if pairs.is_empty() {
        return Ok(0);
    }
    let list = work.join("loop_pairs.txt");
    let text: String = pairs
        .iter()
        .map(|&(i, j)| format!("{} {}\n", names[i], names[j]))
        .collect();
    splat_io::write_atomic(&list, text.as_bytes()).map_err(|e| PrepareError::io(&list, e))?;
    log.line(&format!(
        "loop pairs by thumbnail similarity: {} (in {})",
        pairs.len(),
        list.display()
    ))?;
    let mut args = command("matches_importer", common);
    args.extend(arg("match_list_path", path_str(&list)));
    args.extend(arg("match_type", "pairs"));
    run(colmap, &args, log, &mut |_| {})?;
    events(Event::Note {
        message: format!(
            "{} loop pairs proposed by thumbnail similarity (no vocabulary tree given)",
            pairs.len()
        ),
    });
    Ok(pairs.len() as u64)
}

/// What the mapper made of the database.
#[derive(Clone, Debug, Default)]
pub struct MapperStats {
    /// Image pairs with verified geometry, and those COLMAP ignored for too few inliers.
    pub pairs_loaded: Option<u64>,
    pub pairs_ignored: Option<u64>,
    /// Images with at least one verified pair.
    pub connected: Option<u64>,
}

/// Incremental mapping into `out` (`out/0`, `out/1`, ... one folder per model).
pub fn map(
    colmap: &Tool,
    db: &Path,
    images: &Path,
    out: &Path,
    count: usize,
    settings: &ColmapSettings,
    log: &mut Log,
    events: &mut dyn FnMut(Event),
) -> Result<MapperStats, PrepareError> {
    std::fs::create_dir_all(out).map_err(|e| PrepareError::io(out, e))?;
    events(Event::Start {
        stage: "mapping",
        total: count as u64,
    });
    let mut options = vec![
        arg("database_path", path_str(db)),
        arg("image_path", path_str(images)),
        arg("output_path", path_str(out)),
        arg("Mapper.num_threads", settings.threads),
    ];
    options.extend(video_options(settings.video_frames, &VIDEO_MAPPER));
    let args = command("mapper", &options);
    let mut stats = MapperStats::default();
    run(colmap, &args, log, &mut |line| {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("Registering image #") {
            if let Some(k) = rest
                .split_once('(')
                .and_then(|(_, k)| k.trim_end_matches(')').trim().parse().ok())
            {
                events(Event::Advance { done: k });
            }
        } else if let Some(rest) = line.strip_prefix("Loading matches...") {
            stats.pairs_loaded = first_number(rest);
        } else if let Some(rest) = line.strip_prefix("Loading images...") {
            stats.connected = rest
                .split_once("connected")
                .and_then(|(_, c)| first_number(c));
        } else if line.starts_with("Building correspondence graph") {
            stats.pairs_ignored = line
                .split_once("ignored")
                .and_then(|(_, c)| first_number(c));
        }
    })?;
    Ok(stats)
}

fn first_number(s: &str) -> Option<u64> {
    let digits: String = s
        .trim_start_matches(|c: char| !c.is_ascii_digit())
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// The statistics `colmap model_analyzer` prints of a model.
#[derive(Clone, Debug, Default)]
pub struct ModelStats {
    pub registered: u64,
    pub points: u64,
    pub reprojection_error_px: Option<f64>,
}

pub fn analyze(colmap: &Tool, model: &Path, log: &mut Log) -> Result<ModelStats, PrepareError> {
    let mut stats = ModelStats::default();
    let args = [
        "model_analyzer".to_string(),
        "--path".into(),
        path_str(model),
    ];
    run(colmap, &args, log, &mut |line| {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("Registered images:") {
            stats.registered = v.trim().parse().unwrap_or(0);
        } else if let Some(v) = line.strip_prefix("Points:") {
            stats.points = v.trim().parse().unwrap_or(0);
        } else if let Some(v) = line.strip_prefix("Mean reprojection error:") {
            stats.reprojection_error_px = v.trim().trim_end_matches("px").parse().ok();
        }
    })?;
    Ok(stats)
}

/// The model folder under `out` with the most registered images (and that count), if any.
pub fn largest_model(out: &Path) -> Option<(PathBuf, usize)> {
    let mut best: Option<(PathBuf, usize)> = None;
    for entry in std::fs::read_dir(out).ok()?.flatten() {
        let dir = entry.path();
        let Ok(model) = splat_io::dataset::colmap::read_model(&dir) else {
            continue;
        };
        let n = model.images.len();
        if best
            .as_ref()
            .is_none_or(|(p, m)| n > *m || (n == *m && dir < *p))
        {
            best = Some((dir, n));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_pair_count() {
        assert_eq!(sequential_pairs(1), 0);
        assert_eq!(sequential_pairs(3), 3);
        // 40 frames: 10 neighbours each (fewer at the end) plus the 2^k jumps of 16, 32, 64, ...
        let n = 40;
        let near: u64 = (0..n).map(|i: u64| (n - 1 - i).min(10)).sum();
        let far: u64 = [16u64, 32].iter().map(|&q| n - q).sum();
        assert_eq!(sequential_pairs(n as usize), near + far);
    }

    #[test]
    fn numbers_of_mapper_lines() {
        assert_eq!(first_number(" 412 in 0.012s"), Some(412));
        assert_eq!(
            first_number(
                " 40 in 0.0s (connected 38)"
                    .split_once("connected")
                    .unwrap()
                    .1
            ),
            Some(38)
        );
        assert_eq!(first_number("none"), None);
    }
}
