//! Crash safety end to end: a training child process is SIGKILLed in the middle of a step, of a
//! densification and of a checkpoint write (stopped there by `SPLAT_TEST_PAUSE_AT`, see
//! `splat_train::testhook`), then resumed with `splat train --resume`; the final PLY must be bitwise
//! identical to an uninterrupted run with the same seed, and the checkpoint the killed run left must be
//! complete.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use splat_io::dataset::demo::{write_demo_dataset, DemoOptions};

const ITERS: &str = "120";

fn train_args(data: &Path, out: &Path) -> Vec<String> {
    let mut a: Vec<String> = vec!["train".into(), data.display().to_string()];
    a.extend(
        [
            "--out",
            &out.display().to_string(),
            "--preset",
            "original",
            "--iters",
            ITERS,
            "--seed",
            "5",
            "--densify-from",
            "20",
            "--densify-interval",
            "20",
            "--densify-until",
            "100",
            "--opacity-reset-interval",
            "60",
            "--checkpoint-every",
            "25",
        ]
        .map(String::from),
    );
    a
}

fn splat() -> Command {
    Command::new(env!("CARGO_BIN_EXE_splat"))
}

fn run_ok(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `cmd` until it reports the pause point, then SIGKILLs it once the checkpoint of step `ckpt` is
/// complete in `out`. Checkpoints are written beside training, so at the pause the last one submitted
/// may still be on its way (on a loaded machine, a few fast steps outrun it); the paused run's writer
/// finishes it while the test waits (up to a minute, after which the step is checked as it stands).
fn run_and_kill_at(mut cmd: Command, point: &str, step: u64, out: &Path, ckpt: u64) {
    let mut child = cmd
        .env("SPLAT_TEST_PAUSE_AT", format!("{point}:{step}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let marker = format!("SPLAT_TEST_PAUSED {point} {step}");
    let mut seen = Vec::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        if line == marker {
            let waited = std::time::Instant::now();
            while checkpoint_step_now(out) != Some(ckpt)
                && waited.elapsed() < std::time::Duration::from_secs(60)
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            child.kill().unwrap(); // SIGKILL
            let status = child.wait().unwrap();
            assert!(!status.success());
            return;
        }
        seen.push(line);
    }
    let status = child.wait().unwrap();
    panic!(
        "{marker} never printed (exit {status}); stderr:\n{}",
        seen.join("\n")
    );
}

fn checkpoint_step_now(out: &Path) -> Option<u64> {
    splat_train::run::read_checkpoint(out)
        .ok()
        .map(|(state, _)| state.step)
}

fn checkpoint_step(out: &Path) -> u64 {
    let (state, _) = splat_train::run::read_checkpoint(out).expect("a complete checkpoint");
    state.step
}

fn temporaries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(".tmp"))
        .collect()
}

#[test]
fn sigkill_then_resume_gives_the_uninterrupted_result() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    write_demo_dataset(
        &data,
        &DemoOptions {
            width: 32,
            height: 24,
            views: 8,
            points: 400,
            seed: 2,
            ..Default::default()
        },
    )
    .unwrap();

    let reference = dir.path().join("reference");
    run_ok(splat().args(train_args(&data, &reference)));
    let expected = std::fs::read(reference.join("point_cloud.ply")).unwrap();

    // (pause point, step, the checkpoint step the kill must leave)
    let plans: &[&[(&str, u64, u64)]] = &[
        &[("step", 37, 25)],
        &[("densify", 60, 50)],
        &[("checkpoint-write", 75, 50)],
        // Killed twice: once in a step, then during the resumed run's densification.
        &[("step", 30, 25), ("densify", 80, 75)],
    ];
    for (k, plan) in plans.iter().enumerate() {
        let out = dir.path().join(format!("killed-{k}"));
        for (i, &(point, step, ckpt)) in plan.iter().enumerate() {
            let mut cmd = splat();
            if i == 0 {
                cmd.args(train_args(&data, &out));
            } else {
                cmd.arg("train").arg("--resume").arg(&out);
            }
            run_and_kill_at(cmd, point, step, &out, ckpt);
            assert!(
                !out.join("point_cloud.ply").exists(),
                "{point}:{step} left a PLY"
            );
            assert_eq!(
                checkpoint_step(&out),
                ckpt,
                "after a kill at {point}:{step}"
            );
            if point == "checkpoint-write" {
                assert_eq!(
                    temporaries(&out.join("checkpoints")).len(),
                    1,
                    "the half-written checkpoint is a temporary file"
                );
            }
        }
        run_ok(splat().arg("train").arg("--resume").arg(&out));
        let got = std::fs::read(out.join("point_cloud.ply")).unwrap();
        assert!(got == expected, "plan {plan:?}: resumed PLY differs");
        assert!(temporaries(&out.join("checkpoints")).is_empty());
        assert!(temporaries(&out).is_empty());
    }
}
