//! `splat scan`'s estimate of the time left for the whole scan, which each stage's own display
//! (prepare's stages, training's bar) shows beside its progress: `[2/3 train] scan: about 3 min left`.
//!
//! A stage that runs is timed by its own rate (training by its steps per second; a prepare stage
//! by its images done, and prepare's later stages by the share of prepare each took on the videos
//! measured here, [`PREPARE_SHARES`]). A stage that has not begun comes from a model of this
//! project's measurements on a 2-vCPU host, scaled to the cores: prepare
//! [`PREPARE_SECONDS_PER_IMAGE`] a frame, training [`TRAIN_SECONDS_PER_PIXEL_STEP`] per pixel of a view
//! and step, the page [`PAGE_SECONDS`] (BENCHMARKS.md, "From a video to a page"). Until the frames
//! of a video exist their size is taken as 720p. The figure is "about": a capture with more
//! texture matches longer, and more Gaussians train slower.
//!
//! The estimate lives in one place ([`SCAN`]) that `splat scan` sets per stage and the displays
//! read, so that `splat prepare` and `splat train` on their own show nothing of it.

use std::path::Path;
use std::sync::Mutex;

/// Prepare's seconds per image on 2 cores, the mean over the videos measured (the ray-traced room
/// at 640 x 360: 0.29-0.35; at 1280 x 720: 0.71; cup as a video, 800 x 600: 0.85).
pub const PREPARE_SECONDS_PER_IMAGE: f64 = 0.6;
/// Training's seconds per pixel of a view and per step on 2 cores, balanced preset (fern `images_8`
/// 5.3e-7, cup `images_4` 7.3e-7, the room at 320 x 180 8.9e-7).
pub const TRAIN_SECONDS_PER_PIXEL_STEP: f64 = 7.2e-7;
/// Writing scene.html (1 s for 92 k Gaussians, measured).
pub const PAGE_SECONDS: f64 = 2.0;
/// The share of prepare's time each of its stages took, the mean over the same three videos.
pub const PREPARE_SHARES: [(&str, f64); 5] = [
    ("frames", 0.02),
    ("features", 0.40),
    ("matching", 0.28),
    ("mapping", 0.29),
    ("images_2/4/8", 0.01),
];

/// What the displays need: the stage running, and the seconds expected of the stages after it.
#[derive(Clone, Debug)]
pub struct ScanStage {
    pub index: usize,
    pub name: &'static str,
    /// Seconds of the scan's stages after this one (for prepare: training and the page).
    pub later_seconds: f64,
    /// While prepare runs: what its estimate and training's are made from.
    pub prepare: Option<PrepareGuess>,
}

/// What the estimate of a scan's prepare stage, and of the training after it, are made from.
#[derive(Clone, Debug)]
pub struct PrepareGuess {
    /// The model's seconds for the whole of prepare (before a stage's rate is known).
    pub seconds: f64,
    /// Training's steps and `--downscale`, to estimate it once the images exist.
    pub train_steps: u64,
    pub downscale: Option<u32>,
    /// Training's `--time-budget`, which is its time whatever the images.
    pub train_budget: Option<f64>,
}

/// The scan's stage while `splat scan` runs; `None` otherwise.
static SCAN: Mutex<Option<ScanStage>> = Mutex::new(None);

pub fn set_stage(stage: Option<ScanStage>) {
    *SCAN.lock().unwrap_or_else(|e| e.into_inner()) = stage;
}

fn current() -> Option<ScanStage> {
    SCAN.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// 2 / the cores this process may use: the measurements' host had 2.
fn core_scale() -> f64 {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    2.0 / cores as f64
}

/// The model's seconds of prepare for `images` images.
pub fn prepare_model(images: usize) -> f64 {
    images as f64 * PREPARE_SECONDS_PER_IMAGE * core_scale()
}

/// The model's seconds of training: `steps` on views of `width x height` (before `--downscale`).
pub fn train_model(steps: u64, width: u32, height: u32, downscale: Option<u32>) -> f64 {
    let (w, h) = splat_io::dataset::decoded_size(width, height, downscale);
    steps as f64 * (w as f64 * h as f64) * TRAIN_SECONDS_PER_PIXEL_STEP * core_scale()
}

/// Prepare found its images in `dir`: training's estimate from their size replaces the 720p guess.
pub fn images_ready(dir: &Path) {
    let mut guard = SCAN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(stage) = guard.as_mut() else {
        return;
    };
    let Some(guess) = stage.prepare.as_ref().filter(|g| g.train_budget.is_none()) else {
        return;
    };
    let first = splat_io::dataset::list_images(dir)
        .ok()
        .and_then(|n| n.into_iter().next());
    if let Some((w, h)) = first.and_then(|n| image::image_dimensions(dir.join(n)).ok()) {
        stage.later_seconds = train_model(guess.train_steps, w, h, guess.downscale) + PAGE_SECONDS;
    }
}

/// The note for a display whose stage has `stage_left` seconds to go, or `None` outside a scan.
pub fn note(stage_left: f64) -> Option<String> {
    let s = current()?;
    Some(format_note(&s, stage_left + s.later_seconds))
}

/// The note for one of prepare's stages, `name`, with `stage_left` seconds of it to go when prepare
/// has run `prepare_elapsed` seconds (this stage's so far included): prepare's later stages by their
/// shares.
pub fn prepare_note(name: &str, prepare_elapsed: f64, stage_left: f64) -> Option<String> {
    let s = current()?;
    let position = PREPARE_SHARES.iter().position(|(n, _)| *n == name);
    let through: f64 = match position {
        Some(i) => PREPARE_SHARES[..=i].iter().map(|(_, v)| v).sum(),
        None => 0.0,
    };
    // The projection from the time so far is trusted once a fifth of prepare is behind.
    let total = match through >= 0.2 {
        true => (prepare_elapsed + stage_left) / through,
        false => (s.prepare.as_ref().map_or(0.0, |g| g.seconds)).max(prepare_elapsed + stage_left),
    };
    let after = total * (1.0 - through);
    Some(format_note(&s, stage_left + after + s.later_seconds))
}

fn format_note(s: &ScanStage, left: f64) -> String {
    format!(
        "[{}/3 {}] scan: about {} left",
        s.index,
        s.name,
        human_seconds(left)
    )
}

/// `45 s`, `3 min 20 s`, `1 h 05 min`.
pub fn human_seconds(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, s % 3600 / 60),
    }
}

/// Seconds left of a stage that did `done` of `total` in `elapsed` seconds (`None` before any).
pub fn left_by_rate(done: u64, total: u64, elapsed: f64) -> Option<f64> {
    (done > 0).then(|| elapsed / done as f64 * total.saturating_sub(done) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_seconds_reads_as_a_person_would() {
        assert_eq!(human_seconds(44.6), "45 s");
        assert_eq!(human_seconds(200.0), "3 min 20 s");
        assert_eq!(human_seconds(3900.0), "1 h 05 min");
        assert_eq!(human_seconds(-3.0), "0 s");
    }

    #[test]
    fn prepare_shares_sum_to_one_and_rates_project() {
        let sum: f64 = PREPARE_SHARES.iter().map(|(_, v)| v).sum();
        assert!((sum - 1.0).abs() < 1e-9);
        assert_eq!(left_by_rate(0, 10, 5.0), None);
        assert_eq!(left_by_rate(5, 10, 5.0), Some(5.0));
    }

    #[test]
    fn the_note_adds_the_later_stages_and_is_absent_outside_a_scan() {
        set_stage(None);
        assert!(note(10.0).is_none());
        set_stage(Some(ScanStage {
            index: 1,
            name: "prepare",
            later_seconds: 100.0,
            prepare: Some(PrepareGuess {
                seconds: 60.0,
                train_steps: 5000,
                downscale: None,
                train_budget: None,
            }),
        }));
        // Frames (2% of prepare): the model's 60 s holds until a fifth of prepare is behind.
        let early = prepare_note("frames", 2.0, 1.0).unwrap();
        assert!(early.contains("2 min 40 s"), "{early}");
        // Matching, 70% through: projected from the time so far, 115.7 s in all, 34.7 s after it.
        let mid = prepare_note("matching", 71.0, 10.0).unwrap();
        assert!(
            mid.contains("[1/3 prepare]") && mid.contains("2 min 25 s"),
            "{mid}"
        );
        assert!(note(20.0).unwrap().contains("2 min 00 s"));
        set_stage(None);
    }
}
