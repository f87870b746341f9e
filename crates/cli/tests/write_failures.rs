//! Writes that fail: a full disk and a read-only output folder end training with one clear line that
//! names the file and the cause, and leave the earlier outputs intact (the last checkpoint loads and a
//! later `--resume` finishes the run).
//!
//! The full disk is made two ways: a file-size limit (`ulimit -f`, with SIGXFSZ ignored, so a write past
//! it fails like one on a full disk, with EFBIG) which works everywhere, and, where this process may
//! mount, a small tmpfs that really runs out of space (ENOSPC).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use splat_io::dataset::demo::{write_demo_dataset, DemoOptions};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_splat")
}

fn dataset(dir: &Path) -> PathBuf {
    let data = dir.join("data");
    write_demo_dataset(
        &data,
        &DemoOptions {
            width: 32,
            height: 24,
            views: 6,
            points: 400,
            seed: 4,
            ..Default::default()
        },
    )
    .unwrap();
    data
}

/// Trains 25 of 60 steps into `out`, leaving the checkpoint of step 25.
fn start_run(data: &Path, out: &Path) {
    let o = Command::new(bin())
        .arg("train")
        .arg(data)
        .arg("--out")
        .arg(out)
        .args([
            "--preset",
            "original",
            "--iters",
            "60",
            "--checkpoint-every",
            "25",
            "--stop-after",
            "30",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn resume(out: &Path) -> Output {
    Command::new(bin())
        .arg("train")
        .arg("--resume")
        .arg(out)
        .output()
        .unwrap()
}

fn last_line(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    err.trim_end().lines().last().unwrap_or("").to_string()
}

fn checkpoint_step(out: &Path) -> u64 {
    splat_train::run::read_checkpoint(out).unwrap().0.step
}

fn no_temporaries(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().to_string();
        assert!(!name.contains(".tmp"), "{name} left in {}", dir.display());
    }
}

/// After a failed write: one error line naming `file`, the step-25 checkpoint intact, nothing half
/// written, no PLY; then a resume without the fault completes.
fn check_failed_then_recovers(o: &Output, out: &Path, file: &str, cause: &[&str]) {
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let line = last_line(o);
    eprintln!("{line}");
    assert!(line.starts_with("error: "), "{line}");
    assert!(
        line.matches("os error").count() <= 1,
        "cause repeated: {line}"
    );
    assert!(line.contains(file), "{file} not in: {line}");
    assert!(
        cause.iter().any(|c| line.contains(c)),
        "{cause:?} not in: {line}"
    );
    assert_eq!(checkpoint_step(out), 25);
    assert!(!out.join("point_cloud.ply").exists());
}

#[test]
fn a_full_disk_stops_training_and_keeps_the_last_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path());
    let out = dir.path().join("run");
    start_run(&data, &out);
    let ckpt_size = std::fs::metadata(out.join("checkpoints/latest.ckpt"))
        .unwrap()
        .len();
    let before = std::fs::read(out.join("checkpoints/latest.ckpt")).unwrap();
    // Room for config.json, not for a checkpoint (limit in 1024-byte blocks).
    let blocks = (ckpt_size / 1024 / 2).max(8);
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" train --resume \"$1\""
        ))
        .arg(bin())
        .arg(&out)
        .output()
        .unwrap();
    check_failed_then_recovers(&o, &out, "latest.ckpt", &["File too large", "os error 27"]);
    assert!(
        last_line(&o).contains("step 25 is intact"),
        "{}",
        last_line(&o)
    );
    assert_eq!(
        std::fs::read(out.join("checkpoints/latest.ckpt")).unwrap(),
        before
    );
    no_temporaries(&out.join("checkpoints"));
    let o = resume(&out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.join("point_cloud.ply").is_file());
}

#[test]
fn a_real_full_tmpfs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path());
    let staging = dir.path().join("staging");
    start_run(&data, &staging);
    let ckpt_size = std::fs::metadata(staging.join("checkpoints/latest.ckpt"))
        .unwrap()
        .len();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    // Room for the run's files and half a checkpoint more: the next checkpoint write runs out.
    let size = ckpt_size * 3 / 2 + 16 * 1024;
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}")])
        .arg("tmpfs")
        .arg(&mnt)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !mounted {
        eprintln!("cannot mount a tmpfs here (not root?): the ENOSPC case is covered by the ulimit test only");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mnt.clone());
    let out = mnt.join("run");
    let cp = Command::new("cp")
        .arg("-r")
        .arg(&staging)
        .arg(&out)
        .status()
        .unwrap();
    assert!(cp.success());
    let o = resume(&out);
    check_failed_then_recovers(&o, &out, "latest.ckpt", &["No space left", "os error 28"]);
    no_temporaries(&out.join("checkpoints"));
}

#[test]
fn a_read_only_output_folder() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path());
    let out = dir.path().join("run");
    start_run(&data, &out);
    let before = std::fs::read(out.join("checkpoints/latest.ckpt")).unwrap();
    let config = std::fs::read(out.join("config.json")).unwrap();
    // Root ignores permission bits: make the folders immutable instead where that works.
    let dirs = [out.clone(), out.join("checkpoints")];
    let set = |on: bool| {
        for d in dirs.iter().rev() {
            let mut p = std::fs::metadata(d).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            p.set_readonly(on);
            let _ = std::fs::set_permissions(d, p);
            let _ = Command::new("chattr")
                .arg(if on { "+i" } else { "-i" })
                .arg(d)
                .output();
        }
        if !on {
            for d in &dirs {
                let mut p = std::fs::metadata(d).unwrap().permissions();
                #[allow(clippy::permissions_set_readonly_false)]
                p.set_readonly(false);
                std::fs::set_permissions(d, p).unwrap();
            }
        }
    };
    set(true);
    let probe = std::fs::write(out.join("probe"), b"x").is_err();
    let o = resume(&out);
    set(false);
    if !probe {
        let _ = std::fs::remove_file(out.join("probe"));
        eprintln!("cannot make a folder read-only here; skipped");
        return;
    }
    check_failed_then_recovers(
        &o,
        &out,
        "config.json",
        &["Permission denied", "Operation not permitted", "Read-only"],
    );
    assert_eq!(
        std::fs::read(out.join("checkpoints/latest.ckpt")).unwrap(),
        before
    );
    assert_eq!(std::fs::read(out.join("config.json")).unwrap(), config);
    let o = resume(&out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
