//! The `splat` binary end to end: outputs exist and are valid, user errors are one line and a non-zero exit.

use std::path::Path;
use std::process::{Command, Output};

fn splat(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_splat"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run splat")
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(path: &Path) -> (u32, u32) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |o: usize| u32::from_be_bytes(b[o..o + 4].try_into().unwrap());
    (be(16), be(20))
}

fn assert_user_error(out: &Output, needle: &str) {
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: "), "stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{needle:?} not in {err}");
    assert!(!err.contains("panicked"));
}

#[test]
fn renders_the_builtin_scene_and_a_ply_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let out = splat(
        &[
            "render",
            "--out",
            "b.png",
            "--width",
            "96",
            "--height",
            "64",
            "--gaussians",
            "3000",
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(png_size(&dir.path().join("b.png")), (96, 64));
    assert!(String::from_utf8_lossy(&out.stdout).contains("rendered 3000 Gaussians"));

    let out = splat(
        &["builtin-scene", "--out", "s.ply", "--gaussians", "3000"],
        dir.path(),
    );
    assert!(out.status.success());
    let out = splat(&["info", "s.ply"], dir.path());
    assert!(String::from_utf8_lossy(&out.stdout).contains("3000 Gaussians, SH degree 1"));

    // The same scene and camera from the PLY gives the same pixels.
    let cam = [
        "--look-from",
        "4,-3.2,2.6",
        "--look-at",
        "0,0,0.8",
        "--up",
        "0,0,1",
    ];
    let mut a = vec![
        "render", "s.ply", "--out", "p.png", "--width", "96", "--height", "64",
    ];
    a.extend(cam);
    assert!(splat(&a, dir.path()).status.success());
    let mut b = vec![
        "render",
        "--out",
        "q.png",
        "--width",
        "96",
        "--height",
        "64",
        "--gaussians",
        "3000",
    ];
    b.extend(cam);
    assert!(splat(&b, dir.path()).status.success());
    assert_eq!(
        std::fs::read(dir.path().join("p.png")).unwrap(),
        std::fs::read(dir.path().join("q.png")).unwrap()
    );
}

#[test]
fn user_errors_are_one_line_and_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    assert_user_error(
        &splat(&["render", "missing.ply"], dir.path()),
        "missing.ply",
    );
    std::fs::write(
        dir.path().join("bad.ply"),
        b"ply\nformat ascii 1.0\nelement vertex 2\nend_header\n",
    )
    .unwrap();
    assert_user_error(
        &splat(&["render", "bad.ply"], dir.path()),
        "bad.ply: missing property \"x\"",
    );
    assert_user_error(
        &splat(&["render", "--width", "0"], dir.path()),
        "image size",
    );
    assert_user_error(
        &splat(
            &["render", "--look-from", "1,1,1", "--look-at", "1,1,1"],
            dir.path(),
        ),
        "same point",
    );
    assert_user_error(
        &splat(
            &[
                "render",
                "--out",
                "no/such/dir/x.png",
                "--width",
                "8",
                "--height",
                "8",
            ],
            dir.path(),
        ),
        "x.png",
    );
    // Argument errors come from clap, also non-zero.
    let out = splat(&["render", "--look-from", "1,2"], dir.path());
    assert!(!out.status.success());
}

#[test]
fn train_eval_render_and_resume_on_a_generated_capture() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    splat_io::dataset::demo::write_demo_dataset(
        &data,
        &splat_io::dataset::demo::DemoOptions {
            width: 40,
            height: 30,
            views: 10,
            points: 300,
            seed: 1,
            ..Default::default()
        },
    )
    .unwrap();
    let d = data.to_str().unwrap();
    let out = splat(
        &[
            "train",
            d,
            "--out",
            "run",
            "--preset",
            "original",
            "--iters",
            "40",
            "--eval",
            "--checkpoint-every",
            "20",
            "--stop-after",
            "30",
            "--backend",
            "reference",
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("splat train --resume"));
    assert!(dir.path().join("run/checkpoints/latest.ckpt").is_file());
    assert!(!dir.path().join("run/point_cloud.ply").exists());
    let out = splat(&["train", "--resume", "run"], dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("resuming"), "{err}");
    // The resumed run goes on on the backend it was started on.
    assert!(err.contains("on the reference backend"), "{err}");
    let metrics: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("run/metrics.json")).unwrap(),
    )
    .unwrap();
    for key in [
        "psnr",
        "ssim",
        "cc_psnr",
        "num_gaussians",
        "iterations",
        "train_seconds",
        "its_per_second",
    ] {
        assert!(metrics.get(key).is_some(), "metrics.json lacks {key}");
    }
    assert_eq!(metrics["iterations"], 40);
    assert_eq!(metrics["split"], "test");
    assert_eq!(metrics["backend"], "reference");
    check_report(&dir.path().join("run/report.html"), &metrics);

    let out = splat(&["eval", "run"], dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("mean over 2 test views"), "{text}");
    let first_view = text.lines().next().unwrap().to_string();
    let out = splat(&["eval", "run", "--every", "2"], dir.path());
    let every = String::from_utf8_lossy(&out.stdout);
    assert!(every.contains("mean over 1 test views"), "{every}");
    assert_eq!(every.lines().next().unwrap(), first_view, "{every}");
    // --poses is read for a run folder too (it was ignored without --data).
    assert_user_error(
        &splat(&["eval", "run", "--poses", "nope.txt"], dir.path()),
        "nope.txt",
    );
    let zero = splat(&["eval", "run", "--every", "0"], dir.path());
    assert!(!zero.status.success());
    assert!(String::from_utf8_lossy(&zero.stderr).contains("--every"));
    let out = splat(
        &[
            "render",
            "run/point_cloud.ply",
            "--data",
            d,
            "--out",
            "views",
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_dir(dir.path().join("views")).unwrap().count(),
        2
    );
    assert_eq!(png_size(&dir.path().join("views/view_000.png")), (40, 30));
}

#[test]
fn train_user_errors() {
    let dir = tempfile::tempdir().unwrap();
    assert_user_error(
        &splat(&["train", "nowhere", "--out", "o"], dir.path()),
        "nowhere",
    );
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    assert_user_error(
        &splat(&["train", "empty", "--out", "o"], dir.path()),
        "no dataset found",
    );
    assert_user_error(
        &splat(&["train", "--resume", "empty"], dir.path()),
        "config.json",
    );
    assert_user_error(&splat(&["eval", "x.ply"], dir.path()), "--data is required");
    let strategy_errors: [(&[&str], &str); 5] = [
        (&["--strategy", "mcmc", "--max-gaussians", "9"], "--cap-max"),
        (
            &["--strategy", "mcmc", "--absgrad"],
            "--absgrad is for the default strategy",
        ),
        (
            &["--strategy", "mcmc", "--cap-max", "0"],
            "--cap-max must be at least 1",
        ),
        (
            &["--mcmc-min-opacity", "1.5"],
            "--mcmc-min-opacity must be in (0, 1)",
        ),
        (
            &["--densify-grad-threshold=-1"],
            "--densify-grad-threshold must be above 0",
        ),
    ];
    for (flags, needle) in strategy_errors {
        let mut args = vec!["train", "empty", "--out", "o"];
        args.extend(flags);
        assert_user_error(&splat(&args, dir.path()), needle);
    }
}

/// `--antialiased`: the PLY says so, `splat eval` on it reproduces the run's own test PSNR (it renders
/// the compensation), and the same PLY without its comment line renders differently.
#[test]
fn an_antialiased_run_is_evaluated_the_way_it_was_trained() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    splat_io::dataset::demo::write_demo_dataset(
        &data,
        &splat_io::dataset::demo::DemoOptions {
            width: 48,
            height: 36,
            views: 12,
            points: 500,
            seed: 4,
            ..Default::default()
        },
    )
    .unwrap();
    let d = data.to_str().unwrap();
    let args = [
        "train",
        d,
        "--out",
        "aa",
        "--preset",
        "original",
        "--iters",
        "60",
        "--eval",
        "--antialiased",
        "--strategy",
        "mcmc",
        "--cap-max",
        "600",
        "--densify-from",
        "20",
        "--densify-interval",
        "15",
    ];
    let out = splat(&args, dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ply = std::fs::read(dir.path().join("aa/point_cloud.ply")).unwrap();
    let header_end = ply.windows(10).position(|w| w == b"end_header").unwrap();
    let header = String::from_utf8_lossy(&ply[..header_end]).to_string();
    assert!(header.contains("comment antialiased 1"), "{header}");
    let metrics: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("aa/metrics.json")).unwrap())
            .unwrap();
    let trained = metrics["psnr"].as_f64().unwrap();
    let eval_psnr = |ply: &str| -> f64 {
        let out = splat(&["eval", ply, "--data", d], dir.path());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let line = text
            .lines()
            .find(|l| l.starts_with("mean over"))
            .unwrap()
            .to_string();
        let at = line.find("PSNR ").unwrap() + 5;
        line[at..].split(' ').next().unwrap().parse().unwrap()
    };
    assert!(
        (eval_psnr("aa/point_cloud.ply") - trained).abs() < 0.006,
        "trained {trained}"
    );
    let plain: Vec<u8> = String::from_utf8_lossy(&ply[..header_end])
        .replace("comment antialiased 1\n", "")
        .into_bytes()
        .into_iter()
        .chain(ply[header_end..].iter().copied())
        .collect();
    std::fs::write(dir.path().join("plain.ply"), plain).unwrap();
    let without = eval_psnr("plain.ply");
    assert!(
        (without - trained).abs() > 0.05,
        "trained {trained}, without the flag {without}"
    );
    // `splat bench --scene` times the trained scene (grown by MCMC), not the 500 initial points.
    let out = splat(
        &[
            "bench",
            d,
            "--scene",
            "aa/point_cloud.ply",
            "--steps",
            "2",
            "--warmup",
            "1",
            "--json",
            "bench.json",
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bench: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("bench.json")).unwrap()).unwrap();
    assert_eq!(bench["gaussians"], metrics["num_gaussians"]);
    assert_ne!(bench["gaussians"].as_u64(), Some(500));
    let out = splat(&["bench", d, "--scene", "missing.ply"], dir.path());
    assert_user_error(&out, "missing.ply");
}

/// Empty elements: the report must self-close them (`<img .../>`).
const VOID: &[&str] = &["meta", "img", "br", "rect", "line", "polyline"];

/// Checks the report: well-formed (every element closed, properly nested), self-contained (no
/// external URL), three SVG plots, three inline PNGs per evaluated view, and table numbers (PSNR, SSIM,
/// cc-PSNR per view and their means) equal to metrics.json.
fn check_report(path: &Path, metrics: &serde_json::Value) {
    let html = std::fs::read_to_string(path).expect("report.html written");
    assert!(html.starts_with("<!DOCTYPE html>"));
    let mut stack: Vec<String> = Vec::new();
    let mut rest = &html["<!DOCTYPE html>".len()..];
    while let Some(i) = rest.find('<') {
        let end = rest[i..].find('>').expect("tag closed") + i;
        let tag = &rest[i + 1..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.trim()),
                "mis-nested </{name}>"
            );
            continue;
        }
        let name: String = tag
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if tag.ends_with('/') {
            continue;
        }
        assert!(!VOID.contains(&name.as_str()), "<{tag}> not self-closed");
        stack.push(name);
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    // Loss, PSNR and count; with a test split also the quality curve.
    let curve = metrics["psnr_over_time"]
        .as_array()
        .is_some_and(|c| !c.is_empty());
    let charts = 3 + usize::from(curve);
    for external in ["http://", "https://", "src=\"/", "href="] {
        let n = html.matches(external).count();
        // The SVG namespace is an identifier, not a fetch.
        let allowed = if external == "http://" { charts } else { 0 };
        assert!(n <= allowed, "{external} appears {n} times");
    }
    assert_eq!(html.matches("<svg").count(), charts);
    let views = metrics["views"].as_array().unwrap();
    assert_eq!(
        html.matches("src=\"data:image/png;base64,").count(),
        3 * views.len()
    );
    let values: Vec<f64> = html
        .split("data-value=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].parse().unwrap())
        .collect();
    let mut expected = Vec::new();
    for v in views.iter().chain([metrics]) {
        for key in ["psnr", "ssim", "cc_psnr"] {
            expected.push(v[key].as_f64().unwrap());
        }
    }
    assert_eq!(values, expected, "report numbers differ from metrics.json");
}
