//! Frames from a video: ffprobe reads its length, ffmpeg samples it at a steady rate (a little more
//! often than asked), and of each run of neighbouring frames the blurriest is dropped
//! ([`crate::sharpness`]), so about the asked number of frames remain.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::sharpness::{keep_sharpest, laplacian_variance, RUN};
use crate::tools::{run, Log, Tool};
use crate::{Event, PrepareError};

/// How many frames to take from a video.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FrameRate {
    /// About this many frames over the whole video.
    Count(usize),
    /// About this many frames per second of video.
    PerSecond(f64),
}

impl Default for FrameRate {
    fn default() -> Self {
        FrameRate::Count(150)
    }
}

/// What ffprobe says of a video.
#[derive(Clone, Copy, Debug)]
pub struct Probe {
    pub duration: f64,
    /// Average frames per second, when the container says.
    pub frame_rate: Option<f64>,
}

/// Length and frame rate of the video, or an error saying it is not a video ffmpeg reads.
pub fn probe(ffprobe: &Tool, video: &Path, log: &mut Log) -> Result<Probe, PrepareError> {
    let mut lines = Vec::new();
    let args = [
        "-v".as_ref(),
        "error".as_ref(),
        "-select_streams".as_ref(),
        "v:0".as_ref(),
        "-show_entries".as_ref(),
        "stream=codec_type,avg_frame_rate:format=duration".as_ref(),
        "-of".as_ref(),
        "default=noprint_wrappers=1".as_ref(),
        video.as_os_str(),
    ];
    let unreadable = |why: String| PrepareError::UnreadableVideo {
        path: video.to_path_buf(),
        why,
    };
    run(ffprobe, &args, log, &mut |l| lines.push(l.to_string())).map_err(|e| match e {
        PrepareError::ToolFailed { message, .. } => unreadable(message),
        e => e,
    })?;
    if !lines.iter().any(|l| l.trim() == "codec_type=video") {
        return Err(unreadable("it has no video stream".into()));
    }
    let duration = lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("duration="))
        .and_then(|d| d.parse::<f64>().ok())
        .filter(|d| d.is_finite() && *d > 0.0)
        .ok_or_else(|| unreadable("ffprobe gives no duration for it".into()))?;
    let frame_rate = lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("avg_frame_rate="))
        .and_then(parse_rate);
    Ok(Probe {
        duration,
        frame_rate,
    })
}

/// `30000/1001` or `25` as frames per second; `0/0` (unknown) as `None`.
fn parse_rate(s: &str) -> Option<f64> {
    let r = match s.split_once('/') {
        Some((a, b)) => a.trim().parse::<f64>().ok()? / b.trim().parse::<f64>().ok()?,
        None => s.trim().parse().ok()?,
    };
    (r.is_finite() && r > 0.0).then_some(r)
}

/// The rate ffmpeg samples at: the asked rate, raised so that dropping one frame of each run leaves
/// it, and never above the video's own rate (that would only repeat frames).
pub fn sampling_rate(rate: FrameRate, probe: &Probe) -> f64 {
    let per_second = match rate {
        FrameRate::Count(n) => n.max(1) as f64 / probe.duration,
        FrameRate::PerSecond(f) => f,
    };
    let wanted = per_second * RUN as f64 / (RUN - 1) as f64;
    probe.frame_rate.map_or(wanted, |native| wanted.min(native))
}

/// What came of a video.
#[derive(Clone, Debug)]
pub struct Frames {
    pub extracted: usize,
    pub kept: Vec<PathBuf>,
    pub duration: f64,
}

/// Fewer frames than this from a video is refused before COLMAP runs (the blur filter keeps 4 of
/// each 5, and registering half of 8 frames says little about a scene).
pub const MIN_FRAMES: usize = 10;

/// Extracts frames of `video` into `work` (as `frame_00001.jpg`, ...) and moves the kept ones to
/// `images`; the dropped ones are deleted.
pub fn extract(
    tools: (&Tool, &Tool),
    video: &Path,
    rate: FrameRate,
    work: &Path,
    images: &Path,
    log: &mut Log,
    events: &mut dyn FnMut(Event),
) -> Result<Frames, PrepareError> {
    let (ffmpeg, ffprobe) = tools;
    let probe = probe(ffprobe, video, log)?;
    let (duration, fps) = (probe.duration, sampling_rate(rate, &probe));
    if probe.frame_rate.is_some_and(|native| fps >= native) {
        events(Event::Note {
            message: format!(
                "the video has fewer frames than asked for: taking every frame ({fps:.2} per second)"
            ),
        });
    }
    let expected = (duration * fps).ceil() as u64;
    for d in [work, images] {
        std::fs::create_dir_all(d).map_err(|e| PrepareError::io(d, e))?;
    }
    events(Event::Start {
        stage: "frames",
        total: expected,
    });
    let pattern = work.join("frame_%05d.jpg");
    let filter = format!("fps={fps:.6}");
    let args = [
        "-nostdin".as_ref(),
        "-hide_banner".as_ref(),
        "-loglevel".as_ref(),
        "error".as_ref(),
        "-progress".as_ref(),
        "pipe:1".as_ref(),
        "-i".as_ref(),
        video.as_os_str(),
        "-vf".as_ref(),
        filter.as_ref(),
        "-q:v".as_ref(),
        "2".as_ref(),
        "-start_number".as_ref(),
        "1".as_ref(),
        pattern.as_os_str(),
    ];
    run(ffmpeg, &args, log, &mut |line| {
        if let Some(n) = line
            .strip_prefix("frame=")
            .and_then(|n| n.trim().parse().ok())
        {
            events(Event::Advance { done: n });
        }
    })
    .map_err(|e| match e {
        PrepareError::ToolFailed { message, .. } => PrepareError::UnreadableVideo {
            path: video.to_path_buf(),
            why: message,
        },
        e => e,
    })?;
    let mut frames = splat_io::dataset::list_images(work)?;
    frames.retain(|n| n.starts_with("frame_"));
    if frames.is_empty() {
        return Err(PrepareError::UnreadableVideo {
            path: video.to_path_buf(),
            why: "ffmpeg wrote no frames".into(),
        });
    }
    if frames.len() < MIN_FRAMES {
        return Err(PrepareError::BadInput {
            path: video.to_path_buf(),
            message: format!(
                "{duration:.1} s of video gave only {} frames, and a capture needs at least \
                 {MIN_FRAMES}: film 10-30 s while moving around the subject",
                frames.len()
            ),
        });
    }
    let sharpness: Vec<f64> = frames
        .par_iter()
        .map(|name| {
            let path = work.join(name);
            image::open(&path)
                .map(|img| {
                    let rgb = img.to_rgb8();
                    laplacian_variance(rgb.width(), rgb.height(), rgb.as_raw())
                })
                .unwrap_or(f64::NAN)
        })
        .collect();
    let keep = keep_sharpest(&sharpness);
    let mut kept = Vec::with_capacity(keep.len());
    let mut next = keep.iter().peekable();
    for (i, name) in frames.iter().enumerate() {
        let from = work.join(name);
        if next.peek() == Some(&&i) {
            next.next();
            let to = images.join(name);
            std::fs::rename(&from, &to).map_err(|e| PrepareError::io(&to, e))?;
            kept.push(to);
        } else {
            std::fs::remove_file(&from).map_err(|e| PrepareError::io(&from, e))?;
        }
    }
    events(Event::Done {
        summary: format!(
            "{} frames of {:.1} s of video at {fps:.2} per second; the blurriest of each {RUN} dropped: {} kept",
            frames.len(),
            duration,
            kept.len()
        ),
    });
    Ok(Frames {
        extracted: frames.len(),
        kept,
        duration,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_leaves_the_asked_rate_after_the_drop() {
        let probe = Probe {
            duration: 30.0,
            frame_rate: Some(30.0),
        };
        let fps = sampling_rate(FrameRate::Count(150), &probe);
        let sampled = fps * 30.0;
        let kept = sampled * (RUN - 1) as f64 / RUN as f64;
        assert!((kept - 150.0).abs() < 1e-9, "{kept}");
        let fps = sampling_rate(FrameRate::PerSecond(2.0), &probe);
        assert!((fps * (RUN - 1) as f64 / RUN as f64 - 2.0).abs() < 1e-12);
        // Never faster than the video: 5 s at 8 fps has 40 frames, fewer than 150 asked for.
        let short = Probe {
            duration: 5.0,
            frame_rate: Some(8.0),
        };
        assert_eq!(sampling_rate(FrameRate::Count(150), &short), 8.0);
        assert_eq!(parse_rate("30000/1001"), Some(30000.0 / 1001.0));
        assert_eq!(parse_rate("0/0"), None);
        assert_eq!(parse_rate("25"), Some(25.0));
    }
}
