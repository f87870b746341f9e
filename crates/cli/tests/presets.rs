//! `splat train --preset` end to end on a small generated capture: the default preset and what it
//! chooses from the scene, flags given by hand winning over it, `original` as before, a run stopped
//! before a resolution change and resumed after it bit-identical to an uninterrupted one, and the
//! quality curve in `metrics.json`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn splat(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_splat"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run splat")
}

fn ok(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    err
}

/// A capture of 12 views at 160 x 128 (short side 128: a coarsest level of 1/2) with 300 points.
fn data(dir: &Path) -> String {
    let data = dir.join("data");
    splat_io::dataset::demo::write_demo_dataset(
        &data,
        &splat_io::dataset::demo::DemoOptions {
            width: 160,
            height: 128,
            views: 12,
            points: 300,
            seed: 4,
            ..Default::default()
        },
    )
    .unwrap();
    data.to_str().unwrap().to_string()
}

fn json(dir: &Path, file: &str) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join(file)).unwrap()).unwrap()
}

#[test]
fn presets_choose_from_the_scene_and_flags_win() {
    let dir = tempfile::tempdir().unwrap();
    let d = data(dir.path());
    let d = d.as_str();
    let err = ok(&splat(
        &["train", d, "--out", "bal", "--iters", "50", "--eval"],
        dir.path(),
    ));
    assert!(err.contains("chosen from the scene: a budget of"), "{err}");
    let train = &json(&dir.path().join("bal"), "config.json")["train"];
    assert_eq!(train["strategy"], "mcmc");
    assert_eq!(train["iterations"], 50);
    // 0.14 x 160 x 128 x sqrt(11 training views), below the floor of 10,000.
    assert_eq!(train["mcmc"]["cap_max"], 10_000);
    assert_eq!(train["visible_adam"], false);
    let levels = train["resolution_schedule"].as_array().unwrap();
    assert_eq!(levels.len(), 2, "{levels:?}");
    assert_eq!(
        (&levels[0]["downscale"], &levels[1]["from"]),
        (&2.into(), &20.into())
    );
    let m = json(&dir.path().join("bal"), "metrics.json");
    let curve = m["psnr_over_time"].as_array().unwrap();
    assert_eq!(curve.len(), 20);
    assert_eq!(curve[19]["psnr"], m["psnr"]);
    assert!(curve
        .windows(2)
        .all(|w| w[0]["seconds"].as_f64() <= w[1]["seconds"].as_f64()));
    let report = std::fs::read_to_string(dir.path().join("bal/report.html")).unwrap();
    assert!(report.contains("id=\"psnr-over-time\""));

    let err = ok(&splat(
        &[
            "train",
            d,
            "--out",
            "hand",
            "--iters",
            "30",
            "--preset",
            "fast",
            "--cap-max",
            "777",
            "--mcmc-growth",
            "0.07",
            "--resolution-schedule",
            "full",
            "--visible-adam",
        ],
        dir.path(),
    ));
    assert!(!err.contains("chosen from the scene"), "{err}");
    let train = &json(&dir.path().join("hand"), "config.json")["train"];
    assert_eq!(train["visible_adam"], true);
    assert_eq!(train["mcmc"]["cap_max"], 777);
    assert_eq!(train["mcmc"]["growth"], 0.07);
    assert_eq!(train["resolution_schedule"].as_array().unwrap().len(), 0);

    ok(&splat(
        &[
            "train", d, "--out", "orig", "--iters", "20", "--preset", "original",
        ],
        dir.path(),
    ));
    let train = &json(&dir.path().join("orig"), "config.json")["train"];
    assert_eq!(train["strategy"], "default");
    assert_eq!(train["densify_until"], 15_000);
    assert_eq!(train["resolution_schedule"].as_array().unwrap().len(), 0);
    assert_eq!(train["visible_adam"], false);
}

#[test]
fn resume_across_a_resolution_change_is_bit_exact() {
    let dir = tempfile::tempdir().unwrap();
    let d = data(dir.path());
    let d = d.as_str();
    // 1/2 size for steps 1-29, full size from 30; MCMC refines at 20 and 40.
    let common = [
        "--iters",
        "60",
        "--preset",
        "fast",
        "--resolution-schedule",
        "2@0,1@30",
        "--densify-from",
        "10",
        "--densify-interval",
        "20",
        "--checkpoint-every",
        "25",
    ];
    let mut whole = vec!["train", d, "--out", "whole"];
    whole.extend(common);
    ok(&splat(&whole, dir.path()));
    let mut first = vec!["train", d, "--out", "parts", "--stop-after", "25"];
    first.extend(common);
    ok(&splat(&first, dir.path()));
    assert!(!dir.path().join("parts/point_cloud.ply").exists());
    ok(&splat(&["train", "--resume", "parts"], dir.path()));
    let read = |p: &str| std::fs::read(dir.path().join(p)).unwrap();
    assert_eq!(read("whole/point_cloud.ply"), read("parts/point_cloud.ply"));
}

#[test]
fn a_time_budget_plans_the_steps_or_refuses_before_training() {
    let dir = tempfile::tempdir().unwrap();
    let d = data(dir.path());
    let d = d.as_str();
    let out = splat(
        &[
            "train",
            d,
            "--out",
            "long",
            "--iters",
            "40",
            "--eval",
            "--time-budget",
            "1h",
        ],
        dir.path(),
    );
    let err = ok(&out);
    assert!(err.contains("planned 40 of 40 steps"), "{err}");
    let m = json(&dir.path().join("long"), "metrics.json");
    assert_eq!(m["iterations"], 40);
    assert_eq!(m["time_budget"]["planned_steps"], 40);
    assert_eq!(m["time_budget"]["seconds"], 3600.0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("ran 40 of the 40 planned steps (100%)"),
        "{stdout}"
    );

    // The calibration alone takes longer than a millisecond: nothing is trained.
    let out = splat(
        &[
            "train",
            d,
            "--out",
            "short",
            "--iters",
            "40",
            "--time-budget",
            "0.001s",
        ],
        dir.path(),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a useful splat needs at least 40"), "{err}");
    assert!(!dir.path().join("short/config.json").exists());
}

#[test]
fn bad_resolution_schedules_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (schedule, needle) in [
        ("4@0,2@0", "steps must increase"),
        ("4-0", "FACTOR@STEP"),
        ("0@0", "not in 1..=64"),
        ("x@3", "not a whole factor"),
    ] {
        let out = splat(
            &[
                "train",
                "nowhere",
                "--out",
                "o",
                "--resolution-schedule",
                schedule,
            ],
            dir.path(),
        );
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{schedule}: {err}");
    }
    for (budget, needle) in [
        ("90x", "unit must be s, m or h"),
        ("0m", "above 0"),
        ("m", "not a duration"),
    ] {
        let out = splat(
            &["train", "nowhere", "--out", "o", "--time-budget", budget],
            dir.path(),
        );
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{budget}: {err}");
    }
}

/// `--pose-opt-lr` is the run's pose rate in config.json (gsplat's 1e-5 without it), needs
/// `--pose-opt`, and refuses rates that are not above 0 and at most 1e-2; the printed next step
/// starts this binary as the test did.
#[test]
fn pose_opt_lr_reaches_the_run_and_bad_rates_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = data(dir.path());
    let d = d.as_str();
    let base = ["train", d, "--iters", "20", "--pose-opt", "--out"];
    let out = splat(&[&base[..], &["dflt"]].concat(), dir.path());
    ok(&out);
    // The next step names this program as it was started (here by its path, not as `splat`).
    let next = format!("view it: {} view dflt --data ", env!("CARGO_BIN_EXE_splat"));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&next),
        "{next}"
    );
    let lr = |out: &str| json(&dir.path().join(out), "config.json")["train"]["pose_opt_lr"].clone();
    assert_eq!(lr("dflt"), 1e-5);
    ok(&splat(
        &[&base[..], &["set", "--pose-opt-lr", "6e-5"]].concat(),
        dir.path(),
    ));
    assert_eq!(lr("set"), 6e-5);
    for (rate, needle) in [
        ("0", "above 0"),
        ("0.5", "at most 1e-2"),
        ("x", "not a number"),
    ] {
        let out = splat(
            &[&base[..], &["bad", "--pose-opt-lr", rate]].concat(),
            dir.path(),
        );
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{rate}: {err}");
    }
    let out = splat(
        &["train", d, "--out", "bad", "--pose-opt-lr", "1e-4"],
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pose-opt"));
    assert!(!dir.path().join("bad").exists());
}
