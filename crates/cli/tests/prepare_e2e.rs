//! `splat prepare` end to end with the real COLMAP and ffmpeg: the demo room photographed as 40
//! textured JPEGs without poses -> prepare -> train -> test PSNR, the poses checked against the ones
//! the photos were taken with; the same frames as an MP4 -> prepare (twice into one folder, whose
//! name has spaces and quotes: with COLMAP's own descriptor matching, then with splat's) -> train;
//! and every error a user can meet.
//!
//! COLMAP and ffmpeg come from Debian (`apt-get install colmap ffmpeg`); `.ci/run` installs them and
//! sets `SPLAT_REQUIRE_COLMAP=1`, which turns their absence into a failure instead of a skip. The
//! error tests that need neither always run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use splat_io::dataset::demo::{write_demo_photos, PhotoOptions};
use splat_prepare::align::{compare, read_poses, Pose, PoseErrors};

fn splat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_splat"))
        .args(args)
        .output()
        .expect("runs splat")
}

fn splat_with_path(args: &[&str], path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_splat"))
        .args(args)
        .env("PATH", path)
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

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Whether COLMAP and ffmpeg are here (a failure when required).
fn need_tools() -> bool {
    let missing: Vec<&str> = ["colmap", "ffmpeg", "ffprobe"]
        .into_iter()
        .filter(|t| on_path(t).is_none())
        .collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var_os("SPLAT_REQUIRE_COLMAP").is_some() {
        panic!("prepare test required but {missing:?} not on PATH");
    }
    eprintln!("skipping: {missing:?} not on PATH (apt-get install colmap ffmpeg)");
    false
}

/// Training steps on what prepare made, and the test PSNR they must reach. Measured on this
/// capture (2-vCPU AMD EPYC, release build): the photos' dataset reaches 25.3 dB (35 train, 5 test
/// views), the video's 23.0 dB (28 train, 4 test frames, H.264 with 4:2:0 chroma); the initial
/// points alone render 14.6 and 14.9 dB. The thresholds leave ~2 dB for COLMAP's run-to-run
/// differences; wrong poses are caught before by the pose check.
const TRAIN_STEPS: &str = "1000";
const MIN_PSNR_PHOTOS: f64 = 23.0;
const MIN_PSNR_VIDEO: f64 = 21.0;

fn train_psnr(data: &Path, out: &Path) -> f64 {
    let o = splat(&[
        "train",
        data.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--eval",
        "--preset",
        "original",
        "--iters",
        TRAIN_STEPS,
    ]);
    assert!(o.status.success(), "train failed: {}", text(&o));
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("metrics.json")).unwrap()).unwrap();
    m["psnr"].as_f64().unwrap()
}

/// Pose errors of the prepared model against the cameras the photos were taken with; `name_of` maps
/// a photo's index to the name it has in the dataset.
fn pose_errors(
    model: &Path,
    truth: &[splat_core::Camera],
    name_of: &dyn Fn(usize) -> String,
) -> PoseErrors {
    let known: Vec<(String, Pose)> = truth
        .iter()
        .enumerate()
        .map(|(i, c)| {
            (
                name_of(i),
                Pose::from_world_to_camera(c.rotation, c.translation),
            )
        })
        .collect();
    compare(&read_poses(model).unwrap(), &known).expect("common images")
}

fn check_layout(data: &Path, count: usize, size: (u32, u32)) {
    for f in [2u32, 4, 8] {
        let dir = data.join(format!("images_{f}"));
        let names = splat_io::dataset::list_images(&dir).unwrap();
        assert_eq!(names.len(), count, "{}", dir.display());
        let dims = image::image_dimensions(dir.join(&names[0])).unwrap();
        assert_eq!(dims, (size.0 / f, size.1 / f));
    }
    assert!(data.join("sparse/0/images.bin").is_file());
    let log = std::fs::read_to_string(data.join("prepare.log")).unwrap();
    assert!(
        log.contains("feature_extractor") && log.contains("mapper"),
        "{log}"
    );
}

/// Runs `splat prepare INPUT --out DATA`, which must succeed and say each of `expect`.
fn prepare_ok(input: &Path, data: &Path, expect: &[&str]) {
    prepare_ok_with(input, data, &[], expect)
}

fn prepare_ok_with(input: &Path, data: &Path, extra: &[&str], expect: &[&str]) {
    let mut args = vec![
        "prepare",
        input.to_str().unwrap(),
        "--out",
        data.to_str().unwrap(),
    ];
    args.extend(extra);
    let o = splat(&args);
    let said = text(&o);
    assert!(o.status.success(), "prepare failed: {said}");
    for part in expect {
        assert!(said.contains(part), "{part:?} not in: {said}");
    }
}

/// What a prepared capture must reach: images registered, median pose errors, test PSNR.
struct Expected {
    label: &'static str,
    min_registered: usize,
    max_rotation_deg: f64,
    max_position_of_spread: f64,
    min_psnr: f64,
}

/// Checks the poses of `data` against the cameras the photos were taken with (`name_of` maps a
/// photo's index to its name in the dataset), then trains on it and checks the test PSNR. COLMAP's
/// mapper is not deterministic (not even on one thread, measured), and one run in many converges to
/// a distorted model (once in CI: all 40 photos registered, median rotation error 6.3 degrees against
/// the usual 0.2-0.3): a first failure of the pose check runs `prepare_again` and checks once more.
fn check_poses_and_training(
    data: &Path,
    truth: &[splat_core::Camera],
    name_of: &dyn Fn(usize) -> String,
    want: &Expected,
    prepare_again: &dyn Fn(),
) {
    if let Err(first) = poses_within(data, truth, name_of, want) {
        eprintln!("{}: {first}; preparing again", want.label);
        prepare_again();
        poses_within(data, truth, name_of, want).unwrap();
    }
    let trained = data.with_file_name(format!("{}-trained", want.label));
    let psnr = train_psnr(data, &trained);
    eprintln!("{}: test PSNR {psnr:.2} dB", want.label);
    assert!(psnr > want.min_psnr, "test PSNR {psnr:.2} dB");
}

/// Whether the poses of `data` are within `want` of the truth.
fn poses_within(
    data: &Path,
    truth: &[splat_core::Camera],
    name_of: &dyn Fn(usize) -> String,
    want: &Expected,
) -> Result<(), String> {
    let e = pose_errors(&data.join("sparse/0"), truth, name_of);
    let rot = PoseErrors::median(&e.rotation_deg);
    let pos = PoseErrors::median(&e.position) / e.extent;
    eprintln!(
        "{}: {} registered, rotation error median {rot:.3} deg, position {:.3}% of the spread",
        want.label,
        e.matched,
        100.0 * pos
    );
    if e.matched < want.min_registered {
        return Err(format!("only {} registered", e.matched));
    }
    if !(rot < want.max_rotation_deg && pos < want.max_position_of_spread) {
        return Err(format!("rotation {rot} deg, position {pos} of the spread"));
    }
    Ok(())
}

#[test]
fn photos_to_poses_to_a_trained_scene() {
    if !need_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let photos = dir.path().join("photos");
    let opts = PhotoOptions::default();
    let truth = write_demo_photos(&photos, &opts).unwrap();
    // Masks beside the photos (the bottom tenth left out, as a rig would be), named photo_000.png.
    std::fs::create_dir_all(photos.join("masks")).unwrap();
    let mask = image::GrayImage::from_fn(opts.width, opts.height, |_, y| {
        image::Luma([if y >= opts.height * 9 / 10 { 0 } else { 255 }])
    });
    for i in 0..opts.views {
        mask.save(photos.join(format!("masks/photo_{i:03}.png")))
            .unwrap();
    }
    let data = dir.path().join("data");
    // Progress per stage with its counts.
    let expect = [
        "masks for 40 of 40 photos",
        "SIFT features of 40 images",
        "exhaustive: 780 image pairs tried",
        "of 40 images registered",
        "verified geometry",
    ];
    prepare_ok(&photos, &data, &expect);
    check_layout(&data, 40, (opts.width, opts.height));
    // The masks went to COLMAP and into the dataset under COLMAP's names.
    let log = std::fs::read_to_string(data.join("prepare.log")).unwrap();
    assert!(log.contains("ImageReader.mask_path"), "{log}");
    assert!(data.join("masks/photo_000.jpg.png").is_file());
    // The hint of `splat train` on photos without poses.
    let o = splat(&[
        "train",
        photos.to_str().unwrap(),
        "--out",
        dir.path().join("x").to_str().unwrap(),
    ]);
    let said = text(&o);
    assert!(!o.status.success());
    assert!(
        said.contains("40 photos but no camera poses; run `splat prepare"),
        "{said}"
    );
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    let want = Expected {
        label: "photos",
        min_registered: 36,
        max_rotation_deg: 1.0,
        max_position_of_spread: 0.02,
        min_psnr: MIN_PSNR_PHOTOS,
    };
    let again = || {
        std::fs::remove_dir_all(&data).unwrap();
        prepare_ok(&photos, &data, &expect);
    };
    check_poses_and_training(
        &data,
        &truth,
        &|i| format!("photo_{i:03}.jpg"),
        &want,
        &again,
    );
}

#[test]
fn a_video_to_a_trained_scene_twice_in_one_folder() {
    if !need_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let photos = dir.path().join("photos");
    let opts = PhotoOptions::default();
    let truth = write_demo_photos(&photos, &opts).unwrap();
    // 40 frames at 8 fps: a 5 s walk around the room.
    let video = dir.path().join("walk around.mp4");
    let o = Command::new("ffmpeg")
        .args(["-nostdin", "-loglevel", "error", "-framerate", "8", "-i"])
        .arg(photos.join("photo_%03d.jpg"))
        .args(["-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "18"])
        .arg(&video)
        .output()
        .unwrap();
    assert!(o.status.success(), "ffmpeg: {}", text(&o));
    let data = dir.path().join("my data 'set' (1)");
    let expect = [
        "40 frames of 5.0 s of video",
        "32 kept",
        "sequential:",
        "loop pairs",
        "of 32 images registered",
    ];
    // COLMAP's own matching first (the run over it is splat's, whose poses are checked below).
    prepare_ok_with(&video, &data, &["--colmap-matching"], &expect);
    prepare_ok(&video, &data, &expect);
    check_layout(&data, 32, (opts.width, opts.height));
    let want = Expected {
        label: "video",
        min_registered: 29,
        max_rotation_deg: 1.5,
        max_position_of_spread: 0.03,
        min_psnr: MIN_PSNR_VIDEO,
    };
    // frame_00001.jpg is photo 0.
    let again = || {
        std::fs::remove_dir_all(&data).unwrap();
        prepare_ok(&video, &data, &expect);
    };
    check_poses_and_training(
        &data,
        &truth,
        &|i| format!("frame_{:05}.jpg", i + 1),
        &want,
        &again,
    );
}

/// A folder on PATH holding links to only the named programs.
fn path_with(dir: &Path, tools: &[&str]) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for t in tools {
        std::os::unix::fs::symlink(on_path(t).expect("on PATH"), bin.join(t)).unwrap();
    }
    bin
}

/// Runs `splat prepare INPUT --out OUT EXTRA...` (with `PATH` set to `path` when given), which must
/// fail with one error line saying each of `expect`.
fn prepare_fails(input: &Path, out: &Path, extra: &[&str], path: Option<&Path>, expect: &[&str]) {
    let mut args = vec![
        "prepare",
        input.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    let o = match path {
        Some(p) => splat_with_path(&args, p),
        None => splat(&args),
    };
    let said = text(&o);
    assert!(!o.status.success(), "{args:?} succeeded: {said}");
    // One error line, the last (progress lines of stages that ran come before it).
    let errors: Vec<&str> = said.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{said}");
    assert!(said.trim_end().ends_with(errors[0]), "{said}");
    for part in expect {
        assert!(said.contains(part), "{part:?} not in: {said}");
    }
}

fn tiny_photos(dir: &Path) -> PathBuf {
    let photos = dir.join("photos");
    let opts = PhotoOptions {
        views: 3,
        width: 32,
        height: 24,
        ..Default::default()
    };
    write_demo_photos(&photos, &opts).unwrap();
    photos
}

#[test]
fn missing_programs_name_their_package_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let photos = tiny_photos(dir.path());
    let out = dir.path().join("out");
    let empty = path_with(dir.path(), &[]);
    let expect = ["colmap is not installed", "apt-get install colmap"];
    prepare_fails(&photos, &out, &[], Some(&empty), &expect);
    assert!(
        !out.exists(),
        "nothing is written before the programs are found"
    );
    // A video needs ffmpeg too (colmap present).
    if on_path("colmap").is_some() {
        let video = dir.path().join("v.mp4");
        std::fs::write(&video, b"not checked yet").unwrap();
        let bin = path_with(&dir.path().join("c"), &["colmap"]);
        let expect = ["ffmpeg is not installed", "apt-get install ffmpeg"];
        prepare_fails(&video, &out, &[], Some(&bin), &expect);
    }
    let given = ["--colmap", "/nonexistent/colmap"];
    prepare_fails(&photos, &out, &given, None, &["/nonexistent/colmap"]);
}

#[test]
fn input_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("notes.txt"), b"x").unwrap();
    prepare_fails(&empty, &out, &[], None, &["no images here"]);
    let nothing = dir.path().join("nope");
    prepare_fails(&nothing, &out, &[], None, &["no such file or folder"]);
    for bad in [["--fps", "0"], ["--frames", "1"], ["--min-registered", "2"]] {
        prepare_fails(&empty, &out, &bad, None, &[bad[0]]);
    }
    // A dataset folder with files of the user's is refused, and they stay.
    let photos = tiny_photos(dir.path());
    let theirs = dir.path().join("theirs");
    std::fs::create_dir_all(theirs.join("sparse")).unwrap();
    std::fs::write(theirs.join("sparse/keep.txt"), b"mine").unwrap();
    if on_path("colmap").is_some() {
        prepare_fails(
            &photos,
            &theirs,
            &[],
            None,
            &["which splat prepare did not write"],
        );
        assert_eq!(
            std::fs::read(theirs.join("sparse/keep.txt")).unwrap(),
            b"mine"
        );
    }
}

#[test]
fn unreadable_videos_and_too_few_registered() {
    if !need_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for (name, bytes) in [
        ("garbage.mp4", &b"this is not a video"[..]),
        ("empty.mov", &b""[..]),
    ] {
        let video = dir.path().join(name);
        std::fs::write(&video, bytes).unwrap();
        prepare_fails(
            &video,
            &out,
            &[],
            None,
            &[name, "not a video ffmpeg can read"],
        );
    }
    // Six photos of unrelated noise: nothing matches, nothing registers.
    let noise = dir.path().join("noise");
    std::fs::create_dir_all(&noise).unwrap();
    let mut state = 12345u64;
    for i in 0..6 {
        let img = image::RgbImage::from_fn(160, 120, |_, _| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = (state >> 56) as u8;
            image::Rgb([v, v.wrapping_mul(3), v.wrapping_mul(7)])
        });
        img.save(noise.join(format!("n{i}.png"))).unwrap();
    }
    let expect = ["only 0 of 6 images were registered", "What usually helps"];
    prepare_fails(&noise, &out, &[], None, &expect);
    assert!(out.join("prepare.log").is_file());
}
