//! `splat convert`, `train --export`, and every command reading every format; bad files give one
//! `error:` line naming the file, and a failed conversion leaves the output as it was.

use std::path::Path;
use std::process::{Command, Output};

fn splat(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_splat"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run splat")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn user_error(out: &Output, needles: &[&str]) {
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: "), "stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} not in {err}");
    }
    assert!(!err.contains("panicked"));
}

const OUTPUTS: [&str; 8] = [
    "s.compressed.ply",
    "s.splat",
    "s.spz",
    "s4.spz",
    "s.sog",
    "sogdir/meta.json",
    "s.glb",
    "s.gltf",
];

#[test]
fn converts_to_every_format_and_every_command_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&splat(
        &["builtin-scene", "--out", "s.ply", "--gaussians", "3000"],
        d,
    ));
    for out in OUTPUTS {
        let mut args = vec!["convert", "s.ply", out];
        if out == "s4.spz" {
            args.extend(["--spz-version", "4"]);
        }
        let stdout = ok(&splat(&args, d));
        assert!(stdout.contains("3000 splats"), "{stdout}");
        let info = ok(&splat(&["info", out], d));
        assert!(info.contains("3000 Gaussians"), "{out}: {info}");
        ok(&splat(
            &[
                "render", out, "--out", "r.png", "--width", "48", "--height", "32",
            ],
            d,
        ));
    }
    // A SOG folder is read by naming it, too.
    assert!(ok(&splat(&["info", "sogdir"], d)).contains("3000 Gaussians"));
    // Back to PLY, and down to SH degree 0.
    let stdout = ok(&splat(
        &["convert", "s.spz", "back.ply", "--sh-degree", "0"],
        d,
    ));
    assert!(stdout.contains("SH degree 0"), "{stdout}");
    assert!(ok(&splat(&["info", "back.ply"], d)).contains("SH degree 0"));
}

#[test]
fn bad_inputs_are_one_line_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&splat(
        &["builtin-scene", "--out", "s.ply", "--gaussians", "500"],
        d,
    ));
    ok(&splat(&["convert", "s.ply", "good.spz"], d));
    ok(&splat(&["convert", "s.ply", "good.sog"], d));
    let spz = std::fs::read(d.join("good.spz")).unwrap();
    std::fs::write(d.join("cut.spz"), &spz[..spz.len() / 2]).unwrap();
    std::fs::write(d.join("garbage.spz"), b"not a splat at all").unwrap();
    std::fs::write(d.join("odd.splat"), [0u8; 33]).unwrap();
    let sog = std::fs::read(d.join("good.sog")).unwrap();
    std::fs::write(d.join("cut.sog"), &sog[..sog.len() - 40]).unwrap();
    std::fs::write(d.join("x.glb"), b"glTF\x02\0\0\0\x20\0\0\0\xff\xff\0\0JSON").unwrap();
    std::fs::write(d.join("nan.splat"), {
        let mut b = vec![0u8; 32];
        b[..4].copy_from_slice(&f32::NAN.to_le_bytes());
        b
    })
    .unwrap();
    let cases: [(&str, &[&str]); 7] = [
        ("missing.spz", &["missing.spz"]),
        ("cut.spz", &["cut.spz", "gzip"]),
        ("garbage.spz", &["garbage.spz"]),
        ("odd.splat", &["odd.splat", "multiple of 32"]),
        ("cut.sog", &["cut.sog", "zip"]),
        ("x.glb", &["x.glb", "truncated"]),
        ("nan.splat", &["nan.splat", "not finite"]),
    ];
    std::fs::write(d.join("out.ply"), b"keep me").unwrap();
    for (input, needles) in cases {
        user_error(&splat(&["convert", input, "out.ply"], d), needles);
        user_error(&splat(&["info", input], d), needles);
    }
    // Nothing the user had is lost.
    assert_eq!(std::fs::read(d.join("out.ply")).unwrap(), b"keep me");
    user_error(
        &splat(&["convert", "s.ply", "s.xyz"], d),
        &["s.xyz", "output format"],
    );
    let out = splat(&["convert", "s.ply", "v.spz", "--spz-version", "7"], d);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("SPZ versions 2, 3 or 4"));
}

#[test]
fn train_exports_the_requested_formats() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    splat_io::dataset::demo::write_demo_dataset(
        &data,
        &splat_io::dataset::demo::DemoOptions {
            width: 40,
            height: 30,
            views: 8,
            points: 200,
            seed: 2,
            ..Default::default()
        },
    )
    .unwrap();
    let d = data.to_str().unwrap();
    let args = [
        "train",
        d,
        "--out",
        "run",
        "--preset",
        "original",
        "--iters",
        "20",
        "--export",
        "spz,sog,glb",
    ];
    let stdout = ok(&splat(&args, dir.path()));
    for name in ["point_cloud.spz", "point_cloud.sog", "point_cloud.glb"] {
        assert!(stdout.contains(name), "{stdout}");
        let info = ok(&splat(&["info", &format!("run/{name}")], dir.path()));
        let ply = ok(&splat(&["info", "run/point_cloud.ply"], dir.path()));
        let count = |s: &str| s.split_whitespace().find_map(|w| w.parse::<usize>().ok());
        assert_eq!(count(&info), count(&ply), "{info} / {ply}");
    }
    let out = splat(
        &["train", d, "--out", "run2", "--export", "tiff"],
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown format"));
}
