//! The CLI on a corpus of broken datasets: each must end with exit code 1 and one `error:` line that
//! names the file at fault and what is wrong, never a panic, and must leave no output behind.

use std::path::{Path, PathBuf};
use std::process::Command;

use splat_io::dataset::demo::{write_demo_dataset, DemoOptions};

/// A small valid COLMAP text capture to break.
fn base(dir: &Path, name: &str) -> PathBuf {
    let root = dir.join(name);
    write_demo_dataset(
        &root,
        &DemoOptions {
            width: 24,
            height: 18,
            views: 4,
            points: 40,
            seed: 3,
            ..Default::default()
        },
    )
    .unwrap();
    root
}

fn edit(path: &Path, f: impl FnOnce(String) -> String) {
    let text = std::fs::read_to_string(path).unwrap();
    std::fs::write(path, f(text)).unwrap();
}

/// Rewrites one line (0-based among all lines) of a text file.
fn replace_line(path: &Path, index: usize, line: &str) {
    edit(path, |t| {
        let mut lines: Vec<String> = t.lines().map(String::from).collect();
        lines[index] = line.to_string();
        lines.join("\n") + "\n"
    });
}

/// First line that is not a comment.
fn first_data_line(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .position(|l| !l.starts_with('#'))
        .unwrap()
}

struct Case {
    name: &'static str,
    /// Must appear in the message (a file name and the cause).
    needles: Vec<String>,
    make: Box<dyn Fn(&Path) -> PathBuf>,
}

fn case(name: &'static str, needles: &[&str], make: impl Fn(&Path) -> PathBuf + 'static) -> Case {
    Case {
        name,
        needles: needles.iter().map(|s| s.to_string()).collect(),
        make: Box::new(make),
    }
}

fn npy(rows: usize, cols: usize, values: &[f64], descr: &str) -> Vec<u8> {
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend((header.len() as u16).to_le_bytes());
    b.extend(header.as_bytes());
    for v in values {
        b.extend(v.to_le_bytes());
    }
    b
}

fn llff(dir: &Path, name: &str, rows: usize, values: Vec<f64>) -> PathBuf {
    let root = base(dir, name);
    std::fs::remove_dir_all(root.join("sparse")).unwrap();
    std::fs::write(root.join("poses_bounds.npy"), npy(rows, 17, &values, "<f8")).unwrap();
    root
}

fn cases() -> Vec<Case> {
    vec![
        case("missing folder", &["does-not-exist", "No such file"], |d| {
            d.join("does-not-exist")
        }),
        case("empty folder", &["no dataset found"], |d| {
            let p = d.join("empty");
            std::fs::create_dir(&p).unwrap();
            p
        }),
        case(
            "cameras.txt: unknown model",
            &["cameras.txt", "FISHEYE_42", "not supported"],
            |d| {
                let r = base(d, "model");
                let p = r.join("sparse/0/cameras.txt");
                replace_line(&p, first_data_line(&p), "1 FISHEYE_42 24 18 20 20 12 9");
                r
            },
        ),
        case(
            "cameras.txt: focal is not a number",
            &["cameras.txt", "line", "\"abc\""],
            |d| {
                let r = base(d, "focal");
                let p = r.join("sparse/0/cameras.txt");
                replace_line(&p, first_data_line(&p), "1 PINHOLE 24 18 abc 20 12 9");
                r
            },
        ),
        case(
            "cameras.txt: zero focal",
            &["cameras.txt", "focal length <= 0"],
            |d| {
                let r = base(d, "zerofocal");
                let p = r.join("sparse/0/cameras.txt");
                replace_line(&p, first_data_line(&p), "1 PINHOLE 24 18 0 20 12 9");
                r
            },
        ),
        case(
            "images.txt: NaN in a pose",
            &["images.txt", "non-finite"],
            |d| {
                let r = base(d, "nanpose");
                let p = r.join("sparse/0/images.txt");
                replace_line(&p, first_data_line(&p), "1 nan 0 0 0 0 0 1 1 view_000.png");
                r
            },
        ),
        case(
            "images.txt: image refers to a missing camera",
            &["images.txt", "camera"],
            |d| {
                let r = base(d, "nocam");
                let p = r.join("sparse/0/images.txt");
                replace_line(&p, first_data_line(&p), "1 1 0 0 0 0 0 1 99 view_000.png");
                r
            },
        ),
        case(
            "points3D.txt: infinite coordinate",
            &["points3D.txt", "non-finite"],
            |d| {
                let r = base(d, "infpoint");
                let p = r.join("sparse/0/points3D.txt");
                replace_line(&p, first_data_line(&p), "1 inf 0 0 10 20 30 0.5");
                r
            },
        ),
        case("cameras.bin truncated", &["cameras.bin"], |d| {
            let r = base(d, "truncbin");
            let m = r.join("sparse/0");
            std::fs::remove_file(m.join("cameras.txt")).unwrap();
            // Two cameras announced, only part of one present.
            let mut b = 2u64.to_le_bytes().to_vec();
            b.extend(1u32.to_le_bytes());
            b.extend(1i32.to_le_bytes());
            std::fs::write(m.join("cameras.bin"), b).unwrap();
            r
        }),
        case(
            "points3D.bin announces 2^60 points",
            &["points3D.bin", "announced"],
            |d| {
                let r = base(d, "hugecount");
                let m = r.join("sparse/0");
                std::fs::remove_file(m.join("points3D.txt")).unwrap();
                let mut b = (1u64 << 60).to_le_bytes().to_vec();
                b.extend([0u8; 100]);
                std::fs::write(m.join("points3D.bin"), b).unwrap();
                r
            },
        ),
        case(
            "an image is missing",
            &["view_002.png", "missing", "--skip-bad-images"],
            |d| {
                let r = base(d, "noimage");
                std::fs::remove_file(r.join("images/view_002.png")).unwrap();
                r
            },
        ),
        case(
            "an image is not an image",
            &["view_001.png", "decode", "--skip-bad-images"],
            |d| {
                let r = base(d, "garbage");
                std::fs::write(
                    r.join("images/view_001.png"),
                    b"\x89PNG\r\n\x1a\nnot really",
                )
                .unwrap();
                r
            },
        ),
        case("an image is empty", &["view_003.png"], |d| {
            let r = base(d, "emptyimage");
            std::fs::write(r.join("images/view_003.png"), b"").unwrap();
            r
        }),
        case(
            "an image has another aspect ratio than its camera",
            &["view_000.png", "aspect"],
            |d| {
                let r = base(d, "aspect");
                let png = splat_io::images::png_bytes(18, 18, &vec![0.5; 18 * 18 * 3]).unwrap();
                std::fs::write(r.join("images/view_000.png"), png).unwrap();
                r
            },
        ),
        case(
            "transforms.json is not JSON",
            &["transforms.json", "invalid JSON"],
            |d| {
                let r = d.join("badjson");
                std::fs::create_dir(&r).unwrap();
                std::fs::write(r.join("transforms.json"), "{\"frames\": [").unwrap();
                r
            },
        ),
        case(
            "transforms.json without frames",
            &["transforms.json", "frames"],
            |d| {
                let r = d.join("noframes");
                std::fs::create_dir(&r).unwrap();
                std::fs::write(r.join("transforms.json"), "{\"fl_x\": 10, \"frames\": []}")
                    .unwrap();
                r
            },
        ),
        case(
            "transforms.json with a 3 x 3 matrix",
            &["transforms.json", "frame 0", "4 x 4"],
            |d| {
                let r = base(d, "matrix");
                std::fs::write(
                    r.join("transforms.json"),
                    r#"{"fl_x": 20, "frames": [{"file_path": "images/view_000.png",
                        "transform_matrix": [[1,0,0],[0,1,0],[0,0,1]]}]}"#,
                )
                .unwrap();
                std::fs::remove_dir_all(r.join("sparse")).unwrap();
                r
            },
        ),
        case(
            "poses_bounds.npy with the wrong shape",
            &["poses_bounds.npy", "(4, 15)"],
            |d| {
                let r = base(d, "npyshape");
                std::fs::remove_dir_all(r.join("sparse")).unwrap();
                std::fs::write(r.join("poses_bounds.npy"), npy(4, 15, &[0.0; 60], "<f8")).unwrap();
                r
            },
        ),
        case(
            "poses_bounds.npy truncated",
            &["poses_bounds.npy", "truncated"],
            |d| {
                let r = base(d, "npytrunc");
                std::fs::remove_dir_all(r.join("sparse")).unwrap();
                let mut b = npy(4, 17, &[1.0; 68], "<f8");
                b.truncate(b.len() - 9);
                std::fs::write(r.join("poses_bounds.npy"), b).unwrap();
                r
            },
        ),
        case(
            "poses_bounds.npy with big-endian data",
            &["poses_bounds.npy", "little-endian"],
            |d| {
                let r = base(d, "npyendian");
                std::fs::remove_dir_all(r.join("sparse")).unwrap();
                std::fs::write(r.join("poses_bounds.npy"), npy(4, 17, &[1.0; 68], ">f8")).unwrap();
                r
            },
        ),
        case(
            "poses_bounds.npy with fewer poses than images",
            &["images", "3 poses"],
            |d| {
                let mut v = Vec::new();
                for _ in 0..3 {
                    v.extend([1.0, 0.0, 0.0, 0.0, 18.0, 0.0, 1.0, 0.0, 0.0, 24.0]);
                    v.extend([0.0, 0.0, 1.0, 0.0, 20.0, 0.1, 10.0]);
                }
                llff(d, "npycount", 3, v)
            },
        ),
        case(
            "mask of another size",
            &["masks/view_001.png.png", "mask is 7 x 5 but its image"],
            |d| {
                let r = base(d, "masksize");
                std::fs::create_dir_all(r.join("masks")).unwrap();
                image::GrayImage::new(7, 5)
                    .save(r.join("masks/view_001.png.png"))
                    .unwrap();
                r
            },
        ),
        case(
            "unreadable mask",
            &["masks/view_002.png.png", "cannot decode mask"],
            |d| {
                let r = base(d, "maskjunk");
                std::fs::create_dir_all(r.join("masks")).unwrap();
                std::fs::write(r.join("masks/view_002.png.png"), b"junk").unwrap();
                r
            },
        ),
        case(
            "poses_bounds.npy with a NaN",
            &["poses_bounds.npy", "non-finite"],
            |d| {
                let mut v = vec![1.0; 68];
                v[5] = f64::NAN;
                llff(d, "npynan", 4, v)
            },
        ),
    ]
}

#[test]
fn skip_bad_images_trains_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = base(dir.path(), "skip");
    std::fs::write(data.join("images/view_001.png"), b"junk").unwrap();
    std::fs::remove_file(data.join("images/view_002.png")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_splat"))
        .arg("train")
        .arg(&data)
        .args([
            "--out",
            "o",
            "--preset",
            "original",
            "--iters",
            "2",
            "--skip-bad-images",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("view_001.png") && err.contains("view_002.png"),
        "{err}"
    );
    assert!(err.contains("2 train + 0 test views"), "{err}");
}

#[test]
fn broken_datasets_give_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for c in cases() {
        let data = (c.make)(dir.path());
        let out_dir = dir
            .path()
            .join(format!("out-{}", c.name.replace([' ', ':', '.'], "_")));
        let out = Command::new(env!("CARGO_BIN_EXE_splat"))
            .args(["train"])
            .arg(&data)
            .arg("--out")
            .arg(&out_dir)
            .args(["--preset", "original", "--iters", "2"])
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.trim_end().lines().last().unwrap_or("");
        let ok = out.status.code() == Some(1)
            && !err.contains("panicked")
            && last.starts_with("error: ")
            && err.lines().filter(|l| l.starts_with("error")).count() == 1
            && c.needles.iter().all(|n| last.contains(n.as_str()))
            && !out_dir.join("point_cloud.ply").exists();
        if !ok {
            failures.push(format!(
                "{}: exit {:?}, wanted {:?} in the last line of:\n{err}",
                c.name, out.status, c.needles
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn memory_estimate_refuses_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let data = base(dir.path(), "mem");
    let run = |limit: u64, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_splat"))
            .arg("train")
            .arg(&data)
            .args([
                "--out",
                "o",
                "--preset",
                "original",
                "--iters",
                "1",
                "--max-gaussians",
                "1000",
            ])
            .args(extra)
            .env("SPLAT_MEMORY_LIMIT", limit.to_string())
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let per_gaussian = splat_train::memory::peak_bytes_per_gaussian(3);
    let images = 4 * 24 * 18 * 3;
    let last = |o: &std::process::Output| {
        let e = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(!e.contains("panicked"), "{e}");
        e
    };
    // The Gaussian budget alone does not fit.
    let o = run(1000 * per_gaussian - 1, &[]);
    let e = last(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("up to 1000 Gaussians") && e.contains("--max-gaussians"),
        "{e}"
    );
    // The Gaussians fit, the images do not: refused from the headers, naming the image folder.
    let o = run(1000 * per_gaussian + images - 1, &[]);
    let e = last(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("images") && e.contains("--downscale"), "{e}");
    // Images fit, the per-pixel buffers do not.
    let o = run(1000 * per_gaussian + images + 10, &[]);
    let e = last(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("memory estimate:") && e.contains("training needs about"),
        "{e}"
    );
    // --force trains anyway; enough memory trains and prints the estimate.
    let o = run(1000, &["--force"]);
    assert!(o.status.success(), "{}", last(&o));
    let o = run(1 << 30, &[]);
    let e = last(&o);
    assert!(
        o.status.success() && e.contains("memory estimate: images"),
        "{e}"
    );
}
