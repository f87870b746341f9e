//! `splat train --backend gpu` end to end on a generated capture: resident blocks (the state on the
//! device, densification there too), a checkpoint, a stop and a resume, and the result bit-identical to an
//! uninterrupted run (the PLY byte for byte). Skipped without a GPU unless `SPLAT_REQUIRE_GPU=1`.

use std::path::Path;
use std::process::{Command, Output};

fn splat(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_splat"))
        .args(args)
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .expect("run splat")
}

/// Writes a generated capture of `width` x `height`, `views` views and `points` points into `dir/data`.
fn demo_data(
    dir: &Path,
    (width, height, views, points, seed): (u32, u32, usize, usize, u64),
) -> String {
    let data = dir.join("data");
    splat_io::dataset::demo::write_demo_dataset(
        &data,
        &splat_io::dataset::demo::DemoOptions {
            width,
            height,
            views,
            points,
            seed,
            ..Default::default()
        },
    )
    .unwrap();
    data.to_str().unwrap().to_string()
}

/// True (with a message) when the run found no GPU and none is required: the test is skipped.
fn no_gpu(out: &Output) -> bool {
    let err = String::from_utf8_lossy(&out.stderr);
    let skip = !out.status.success()
        && err.contains("cannot open a GPU")
        && std::env::var("SPLAT_REQUIRE_GPU").as_deref() != Ok("1");
    if skip {
        eprintln!("skipped: {err}");
    }
    skip
}

fn ok(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    err
}

#[test]
fn resident_training_resumes_bit_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let data = demo_data(dir.path(), (48, 36, 12, 600, 3));
    let d = data.as_str();
    let common = [
        "--preset",
        "original",
        "--iters",
        "60",
        "--eval",
        "--backend",
        "gpu",
        "--densify-from",
        "20",
        "--densify-interval",
        "15",
        "--opacity-reset-interval",
        "45",
        "--checkpoint-every",
        "25",
    ];
    let mut whole = vec!["train", d, "--out", "whole"];
    whole.extend(common);
    let out = splat(&whole, dir.path());
    if no_gpu(&out) {
        return;
    }
    let err = ok(&out);
    assert!(err.contains("resident: steps run in blocks"), "{err}");

    let mut first = vec!["train", d, "--out", "parts", "--stop-after", "40"];
    first.extend(common);
    ok(&splat(&first, dir.path()));
    assert!(!dir.path().join("parts/point_cloud.ply").exists());
    ok(&splat(
        &["train", "--resume", "parts", "--backend", "gpu"],
        dir.path(),
    ));

    let read = |p: &str| std::fs::read(dir.path().join(p)).unwrap();
    assert_eq!(read("whole/point_cloud.ply"), read("parts/point_cloud.ply"));
    let metrics = |p: &str| -> serde_json::Value {
        serde_json::from_slice(&read(&format!("{p}/metrics.json"))).unwrap()
    };
    let (a, b) = (metrics("whole"), metrics("parts"));
    assert_eq!(a["psnr"], b["psnr"]);
    assert_eq!(a["num_gaussians"], b["num_gaussians"]);
    assert_eq!(a["iterations"], 60);
    assert!(
        a["num_gaussians"].as_u64().unwrap() != 600,
        "densified: {a}"
    );
    assert!(a["backend"].as_str().unwrap().starts_with("gpu"), "{a}");
}

/// `--strategy mcmc --mip-filter`, then `--absgrad`, on the GPU backend: not resident (the output says
/// why: the 3D filter and absgrad are host stages), every step through the per-stage interface, the same
/// refine schedule and count as the CPU backend and a test PSNR within rounding drift of it.
#[test]
fn host_side_options_on_the_gpu_run_per_stage_and_match_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let data = demo_data(dir.path(), (48, 36, 12, 400, 3));
    let d = data.as_str();
    let common = [
        "train",
        d,
        "--preset",
        "original",
        "--iters",
        "80",
        "--eval",
        "--strategy",
        "mcmc",
        "--cap-max",
        "450",
        "--densify-from",
        "20",
        "--densify-interval",
        "15",
        "--mip-filter",
    ];
    let mut gpu = common.to_vec();
    gpu.extend(["--out", "gpu", "--backend", "gpu"]);
    let out = splat(&gpu, dir.path());
    if no_gpu(&out) {
        return;
    }
    let err = ok(&out);
    assert!(
        err.contains("not resident (--mip-filter run on the host)"),
        "{err}"
    );
    let mut cpu = common.to_vec();
    cpu.extend(["--out", "cpu", "--backend", "cpu"]);
    ok(&splat(&cpu, dir.path()));
    let metrics = |p: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.path().join(p).join("metrics.json")).unwrap())
            .unwrap()
    };
    let (g, c) = (metrics("gpu"), metrics("cpu"));
    // 400 -> 420 -> 441 -> 450 (cap): refines at 30, 45, 60, 75.
    assert_eq!(g["num_gaussians"], 450, "{g}");
    assert_eq!(c["num_gaussians"], 450, "{c}");
    let (pg, pc) = (g["psnr"].as_f64().unwrap(), c["psnr"].as_f64().unwrap());
    assert!((pg - pc).abs() < 0.1, "gpu {pg} vs cpu {pc}");
    // absgrad on the GPU: per stage (its second records pass), densifying as the CPU does.
    let abs_args = |backend: &'static str, out: &'static str| {
        // train, data, --preset original, --iters 80
        let mut a = common[..6].to_vec();
        a.extend([
            "--eval",
            "--absgrad",
            "--densify-from",
            "20",
            "--densify-interval",
            "15",
        ]);
        a.extend(["--out", out, "--backend", backend]);
        a
    };
    let err = ok(&splat(&abs_args("gpu", "abs-gpu"), dir.path()));
    assert!(
        err.contains("not resident (--absgrad run on the host)"),
        "{err}"
    );
    ok(&splat(&abs_args("cpu", "abs-cpu"), dir.path()));
    let (g, c) = (metrics("abs-gpu"), metrics("abs-cpu"));
    let (ng, nc) = (
        g["num_gaussians"].as_f64().unwrap(),
        c["num_gaussians"].as_f64().unwrap(),
    );
    assert!(
        ng > 400.0 && (ng - nc).abs() <= 0.02 * nc,
        "gpu {ng} vs cpu {nc} Gaussians"
    );
}

/// A preset on the GPU runs resident (MCMC with its growth, a coarse-to-fine level change), with the
/// CPU's refine schedule and count and a test PSNR within rounding drift of the CPU's.
#[test]
fn presets_run_resident_on_the_gpu() {
    let dir = tempfile::tempdir().unwrap();
    // 160 x 128: the coarsest level is 1/2 (a 64-pixel short side), full size from step 24 of 60.
    let data = demo_data(dir.path(), (160, 128, 8, 400, 3));
    let d = data.as_str();
    let args = |backend: &'static str| {
        let out = ["fast-", backend].concat();
        let mut a: Vec<String> = ["train", d, "--preset", "fast", "--iters", "60", "--eval"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(["--out".into(), out, "--backend".into(), backend.into()]);
        a
    };
    let gpu = args("gpu");
    let out = splat(
        &gpu.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        dir.path(),
    );
    if no_gpu(&out) {
        return;
    }
    let err = ok(&out);
    assert!(err.contains("resident: steps run in blocks"), "{err}");
    assert!(
        err.contains("resolution 1/2 from step 0, 1/1 from step 24"),
        "{err}"
    );
    let cpu = args("cpu");
    ok(&splat(
        &cpu.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        dir.path(),
    ));
    let metrics = |p: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.path().join(p).join("metrics.json")).unwrap())
            .unwrap()
    };
    let (g, c) = (metrics("fast-gpu"), metrics("fast-cpu"));
    assert_eq!(g["num_gaussians"], c["num_gaussians"], "{g} {c}");
    let (pg, pc) = (g["psnr"].as_f64().unwrap(), c["psnr"].as_f64().unwrap());
    assert!((pg - pc).abs() < 0.2, "gpu {pg} vs cpu {pc}");
    // A time budget calibrates the way the run trains: in resident blocks. (1 s is too short on a
    // software device, where the run stops with an error; an H200 plans and runs all 60 steps.)
    let mut budget = args("gpu");
    budget.extend(["--time-budget".into(), "1s".into()]);
    let out = splat(
        &budget.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        dir.path(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Gaussians, resident); planned"), "{err}");
}

/// `splat bench --backend gpu --json`: the resident counters at the top level (the sort's passes are
/// those of this image's tile bits and the depth's 32, 8 bits a pass), device memory per Gaussian, a
/// `device_ms` per stage from timestamp queries and the device's measured peaks. On the CPU backend the
/// counters are null.
#[test]
fn gpu_bench_reports_the_counters() {
    let dir = tempfile::tempdir().unwrap();
    let data = demo_data(dir.path(), (64, 48, 4, 300, 5));
    let d = data.as_str();
    let args = |backend: &'static str, json: &'static str| {
        vec![
            "bench",
            d,
            "--steps",
            "3",
            "--warmup",
            "1",
            "--sh-degree",
            "3",
            "--backend",
            backend,
            "--json",
            json,
        ]
    };
    let out = splat(&args("gpu", "gpu.json"), dir.path());
    if no_gpu(&out) {
        return;
    }
    ok(&out);
    let read = |p: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.path().join(p)).unwrap()).unwrap()
    };
    let gpu = read("gpu.json");
    // 64 x 48 pixels: 4 x 3 = 12 tiles need 4 bits; 36 key bits, 5 passes.
    assert_eq!(gpu["sort_passes_per_step"], 5.0, "{gpu}");
    for key in [
        "dispatches_per_step",
        "submissions_per_step",
        "readbacks_per_step",
        "sort_bytes_per_step",
        "device_bytes_per_gaussian",
        "device_bytes_per_intersection",
    ] {
        let v = gpu[key].as_f64().unwrap_or_else(|| panic!("{key}: {gpu}"));
        assert!(v > 0.0, "{key} = {v}");
    }
    // Device memory per Gaussian at SH 3 (the bound is 1,200): parameters and both moments 708,
    // the projection's outputs, its gradients and the statistics; the parameter gradients (236) are
    // never stored, as the projection backward is fused with Adam.
    let per_gaussian = gpu["device_bytes_per_gaussian"].as_f64().unwrap();
    assert!(per_gaussian <= 850.0, "{per_gaussian} bytes per Gaussian");
    // The template's dispatches and its holes': tens on this small scene.
    let dispatches = gpu["dispatches_per_step"].as_f64().unwrap();
    assert!((20.0..200.0).contains(&dispatches), "{dispatches}");
    // Device time per stage where the device has timestamp queries (lavapipe does): no more than the
    // resident step's wall time, and the measured peaks with it.
    let stages = gpu["stages"].as_array().unwrap();
    if stages[0]["device_ms"].is_number() {
        let device: f64 = stages
            .iter()
            .map(|s| s["device_ms"].as_f64().unwrap())
            .sum();
        let wall = gpu["resident"]["ms_per_step"].as_f64().unwrap();
        assert!(
            device > 0.0 && device <= wall * 1.02,
            "device {device} ms, wall {wall} ms"
        );
        assert!(gpu["device_peak_gflops"].as_f64().unwrap() > 0.0, "{gpu}");
        assert!(gpu["device_peak_gbytes_per_second"].as_f64().unwrap() > 0.0);
        assert!(stages[2]["device_fraction_of_peak"].as_f64().unwrap() > 0.0);
    } else {
        assert!(stages.iter().all(|s| s["device_ms"].is_null()), "{gpu}");
    }
    ok(&splat(&args("cpu", "cpu.json"), dir.path()));
    let cpu = read("cpu.json");
    assert!(cpu["dispatches_per_step"].is_null(), "{cpu}");
    assert!(cpu["sort_passes_per_step"].is_null(), "{cpu}");

    // Atomic sums: no gather pass, so one dispatch a step fewer; refused on the CPU.
    let mut atomic = args("gpu", "atomic.json");
    atomic.push("--gpu-atomic-backward");
    ok(&splat(&atomic, dir.path()));
    let atomic = read("atomic.json");
    let engine = atomic["resident"]["engine"].as_str().unwrap();
    assert!(engine.contains("atomic backward sums"), "{engine}");
    assert_eq!(
        atomic["dispatches_per_step"].as_f64().unwrap(),
        dispatches - 1.0
    );
    let mut refused = args("cpu", "refused.json");
    refused.push("--gpu-atomic-backward");
    let out = splat(&refused, dir.path());
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--gpu-atomic-backward needs --backend gpu"),
        "{err}"
    );
}

/// Masks and an appearance model on the GPU: the run says it goes per stage (the loss and the models on
/// the host, the rasterizer on the device) and ends within rounding drift of the CPU's.
#[test]
fn masks_and_appearance_run_per_stage_on_the_gpu() {
    use splat_io::dataset::demo_variants::DemoVariant;
    let note = "not resident (--appearance, masks run on the host)";
    let Some(dir) = per_stage_like_cpu(DemoVariant::Mover, &["--appearance", "affine"], note)
    else {
        return;
    };
    let err =
        String::from_utf8_lossy(&std::fs::read(dir.path().join("gpu.log")).unwrap()).to_string();
    assert!(err.contains("masks from"), "{err}");
}

/// `--pose-opt` on the GPU (the pose gradient's terms from the project backward's kernel): per stage,
/// the refined poses within rounding drift of the CPU run's.
#[test]
fn pose_opt_runs_per_stage_on_the_gpu() {
    use splat_io::dataset::demo_variants::DemoVariant;
    let note = "not resident (--pose-opt run on the host)";
    let Some(dir) = per_stage_like_cpu(
        DemoVariant::PerturbedPoses,
        &[
            "--pose-opt",
            "--pose-opt-lr",
            "1.5e-4",
            "--pose-opt-start",
            "0",
        ],
        note,
    ) else {
        return;
    };
    // Quaternion and translation of every image, in file order.
    let read = |path: &str| -> Vec<f64> {
        let text = std::fs::read_to_string(dir.path().join(path)).unwrap();
        let lines = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
        let values = |l: &str| -> Vec<f64> {
            let w = l.split_whitespace().skip(1).take(7);
            w.map(|v| v.parse().unwrap()).collect()
        };
        lines.flat_map(values).collect()
    };
    let (g, c) = (read("app-gpu/images.txt"), read("app-cpu/images.txt"));
    let given = read("data/sparse/0/images.txt");
    assert_eq!((g.len(), given.len()), (12 * 7, 12 * 7));
    let moved = c
        .iter()
        .zip(&given)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(moved > 1e-5, "the CPU run's poses did not move");
    let worst = g
        .iter()
        .zip(&c)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(worst < 1e-3, "gpu and cpu poses differ by {worst}");
}

/// Trains the demo `variant` for 60 steps with `extra` flags on the GPU and on the CPU (into
/// `app-gpu`, `app-cpu`; the GPU run's stderr in `gpu.log`): the GPU run says `note`, and both end
/// with the same Gaussian count and PSNR and cc-PSNR within 0.2 dB. None without a GPU.
fn per_stage_like_cpu(
    variant: splat_io::dataset::demo_variants::DemoVariant,
    extra: &[&str],
    note: &str,
) -> Option<tempfile::TempDir> {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let opts = splat_io::dataset::demo::DemoOptions {
        width: 64,
        height: 48,
        views: 12,
        points: 400,
        seed: 3,
        variant,
    };
    splat_io::dataset::demo::write_demo_dataset(&data, &opts).unwrap();
    let d = data.to_str().unwrap();
    let run = |backend: &str| {
        let out = format!("app-{backend}");
        let mut args = vec![
            "train",
            d,
            "--preset",
            "fast",
            "--iters",
            "60",
            "--eval",
            "--out",
            &out,
            "--backend",
            backend,
        ];
        args.extend(extra);
        splat(&args, dir.path())
    };
    let out = run("gpu");
    if no_gpu(&out) {
        return None;
    }
    let err = ok(&out);
    std::fs::write(dir.path().join("gpu.log"), &err).unwrap();
    assert!(err.contains(note), "{err}");
    ok(&run("cpu"));
    let metrics = |p: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.path().join(p).join("metrics.json")).unwrap())
            .unwrap()
    };
    let (g, c) = (metrics("app-gpu"), metrics("app-cpu"));
    assert_eq!(g["num_gaussians"], c["num_gaussians"], "{g} {c}");
    for key in ["psnr", "cc_psnr"] {
        let (a, b) = (g[key].as_f64().unwrap(), c[key].as_f64().unwrap());
        assert!((a - b).abs() < 0.2, "{key}: gpu {a} vs cpu {b}");
    }
    Some(dir)
}
