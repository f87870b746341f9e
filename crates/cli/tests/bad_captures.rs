//! Captures that cannot become a scene, through `splat prepare` and `splat scan`, each ending in one
//! `error:` line that says what is wrong and what to do, and leaving nothing that looks finished (no
//! `sparse/0`, no `scene.html`, a scan record without a finished prepare): a video too short, a video
//! that stands still, an unreadable file among good photos, photos of mixed sizes (a note, then one
//! camera per photo), and a disk that fills during prepare.
//!
//! Needs COLMAP and ffmpeg like `prepare_e2e.rs` (`SPLAT_REQUIRE_COLMAP=1` makes their absence a
//! failure). The `--out` that holds something else is `prepare_e2e.rs`'s and `scan_e2e.rs`'s.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use splat_io::dataset::demo::{write_demo_photos, PhotoOptions};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_splat")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn tools_here() -> bool {
    let found = |t: &str| {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(t).is_file()))
    };
    let missing: Vec<&str> = ["colmap", "ffmpeg", "ffprobe"]
        .into_iter()
        .filter(|t| !found(t))
        .collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var_os("SPLAT_REQUIRE_COLMAP").is_some() {
        panic!("bad-capture tests required but {missing:?} not on PATH");
    }
    eprintln!("skipping: {missing:?} not on PATH (apt-get install colmap ffmpeg)");
    false
}

/// The run failed with exactly one `error:` line, the last, which says each of `expect`.
fn fails_with(o: &Output, expect: &[&str]) -> String {
    let said = text(o);
    assert!(!o.status.success(), "succeeded: {said}");
    let errors: Vec<&str> = said.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{said}");
    assert!(said.trim_end().ends_with(errors[0]), "{said}");
    for part in expect {
        assert!(errors[0].contains(part), "{part:?} not in: {}", errors[0]);
    }
    said
}

/// `splat COMMAND INPUT --out OUT`.
fn splat_into(command: &str, input: &Path, out: &Path) -> Output {
    Command::new(bin())
        .arg(command)
        .arg(input)
        .arg("--out")
        .arg(out)
        .output()
        .expect("runs splat")
}

fn photos(dir: &Path, views: usize, width: u32, height: u32) -> PathBuf {
    let opts = PhotoOptions {
        views,
        width,
        height,
        ..Default::default()
    };
    write_demo_photos(dir, &opts).unwrap();
    dir.to_path_buf()
}

/// An MP4 of `seconds` at 10 fps showing one photo throughout.
fn still_video(dir: &Path, seconds: &str) -> PathBuf {
    let photo = photos(&dir.join("still-photo"), 1, 160, 120);
    let first = splat_io::dataset::list_images(&photo).unwrap().remove(0);
    let video = dir.join(format!("still-{seconds}s.mp4"));
    let o = Command::new("ffmpeg")
        .args(["-loglevel", "error", "-y", "-loop", "1", "-i"])
        .arg(photo.join(first))
        .args(["-t", seconds, "-r", "10", "-pix_fmt", "yuv420p"])
        .arg(&video)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    video
}

/// Nothing in `out` looks like a finished dataset.
fn not_finished(out: &Path) {
    assert!(
        !out.join("sparse/0").exists(),
        "{} has a model",
        out.display()
    );
}

#[test]
fn a_video_too_short_or_standing_still_says_to_move_around_the_subject() {
    if !tools_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let short = still_video(dir.path(), "0.5");
    let out = dir.path().join("short");
    let o = splat_into("prepare", &short, &out);
    fails_with(
        &o,
        &["0.5 s of video gave only", "moving around the subject"],
    );
    not_finished(&out);

    let still = still_video(dir.path(), "2");
    let out = dir.path().join("still");
    let o = splat_into("prepare", &still, &out);
    fails_with(&o, &["frames were registered", "move around the subject"]);
    not_finished(&out);

    // Through scan: the same line, and the record says prepare did not finish.
    let scan = dir.path().join("scan");
    let o = splat_into("scan", &still, &scan);
    fails_with(&o, &["move around the subject"]);
    not_finished(&scan.join("dataset"));
    assert!(!scan.join("scene.html").exists());
    let record = std::fs::read_to_string(scan.join("scan.json")).unwrap();
    assert!(record.contains("\"prepare_seconds\": null"), "{record}");
}

#[test]
fn an_unreadable_photo_among_good_ones_is_named() {
    if !tools_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = photos(&dir.path().join("photos"), 4, 64, 48);
    std::fs::write(input.join("broken.jpg"), b"\xff\xd8 not really a JPEG").unwrap();
    let out = dir.path().join("out");
    let o = splat_into("prepare", &input, &out);
    fails_with(&o, &["broken.jpg", "not an image splat can read"]);
    not_finished(&out);
}

#[test]
fn photos_of_mixed_sizes_get_a_camera_each_with_a_note() {
    if !tools_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = photos(&dir.path().join("photos"), 3, 64, 48);
    photos(&dir.path().join("other"), 1, 80, 60);
    let other = splat_io::dataset::list_images(&dir.path().join("other")).unwrap();
    std::fs::copy(
        dir.path().join("other").join(&other[0]),
        input.join("zz_other_size.jpg"),
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = splat_into("prepare", &input, &out);
    // Four tiny photos may or may not register; the note comes before COLMAP runs either way.
    let said = text(&o);
    assert!(
        said.contains("the photos come in 2 sizes: one camera per photo"),
        "{said}"
    );
}

#[test]
fn a_disk_that_fills_during_prepare_ends_with_one_line_and_no_model() {
    if !tools_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = photos(&dir.path().join("photos"), 12, 320, 240);
    let out = dir.path().join("out");
    // A file-size limit of 64 KiB (SIGXFSZ ignored): a write past it fails as on a full disk.
    let o = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 128; exec \"$0\" prepare \"$1\" --out \"$2\"")
        .arg(bin())
        .arg(&input)
        .arg(&out)
        .output()
        .unwrap();
    // The photos' copy (or COLMAP's database) is what the limit stops.
    let said = fails_with(&o, &[]);
    let line = said.lines().last().unwrap();
    assert!(
        line.contains("the disk is full") || line.contains("is the disk full?"),
        "{line}"
    );
    not_finished(&out);
}
