//! Data-parallel training on MPI (built with `--features mpi`; `.ci/run` installs Open MPI and runs
//! this file): `mpirun -np 2 splat train --batch 2` must write the same PLY, bit for bit, as one
//! process with `--batch 2`, also when the 2-rank run is stopped and resumed; a replica that drifts is
//! caught by the checksum comparison.
//!
//! Why bitwise: each rank renders one of the two views of a step and the all-reduce adds the two
//! ranks' gradients and statistics, a + b, which is the sum one process computes (IEEE addition of
//! two operands commutes). With more than two ranks, or more views per rank, the reduction order
//! differs from the single process's and results agree only to float rounding.
#![cfg(feature = "mpi")]

use std::path::Path;
use std::process::{Command, Output};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/cup");

fn args(out: &Path) -> Vec<String> {
    let mut a: Vec<String> = ["train", DATA, "--images", "images_4", "--eval"]
        .map(String::from)
        .to_vec();
    a.extend(
        [
            "--preset",
            "original",
            "--iters",
            "240",
            "--batch",
            "2",
            "--seed",
            "3",
            "--densify-from",
            "40",
            "--densify-interval",
            "40",
            "--opacity-reset-interval",
            "160",
            "--checkpoint-every",
            "30",
            "--out",
        ]
        .map(String::from),
    );
    a.push(out.display().to_string());
    a
}

fn mpirun(np: u32, splat_args: &[String], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new("mpirun");
    c.args(["--oversubscribe", "-np", &np.to_string()])
        .arg(env!("CARGO_BIN_EXE_splat"))
        .args(splat_args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("mpirun (install openmpi-bin)")
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn two_ranks_equal_one_process_with_the_same_batch() {
    assert!(Path::new(DATA).is_dir(), "{DATA} missing");
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("single");
    ok(&Command::new(env!("CARGO_BIN_EXE_splat"))
        .args(args(&single))
        .output()
        .unwrap());
    let expected = std::fs::read(single.join("point_cloud.ply")).unwrap();

    let two = dir.path().join("two");
    let o = mpirun(2, &args(&two), &[]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("2 MPI ranks"));
    assert!(
        std::fs::read(two.join("point_cloud.ply")).unwrap() == expected,
        "the 2-rank PLY differs from the single-process one"
    );
    let m1: serde_json::Value =
        serde_json::from_slice(&std::fs::read(single.join("metrics.json")).unwrap()).unwrap();
    let m2: serde_json::Value =
        serde_json::from_slice(&std::fs::read(two.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(m1["psnr"], m2["psnr"]);

    // Stopped after 70 steps (checkpoint of step 60), resumed with 2 ranks.
    let resumed = dir.path().join("resumed");
    let mut a = args(&resumed);
    a.extend(["--stop-after".into(), "70".into()]);
    ok(&mpirun(2, &a, &[]));
    assert!(!resumed.join("point_cloud.ply").exists());
    let r = vec![
        "train".into(),
        "--resume".into(),
        resumed.display().to_string(),
    ];
    ok(&mpirun(2, &r, &[]));
    assert!(
        std::fs::read(resumed.join("point_cloud.ply")).unwrap() == expected,
        "the resumed 2-rank PLY differs"
    );
}

#[test]
fn a_drifting_replica_stops_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("drift");
    let o = mpirun(2, &args(&out), &[("SPLAT_TEST_DRIFT_AT", "1:30")]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("replicas of the 2 ranks differ at step 100"),
        "{err}"
    );
    assert!(err.contains("checkpoint of step 90 is intact"), "{err}");
    assert!(!out.join("point_cloud.ply").exists());
}
