//! `splat scan` end to end with the real COLMAP and ffmpeg: the demo room's photos as an MP4 ->
//! scan, cut off in training by `--stop-after` -> scan again, which keeps the prepared dataset and
//! resumes from the checkpoint -> `DIR/scene.html`; a finished folder is refused; then the same
//! scan as if cut off at every other stage boundary (before the page, before training, in prepare)
//! continues with only what had not finished. A folder of someone else's files is refused. (The
//! page itself is checked in a browser by `viewer_e2e.rs`.)
//!
//! Like `prepare_e2e.rs`, it needs colmap and ffmpeg (`SPLAT_REQUIRE_COLMAP=1` makes their absence a
//! failure); the refusal of a foreign folder always runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

use splat_io::dataset::demo::{write_demo_photos, PhotoOptions};

fn splat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_splat"))
        .args(args)
        .output()
        .expect("runs splat")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn need_tools() -> bool {
    let on_path = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
    };
    let missing: Vec<&str> = ["colmap", "ffmpeg", "ffprobe"]
        .into_iter()
        .filter(|t| !on_path(t))
        .collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var_os("SPLAT_REQUIRE_COLMAP").is_some() {
        panic!("scan test required but {missing:?} not on PATH");
    }
    eprintln!("skipping: {missing:?} not on PATH (apt-get install colmap ffmpeg)");
    false
}

/// The demo room's 40 photos as a 5 s MP4.
fn demo_video(dir: &Path) -> PathBuf {
    let photos = dir.join("photos");
    write_demo_photos(&photos, &PhotoOptions::default()).unwrap();
    let video = dir.join("walk.mp4");
    let o = Command::new("ffmpeg")
        .args(["-nostdin", "-loglevel", "error", "-framerate", "8", "-i"])
        .arg(photos.join("photo_%03d.jpg"))
        .args(["-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "18"])
        .arg(&video)
        .output()
        .unwrap();
    assert!(o.status.success(), "ffmpeg: {}", text(&o));
    video
}

fn modified(p: &Path) -> SystemTime {
    std::fs::metadata(p).unwrap().modified().unwrap()
}

fn scan_ok(args: &[&str], expect: &[&str]) -> String {
    let o = splat(args);
    let t = text(&o);
    assert!(o.status.success(), "splat {args:?} failed:\n{t}");
    for e in expect {
        assert!(t.contains(e), "splat {args:?}: no {e:?} in:\n{t}");
    }
    t
}

#[test]
fn a_video_to_a_page_cut_off_and_continued() {
    if !need_tools() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let video = demo_video(tmp.path());
    let out = tmp.path().join("scan");
    let (v, o) = (video.to_str().unwrap(), out.to_str().unwrap());
    let train = ["--iters", "300", "--checkpoint-every", "100", "--eval"];
    let cut: Vec<&str> = [
        &["scan", v, "--out", o],
        &train[..],
        &["--stop-after", "150"],
    ]
    .concat();
    scan_ok(
        &cut,
        &[
            "[1/3] prepare",
            "of 32 images registered",
            "stopped; continue with:",
        ],
    );
    assert!(
        !out.join("scene.html").exists(),
        "a page before training finished"
    );
    let log = out.join("dataset/prepare.log");
    let prepared_at = modified(&log);

    let whole: Vec<&str> = [&["scan", v, "--out", o], &train[..]].concat();
    let t = scan_ok(
        &whole,
        &[
            "[1/3] prepare finished before",
            "continuing from the last checkpoint",
            "resuming",
            "from step 100 of 300",
            "scan finished",
            "open it: double-click",
        ],
    );
    assert!(!t.contains("[1/3] prepare: "), "prepare ran again:\n{t}");
    assert_eq!(modified(&log), prepared_at, "the dataset was rewritten");
    let page = std::fs::read(out.join("scene.html")).unwrap();
    let spz = page.windows(14).any(|w| w == b"splat-manifest");
    assert!(spz && page.len() > 100_000, "not a scene page");
    let metrics: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("train/metrics.json")).unwrap()).unwrap();
    assert_eq!(metrics["iterations"], 300);
    // 300 steps of the balanced preset's schedule: the room's views go from 10 dB (the SfM points)
    // to about 14.7 (measured); a run that resumed wrongly would not gain.
    let first = metrics["psnr_over_time"][0]["psnr"].as_f64().unwrap();
    assert!(metrics["psnr"].as_f64().unwrap() > first + 2.0, "{metrics}");

    let again = splat(&whole);
    assert!(!again.status.success(), "a finished scan was overwritten");
    assert!(
        text(&again).contains("holds a finished scan"),
        "{}",
        text(&again)
    );
    assert!(
        out.join("scene.html").is_file(),
        "the refusal removed the page"
    );
    every_other_boundary(&out, &whole);
}

/// The scan of `out` as if cut off at each other stage boundary (its record and files as they are
/// then), continued by `whole`: only what had not finished runs again.
fn every_other_boundary(out: &Path, whole: &[&str]) {
    let record = out.join("scan.json");
    let forget = |stages: &[&str]| {
        let mut r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
        for s in stages {
            r[format!("{s}_seconds")] = serde_json::Value::Null;
        }
        std::fs::write(&record, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
    };
    let (log, metrics, page) = (
        out.join("dataset/prepare.log"),
        out.join("train/metrics.json"),
        out.join("scene.html"),
    );
    // Trained, no page yet: the page alone.
    forget(&["page"]);
    std::fs::remove_file(&page).unwrap();
    let (prepared_at, trained_at) = (modified(&log), modified(&metrics));
    let t = scan_ok(whole, &["[2/3] train finished before", "scan finished"]);
    assert!(
        !t.contains("[2/3] train: "),
        "training ran again:
{t}"
    );
    assert_eq!(modified(&metrics), trained_at, "the run was rewritten");
    assert_eq!(modified(&log), prepared_at, "the dataset was rewritten");
    assert!(page.is_file());
    // Prepared, training not begun (no checkpoint): training from the start, not prepare.
    forget(&["train", "page"]);
    std::fs::remove_dir_all(out.join("train")).unwrap();
    std::fs::remove_file(&page).unwrap();
    let t = scan_ok(
        whole,
        &[
            "[1/3] prepare finished before",
            "training the scene",
            "scan finished",
        ],
    );
    assert!(
        !t.contains("resuming"),
        "resumed from nothing:
{t}"
    );
    assert_eq!(modified(&log), prepared_at, "the dataset was rewritten");
    // Cut off in prepare: prepare starts over, then the rest.
    forget(&["prepare", "train", "page"]);
    std::fs::remove_dir_all(out.join("train")).unwrap();
    std::fs::remove_file(&page).unwrap();
    let t = scan_ok(
        whole,
        &[
            "[1/3] prepare: ",
            "of 32 images registered",
            "scan finished",
        ],
    );
    assert!(
        modified(&log) > prepared_at,
        "prepare did not run again:
{t}"
    );
    assert!(page.is_file());
}

#[test]
fn a_folder_of_other_files_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("mine");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("thesis.tex"), "keep me").unwrap();
    let photos = tmp.path().join("photos");
    std::fs::create_dir_all(&photos).unwrap();
    for force in [false, true] {
        let mut args = vec![
            "scan",
            photos.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        if force {
            args.push("--force");
        }
        let o = splat(&args);
        assert!(!o.status.success(), "scanned into a folder of other files");
        let t = text(&o);
        assert!(
            t.contains("thesis.tex, which splat scan did not write"),
            "{t}"
        );
        assert_eq!(
            std::fs::read_to_string(out.join("thesis.tex")).unwrap(),
            "keep me"
        );
    }
    let missing = splat(&["scan", "/no/such/video.mp4", "--out", out.to_str().unwrap()]);
    assert!(
        text(&missing).contains("no such file or folder"),
        "{}",
        text(&missing)
    );
}
