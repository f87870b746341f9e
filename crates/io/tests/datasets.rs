//! Dataset loaders on fixtures the tests write themselves: COLMAP .bin and .txt with every camera model,
//! NeRF-synthetic and instant-ngp `transforms*.json`, LLFF `poses_bounds.npy`; undistortion; splits;
//! missing frames; malformed inputs.

use std::path::Path;

use splat_core::lens::Distortion;
use splat_core::math::{mat3_vec, mat_to_quat, quat_to_mat};
use splat_core::{Camera, Projection};
use splat_io::dataset::colmap::{write, ColmapImage, Points};
use splat_io::dataset::demo::{demo_cameras, DemoOptions};
use splat_io::dataset::{self, DatasetError, DatasetFormat, LoadOptions};

/// A smooth test pattern as a function of ideal normalized image coordinates.
fn pattern(x: f64, y: f64) -> [f64; 3] {
    [
        0.5 + 0.4 * (3.0 * x).sin(),
        0.5 + 0.4 * (2.5 * y).cos(),
        0.5 + 0.3 * (2.0 * x + 1.5 * y).sin(),
    ]
}

fn save_png(path: &Path, w: u32, h: u32, rgb: &[f64]) {
    let f: Vec<f32> = rgb.iter().map(|&v| v as f32).collect();
    splat_io::images::save_png(path, w, h, &f).unwrap();
}

/// Inverts `distort` by fixed-point iteration.
fn undistort_point(d: Distortion, xd: f64, yd: f64) -> (f64, f64) {
    let (mut x, mut y) = (xd, yd);
    for _ in 0..50 {
        let (dx, dy) = d.distort(x, y);
        x += xd - dx;
        y += yd - dy;
    }
    (x, y)
}

/// The pinhole coordinates `X / Z, Y / Z` of the ideal camera's normalized coordinates: themselves,
/// or for a fisheye (equidistant coordinates `theta (x, y) / r`) `tan(theta) (x, y) / theta`.
fn pinhole_of(d: Distortion, x: f64, y: f64) -> (f64, f64) {
    let theta = x.hypot(y);
    if !d.is_fisheye() || theta == 0.0 {
        return (x, y);
    }
    let s = theta.tan() / theta;
    (x * s, y * s)
}

/// The pattern as a camera with distortion `d` would photograph it.
fn distorted_image(w: u32, h: u32, k: [f64; 4], d: Distortion) -> Vec<f64> {
    let [fx, fy, cx, cy] = k;
    let mut out = Vec::new();
    for py in 0..h {
        for px in 0..w {
            let (xd, yd) = ((px as f64 + 0.5 - cx) / fx, (py as f64 + 0.5 - cy) / fy);
            let (x, y) = undistort_point(d, xd, yd);
            let (x, y) = pinhole_of(d, x, y);
            out.extend(pattern(x, y));
        }
    }
    out
}

struct Fixture {
    cams: Vec<Camera>,
    points: Points,
}

fn fixture(n: usize, w: u32, h: u32) -> Fixture {
    let opts = DemoOptions {
        width: w,
        height: h,
        views: n,
        points: 50,
        seed: 3,
        ..Default::default()
    };
    let cams = demo_cameras(&opts);
    let points = Points {
        positions: (0..50)
            .map(|i| [i as f64 * 0.01, 0.5 - i as f64 * 0.02, 0.3])
            .collect(),
        colors: (0..50).map(|i| [i as u8, 100, 200 - i as u8]).collect(),
    };
    Fixture { cams, points }
}

fn images_for(f: &Fixture) -> Vec<ColmapImage> {
    f.cams
        .iter()
        .enumerate()
        .map(|(i, c)| ColmapImage {
            id: i as u32 + 1,
            qvec: mat_to_quat(&c.rotation),
            tvec: c.translation,
            camera_id: 1,
            name: format!("img_{i:02}.png"),
        })
        .collect()
}

/// COLMAP binary writers, independent of the reader.
fn cameras_bin(model: i32, w: u64, h: u64, params: &[f64]) -> Vec<u8> {
    let mut b = 1u64.to_le_bytes().to_vec();
    b.extend(1u32.to_le_bytes());
    b.extend(model.to_le_bytes());
    b.extend(w.to_le_bytes());
    b.extend(h.to_le_bytes());
    for p in params {
        b.extend(p.to_le_bytes());
    }
    b
}

fn images_bin(images: &[ColmapImage]) -> Vec<u8> {
    let mut b = (images.len() as u64).to_le_bytes().to_vec();
    for im in images {
        b.extend(im.id.to_le_bytes());
        for v in im.qvec.iter().chain(im.tvec.iter()) {
            b.extend(v.to_le_bytes());
        }
        b.extend(im.camera_id.to_le_bytes());
        b.extend(im.name.as_bytes());
        b.push(0);
        b.extend(2u64.to_le_bytes()); // two 2D points
        for k in 0..2 {
            b.extend((k as f64).to_le_bytes());
            b.extend((k as f64 + 1.0).to_le_bytes());
            b.extend((-1i64).to_le_bytes());
        }
    }
    b
}

fn points_bin(p: &Points) -> Vec<u8> {
    let mut b = (p.positions.len() as u64).to_le_bytes().to_vec();
    for (i, (x, c)) in p.positions.iter().zip(&p.colors).enumerate() {
        b.extend((i as u64 + 1).to_le_bytes());
        for v in x {
            b.extend(v.to_le_bytes());
        }
        b.extend(c);
        b.extend(0.5f64.to_le_bytes());
        b.extend(1u64.to_le_bytes());
        b.extend(1i32.to_le_bytes());
        b.extend(0i32.to_le_bytes());
    }
    b
}

const MODELS: [(&str, i32, &[f64]); 11] = [
    ("SIMPLE_PINHOLE", 0, &[40.0, 32.0, 24.0]),
    ("PINHOLE", 1, &[40.0, 44.0, 31.0, 25.0]),
    ("SIMPLE_RADIAL", 2, &[40.0, 32.0, 24.0, 0.08]),
    ("RADIAL", 3, &[40.0, 32.0, 24.0, 0.08, -0.03]),
    (
        "OPENCV",
        4,
        &[40.0, 44.0, 31.0, 25.0, 0.06, -0.02, 0.004, -0.003],
    ),
    (
        "FULL_OPENCV",
        6,
        &[
            40.0, 44.0, 31.0, 25.0, 0.06, -0.02, 0.004, -0.003, 0.01, 0.05, -0.01, 0.005,
        ],
    ),
    ("FOV", 7, &[40.0, 44.0, 31.0, 25.0, 0.6]),
    (
        "OPENCV_FISHEYE",
        5,
        &[40.0, 44.0, 31.0, 25.0, 0.05, -0.01, 0.004, -0.001],
    ),
    ("SIMPLE_RADIAL_FISHEYE", 8, &[40.0, 32.0, 24.0, 0.06]),
    ("RADIAL_FISHEYE", 9, &[40.0, 32.0, 24.0, 0.06, -0.02]),
    (
        "THIN_PRISM_FISHEYE",
        10,
        &[
            40.0, 44.0, 31.0, 25.0, 0.05, -0.01, 0.003, -0.002, 0.004, -0.001, 0.002, -0.003,
        ],
    ),
];

/// The model's intrinsics and distortion, written out here from COLMAP's parameter order.
fn intrinsics(params: &[f64], model: &str) -> ([f64; 4], Distortion) {
    let p = params;
    let one_f = [p[0], p[0], p[1], p[2]];
    let two_f = || [p[0], p[1], p[2], p[3]];
    match model {
        "SIMPLE_PINHOLE" => (one_f, Distortion::None),
        "PINHOLE" => (two_f(), Distortion::None),
        "SIMPLE_RADIAL" => (one_f, Distortion::opencv(p[3], 0.0, 0.0, 0.0)),
        "RADIAL" => (one_f, Distortion::opencv(p[3], p[4], 0.0, 0.0)),
        "OPENCV" => (two_f(), Distortion::opencv(p[4], p[5], p[6], p[7])),
        "FULL_OPENCV" => (
            two_f(),
            Distortion::OpenCv {
                k: [p[4], p[5], p[8], p[9], p[10], p[11]],
                p: [p[6], p[7]],
            },
        ),
        "FOV" => (two_f(), Distortion::Fov { omega: p[4] }),
        "OPENCV_FISHEYE" => (two_f(), Distortion::fisheye([p[4], p[5], p[6], p[7]])),
        "SIMPLE_RADIAL_FISHEYE" => (one_f, Distortion::fisheye([p[3], 0.0, 0.0, 0.0])),
        "RADIAL_FISHEYE" => (one_f, Distortion::fisheye([p[3], p[4], 0.0, 0.0])),
        "THIN_PRISM_FISHEYE" => (
            two_f(),
            Distortion::Fisheye {
                k: [p[4], p[5], p[8], p[9]],
                p: [p[6], p[7]],
                s: [p[10], p[11]],
            },
        ),
        _ => unreachable!("{model}"),
    }
}

fn write_colmap(
    root: &Path,
    f: &Fixture,
    model: (&str, i32, &[f64]),
    binary: bool,
    w: u32,
    h: u32,
) {
    let sparse = root.join("sparse/0");
    std::fs::create_dir_all(&sparse).unwrap();
    std::fs::create_dir_all(root.join("images")).unwrap();
    let images = images_for(f);
    if binary {
        std::fs::write(
            sparse.join("cameras.bin"),
            cameras_bin(model.1, w as u64, h as u64, model.2),
        )
        .unwrap();
        std::fs::write(sparse.join("images.bin"), images_bin(&images)).unwrap();
        std::fs::write(sparse.join("points3D.bin"), points_bin(&f.points)).unwrap();
    } else {
        let cams = write::cameras_txt(&[(1, model.0, w as u64, h as u64, model.2.to_vec())]);
        std::fs::write(sparse.join("cameras.txt"), cams).unwrap();
        std::fs::write(sparse.join("images.txt"), write::images_txt(&images)).unwrap();
        std::fs::write(sparse.join("points3D.txt"), write::points3d_txt(&f.points)).unwrap();
    }
    let (k, d) = intrinsics(model.2, model.0);
    let img = distorted_image(w, h, k, d);
    for im in &images {
        save_png(&root.join("images").join(&im.name), w, h, &img);
    }
}

fn assert_pose(a: &Camera, b: &Camera) {
    for i in 0..3 {
        for j in 0..3 {
            assert!((a.rotation[i][j] - b.rotation[i][j]).abs() < 1e-9);
        }
        assert!((a.translation[i] - b.translation[i]).abs() < 1e-9);
    }
}

#[test]
fn colmap_every_model_bin_and_txt_with_undistortion() {
    let (w, h) = (64, 48);
    let f = fixture(10, w, h);
    for model in MODELS {
        for binary in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            write_colmap(dir.path(), &f, model, binary, w, h);
            assert_eq!(dataset::detect(dir.path()).unwrap(), DatasetFormat::Colmap);
            let ds = dataset::load(
                dir.path(),
                &LoadOptions {
                    eval: true,
                    ..Default::default()
                },
            )
            .unwrap();
            let tag = format!("{} {}", model.0, if binary { "bin" } else { "txt" });
            assert_eq!(
                (ds.train.len(), ds.test.len()),
                (8, 2),
                "{tag}: every 8th view is a test view"
            );
            assert_eq!(ds.test[0].name, "img_00.png");
            assert_eq!(ds.test[1].name, "img_08.png");
            assert_eq!(ds.points, f.points, "{tag}");
            let (k, d) = intrinsics(model.2, model.0);
            let v = &ds.train[0];
            let fisheye = model.0.ends_with("FISHEYE");
            let want = if fisheye {
                Projection::Equidistant
            } else {
                Projection::Pinhole
            };
            assert_eq!(v.camera.projection, want, "{tag}");
            // A fisheye photo carries the mask of the pixels its lens photographed.
            assert_eq!(v.mask.is_some(), fisheye, "{tag}");
            assert_eq!(v.name, "img_01.png");
            assert_eq!(
                (v.camera.fx, v.camera.fy, v.camera.cx, v.camera.cy),
                (k[0], k[1], k[2], k[3]),
                "{tag}"
            );
            assert_pose(&v.camera, &f.cams[1]);
            // Undistorted image vs the pattern seen by the ideal pinhole camera (away from the border,
            // where the distorted photo has no data).
            let mut worst = 0.0f64;
            for py in 8..h - 8 {
                for px in 8..w - 8 {
                    let (x, y) = pinhole_of(
                        d,
                        (px as f64 + 0.5 - k[2]) / k[0],
                        (py as f64 + 0.5 - k[3]) / k[1],
                    );
                    let ideal = pattern(x, y);
                    for c in 0..3 {
                        let got = v.image.data[((py * w + px) * 3) as usize + c] as f64 / 255.0;
                        worst = worst.max((got - ideal[c]).abs());
                    }
                }
            }
            assert!(worst < 0.03, "{tag}: undistorted image off by {worst}");
            let distorted = model.2.len() > 4 || model.0 == "SIMPLE_RADIAL" || fisheye;
            assert_eq!(
                ds.notes.iter().any(|n| n.contains("undistorting")),
                distorted,
                "{tag}"
            );
        }
    }
}

#[test]
fn colmap_images_scaled_downscaled_matched_by_order_and_missing() {
    let (w, h) = (64, 48);
    let f = fixture(9, w, h);
    let dir = tempfile::tempdir().unwrap();
    write_colmap(dir.path(), &f, MODELS[1], true, w, h);
    // --downscale 2: intrinsics follow the image size.
    let ds = dataset::load(
        dir.path(),
        &LoadOptions {
            downscale: Some(2),
            ..Default::default()
        },
    )
    .unwrap();
    let c = &ds.train[0].camera;
    assert_eq!((c.width, c.height), (32, 24));
    assert_eq!((c.fx, c.fy, c.cx, c.cy), (20.0, 22.0, 15.5, 12.5));
    // An LLFF-style images_2 folder with other names: matched by sorted order, with a warning.
    let small = dir.path().join("images_2");
    std::fs::create_dir_all(&small).unwrap();
    for i in 0..9 {
        save_png(
            &small.join(format!("image{i:03}.png")),
            32,
            24,
            &vec![0.5; 32 * 24 * 3],
        );
    }
    let ds = dataset::load(
        dir.path(),
        &LoadOptions {
            images: Some("images_2".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(ds.warnings.iter().any(|w| w.contains("sorted order")));
    assert_eq!(ds.train[3].camera.fx, 20.0);
    // Two frames missing from images/: an error naming the first, unless asked to skip them,
    // then a warning naming both.
    std::fs::remove_file(dir.path().join("images/img_03.png")).unwrap();
    std::fs::remove_file(dir.path().join("images/img_05.png")).unwrap();
    let err = dataset::load(dir.path(), &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("img_03.png") && err.contains("1 more") && err.contains("--skip-bad-images"),
        "{err}"
    );
    let ds = dataset::load(
        dir.path(),
        &LoadOptions {
            skip_bad_images: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(ds.train.len(), 7);
    let w = ds
        .warnings
        .iter()
        .find(|w| w.contains("missing"))
        .expect("a warning");
    assert!(w.contains("img_03.png") && w.contains("img_05.png"), "{w}");
}

fn gl_matrix(c: &Camera) -> Vec<Vec<f64>> {
    // camera-to-world in OpenGL: columns x, -y, -z of the OpenCV camera, and the centre.
    let r = &c.rotation; // world-to-camera; rows are the camera axes in world
    let center = c.center();
    let mut m = vec![vec![0.0; 4]; 4];
    for i in 0..3 {
        m[i][0] = r[0][i];
        m[i][1] = -r[1][i];
        m[i][2] = -r[2][i];
        m[i][3] = center[i];
    }
    m[3][3] = 1.0;
    m
}

#[test]
fn nerf_synthetic_rgba_on_white_with_its_own_split() {
    let (w, h) = (40, 40);
    let f = fixture(6, w, h);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for split in ["train", "test"] {
        std::fs::create_dir_all(root.join(split)).unwrap();
        let frames: Vec<serde_json::Value> = (0..3)
            .map(|i| {
                let cam = &f.cams[if split == "train" { i } else { 3 + i }];
                // Half-transparent red (alpha 128/255): composited on white gives (255, 127, 127).
                let img = image::RgbaImage::from_pixel(w, h, image::Rgba([255, 0, 0, 128]));
                img.save(root.join(split).join(format!("r_{i}.png"))).unwrap();
                serde_json::json!({"file_path": format!("./{split}/r_{i}"), "transform_matrix": gl_matrix(cam)})
            })
            .collect();
        let json = serde_json::json!({"camera_angle_x": 0.6911112070083618, "frames": frames});
        std::fs::write(
            root.join(format!("transforms_{split}.json")),
            json.to_string(),
        )
        .unwrap();
    }
    assert_eq!(dataset::detect(root).unwrap(), DatasetFormat::NerfSynthetic);
    let ds = dataset::load(
        root,
        &LoadOptions {
            eval: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!((ds.train.len(), ds.test.len()), (3, 3));
    assert_eq!(ds.background, [1.0; 3]);
    assert_eq!(&ds.train[0].image.data[..3], &[255, 127, 127]);
    let fx = 0.5 * 40.0 / (0.5f64 * 0.6911112070083618).tan();
    assert!((ds.train[0].camera.fx - fx).abs() < 1e-9);
    assert_pose(&ds.train[1].camera, &f.cams[1]);
    assert_pose(&ds.test[2].camera, &f.cams[5]);
    assert_eq!(ds.points.positions.len(), 100_000);
    // Without --eval the test frames are trained on too; --background overrides white.
    let ds = dataset::load(
        root,
        &LoadOptions {
            background: Some([0.0; 3]),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!((ds.train.len(), ds.test.len()), (6, 0));
    assert_eq!(&ds.train[0].image.data[..3], &[128, 0, 0]);
}

#[test]
fn instant_ngp_transforms_top_level_and_per_frame_intrinsics_with_distortion() {
    let (w, h) = (48, 36);
    let f = fixture(9, w, h);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("images")).unwrap();
    let d = Distortion::OpenCv {
        k: [0.05, -0.01, 0.02, 0.0, 0.0, 0.0],
        p: [0.002, 0.001],
    };
    let k = [30.0, 31.0, 24.5, 17.5];
    let img = distorted_image(w, h, k, d);
    let mut frames = Vec::new();
    for (i, cam) in f.cams.iter().enumerate() {
        let name = format!("images/frame_{i:02}.png");
        save_png(&root.join(&name), w, h, &img);
        let mut fr = serde_json::json!({"transform_matrix": gl_matrix(cam)});
        // Half the frames give the path without extension; frame 4 overrides the focal length.
        fr["file_path"] = serde_json::json!(if i % 2 == 0 {
            name.clone()
        } else {
            name.trim_end_matches(".png").to_string()
        });
        if i == 4 {
            fr["fl_x"] = serde_json::json!(33.0);
        }
        frames.push(fr);
    }
    let json = serde_json::json!({
        "fl_x": k[0], "fl_y": k[1], "cx": k[2], "cy": k[3], "w": w, "h": h,
        "k1": 0.05, "k2": -0.01, "k3": 0.02, "p1": 0.002, "p2": 0.001, "frames": frames
    });
    std::fs::write(root.join("transforms.json"), json.to_string()).unwrap();
    assert_eq!(dataset::detect(root).unwrap(), DatasetFormat::Transforms);
    let ds = dataset::load(
        root,
        &LoadOptions {
            eval: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!((ds.train.len(), ds.test.len()), (7, 2));
    let v = ds
        .train
        .iter()
        .find(|v| v.name == "images/frame_04.png")
        .unwrap();
    assert_eq!(v.camera.fx, 33.0);
    let v = ds
        .train
        .iter()
        .find(|v| v.name == "images/frame_03")
        .unwrap();
    assert_eq!(
        (v.camera.fx, v.camera.fy, v.camera.cx, v.camera.cy),
        (k[0], k[1], k[2], k[3])
    );
    assert_pose(&v.camera, &f.cams[3]);
    assert!(ds.notes.iter().any(|n| n.contains("undistorting")));
    let got = v.image.data[((18 * w + 24) * 3) as usize] as f64 / 255.0;
    let ideal = pattern((24.5 - k[2]) / k[0], (18.5 - k[3]) / k[1])[0];
    assert!((got - ideal).abs() < 0.02);
    // A camera_model not read, and nerfstudio's perspective k4, are refused with the file named.
    for (key, value, says) in [
        (
            "camera_model",
            serde_json::json!("EQUIRECTANGULAR"),
            "EQUIRECTANGULAR",
        ),
        ("k4", serde_json::json!(0.01), "k4"),
    ] {
        let mut bad = json.clone();
        bad[key] = value;
        std::fs::write(root.join("transforms.json"), bad.to_string()).unwrap();
        let e = dataset::load(root, &LoadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(says) && e.contains("transforms.json"), "{e}");
    }
}

fn npy(rows: &[[f64; 17]]) -> Vec<u8> {
    let header = format!(
        "{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, 17), }}",
        rows.len()
    );
    let mut h = header.into_bytes();
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend((h.len() as u16).to_le_bytes());
    b.extend(h);
    for r in rows {
        for v in r {
            b.extend(v.to_le_bytes());
        }
    }
    b
}

#[test]
fn llff_poses_bounds_with_images_n() {
    let f = fixture(8, 64, 48);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let rows: Vec<[f64; 17]> = f
        .cams
        .iter()
        .map(|c| {
            // Columns [down, right, back] of the camera in world, centre, [H, W, focal] at full size 128 x 96.
            let r = &c.rotation;
            let center = c.center();
            let mut row = [0.0; 17];
            for i in 0..3 {
                row[i * 5] = r[1][i];
                row[i * 5 + 1] = r[0][i];
                row[i * 5 + 2] = -r[2][i];
                row[i * 5 + 3] = center[i];
            }
            row[4] = 96.0;
            row[9] = 128.0;
            row[14] = 80.0;
            row[15] = 0.5;
            row[16] = 6.0;
            row
        })
        .collect();
    std::fs::write(root.join("poses_bounds.npy"), npy(&rows)).unwrap();
    std::fs::create_dir_all(root.join("images_2")).unwrap();
    for i in 0..8 {
        save_png(
            &root.join(format!("images_2/image{i:03}.png")),
            64,
            48,
            &vec![0.3; 64 * 48 * 3],
        );
    }
    assert_eq!(dataset::detect(root).unwrap(), DatasetFormat::Llff);
    let ds = dataset::load(root, &LoadOptions::default()).unwrap();
    assert_eq!(ds.train.len(), 8);
    let c = &ds.train[2].camera;
    assert_eq!((c.width, c.fx, c.cx, c.cy), (64, 40.0, 32.0, 24.0));
    assert_pose(c, &f.cams[2]);
    // Random initial points lie in front of some camera, between the depth bounds.
    assert_eq!(ds.points.positions.len(), 100_000);
    assert!(!ds.points_from_dataset);
    let p = ds.points.positions[0];
    let in_front = ds.train.iter().any(|v| {
        let q = mat3_vec(&v.camera.rotation, p);
        let z = q[2] + v.camera.translation[2];
        (0.5 - 1e-9..=6.0 + 1e-9).contains(&z)
    });
    assert!(in_front);
}

fn err_text(e: DatasetError) -> String {
    e.to_string()
}

#[test]
fn malformed_datasets_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let load = |opts: &LoadOptions| dataset::load(root, opts).map(|_| ()).map_err(err_text);
    assert!(load(&LoadOptions::default())
        .unwrap_err()
        .contains("no dataset found"));
    assert!(dataset::load(&root.join("nope"), &LoadOptions::default())
        .unwrap_err()
        .to_string()
        .contains("not a folder"));

    let f = fixture(3, 32, 24);
    write_colmap(root, &f, MODELS[0], true, 32, 24);
    let sparse = root.join("sparse/0");
    // An unknown model id.
    std::fs::write(sparse.join("cameras.bin"), cameras_bin(42, 32, 24, &[])).unwrap();
    let e = load(&LoadOptions::default()).unwrap_err();
    assert!(e.contains("id 42") && e.contains("cameras.bin"), "{e}");
    // A FOV omega with no lens behind it.
    std::fs::write(
        sparse.join("cameras.bin"),
        cameras_bin(7, 32, 24, &[40.0, 40.0, 16.0, 12.0, 3.5]),
    )
    .unwrap();
    let e = load(&LoadOptions::default()).unwrap_err();
    assert!(e.contains("omega") && e.contains("cameras.bin"), "{e}");
    // Truncated cameras file and absurd counts.
    std::fs::write(
        sparse.join("cameras.bin"),
        &cameras_bin(0, 32, 24, &[40.0, 16.0, 12.0])[..40],
    )
    .unwrap();
    assert!(load(&LoadOptions::default())
        .unwrap_err()
        .contains("truncated"));
    let mut huge = cameras_bin(0, 32, 24, &[40.0, 16.0, 12.0]);
    huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(sparse.join("cameras.bin"), huge).unwrap();
    assert!(load(&LoadOptions::default())
        .unwrap_err()
        .contains("announced"));
    std::fs::write(
        sparse.join("cameras.bin"),
        cameras_bin(0, 32, 24, &[f64::NAN, 16.0, 12.0]),
    )
    .unwrap();
    assert!(load(&LoadOptions::default())
        .unwrap_err()
        .contains("non-finite"));
    std::fs::write(
        sparse.join("cameras.bin"),
        cameras_bin(0, 32, 24, &[40.0, 16.0, 12.0]),
    )
    .unwrap();
    // An empty reconstruction.
    std::fs::write(sparse.join("images.bin"), 0u64.to_le_bytes()).unwrap();
    assert!(load(&LoadOptions::default())
        .unwrap_err()
        .contains("no images"));
    std::fs::write(sparse.join("images.bin"), images_bin(&images_for(&f))).unwrap();
    // Undecodable image files: all unreadable is an error naming the file.
    for i in 0..3 {
        std::fs::write(root.join(format!("images/img_{i:02}.png")), b"not a png").unwrap();
    }
    let e = load(&LoadOptions::default()).unwrap_err();
    assert!(e.contains("img_0") && e.contains("cannot decode"), "{e}");
    // An image whose aspect ratio does not match its camera.
    write_colmap(root, &f, MODELS[0], true, 32, 24);
    for i in 0..3 {
        save_png(
            &root.join(format!("images/img_{i:02}.png")),
            32,
            32,
            &vec![0.5; 32 * 32 * 3],
        );
    }
    let e = load(&LoadOptions::default()).unwrap_err();
    assert!(e.contains("aspect ratio") && e.contains("img_0"), "{e}");
    // Missing image folder.
    assert!(load(&LoadOptions {
        images: Some("images_9".into()),
        ..Default::default()
    })
    .unwrap_err()
    .contains("images_9"));
    // A txt model with a bad number names the line.
    std::fs::remove_file(sparse.join("cameras.bin")).unwrap();
    std::fs::write(
        sparse.join("cameras.txt"),
        "# c\n1 PINHOLE 32 24 40 forty 16 12\n",
    )
    .unwrap();
    assert!(load(&LoadOptions::default())
        .unwrap_err()
        .contains("line 2"));

    // transforms.json: invalid JSON and a bad matrix.
    let d2 = tempfile::tempdir().unwrap();
    std::fs::write(d2.path().join("transforms.json"), "{ not json").unwrap();
    assert!(dataset::load(d2.path(), &LoadOptions::default())
        .unwrap_err()
        .to_string()
        .contains("invalid JSON"));
    std::fs::write(d2.path().join("a.png"), b"x").unwrap();
    std::fs::write(
        d2.path().join("transforms.json"),
        r#"{"camera_angle_x": 0.7, "frames": [{"file_path": "a.png", "transform_matrix": [[1, 0], [0, 1]]}]}"#,
    )
    .unwrap();
    assert!(
        dataset::load(d2.path(), &LoadOptions::default())
            .unwrap_err()
            .to_string()
            .contains("image header")
            || dataset::load(d2.path(), &LoadOptions::default())
                .unwrap_err()
                .to_string()
                .contains("transform_matrix")
    );
    // poses_bounds.npy with the wrong shape.
    let d3 = tempfile::tempdir().unwrap();
    let mut bytes = npy(&[[0.0; 17]]);
    let n = bytes.len();
    bytes.truncate(n - 8);
    std::fs::write(d3.path().join("poses_bounds.npy"), bytes).unwrap();
    assert!(dataset::load(d3.path(), &LoadOptions::default())
        .unwrap_err()
        .to_string()
        .contains("truncated"));
}

#[test]
fn quaternion_helpers_agree_with_colmap() {
    let q = [0.9, 0.1, -0.3, 0.2];
    let r = splat_io::dataset::colmap::qvec_to_rotation(q);
    let n = q.iter().map(|v: &f64| v * v).sum::<f64>().sqrt();
    let expect = quat_to_mat(q.map(|v| v / n));
    assert_eq!(r, expect);
}

#[test]
fn images_wider_than_1600_are_resized_unless_a_factor_is_given() {
    let f = fixture(2, 1700, 100);
    let dir = tempfile::tempdir().unwrap();
    write_colmap(
        dir.path(),
        &f,
        ("PINHOLE", 1, &[1000.0, 1000.0, 850.0, 50.0]),
        false,
        1700,
        100,
    );
    let ds = dataset::load(dir.path(), &LoadOptions::default()).unwrap();
    let c = &ds.train[0].camera;
    assert_eq!((c.width, c.height), (1600, 94));
    assert!((c.fx - 1000.0 * 1600.0 / 1700.0).abs() < 1e-9);
    assert!(ds.notes.iter().any(|n| n.contains("1600")));
    let ds = dataset::load(
        dir.path(),
        &LoadOptions {
            downscale: Some(1),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(ds.train[0].camera.width, 1700);
    assert_eq!(dataset::decoded_size(1700, 100, None), (1600, 94));
    assert_eq!(dataset::decoded_size(1700, 100, Some(1)), (1700, 100));
    assert_eq!(dataset::decoded_size(1700, 100, Some(4)), (425, 25));

    // A memory budget is checked from the headers, before decoding: 2 views of 1600 x 94 x 3 bytes.
    let needed = 2 * 1600 * 94 * 3;
    let load = |budget: u64| {
        dataset::load(
            dir.path(),
            &LoadOptions {
                image_memory_budget: Some(budget),
                ..Default::default()
            },
        )
    };
    match load(needed - 1) {
        Err(splat_io::dataset::DatasetError::TooLarge {
            needed: n, views, ..
        }) => assert_eq!((n, views), (needed, 2)),
        other => panic!("{other:?}"),
    }
    let ds = load(needed).unwrap();
    let total: u64 = ds.all_views().map(|v| v.image.data.len() as u64).sum();
    assert_eq!(total, needed);
}

#[test]
fn fisheye_validity_leaves_out_where_the_lens_folds_or_has_no_photo() {
    use splat_io::dataset::imageload::{fisheye_validity, Intrinsics};
    // theta_d = theta (1 - 0.3 theta^2) stops growing at theta = 1 / sqrt(0.9) (10.54 px at f = 10).
    let k = Intrinsics {
        fx: 10.0,
        fy: 10.0,
        cx: 16.0,
        cy: 16.0,
        distortion: Distortion::fisheye([-0.3, 0.0, 0.0, 0.0]),
    };
    let keep = fisheye_validity(32, 32, &k);
    for y in 0..32 {
        for x in 0..32 {
            let r = (x as f64 + 0.5 - 16.0).hypot(y as f64 + 0.5 - 16.0);
            let want = u8::from(r < 10.0 / 0.9f64.sqrt());
            assert_eq!(keep[y * 32 + x], want, "pixel {x}, {y} at {r:.2} px");
        }
    }
    // A lens whose photo is smaller than the image: beyond its edge nothing was photographed.
    let wide = Intrinsics {
        distortion: Distortion::fisheye([0.5, 0.0, 0.0, 0.0]),
        ..k
    };
    let keep = fisheye_validity(32, 32, &wide);
    assert_eq!(keep[16 * 32 + 16], 1);
    assert_eq!(keep[0], 0, "the corner's source is outside the photo");
}

/// The mean absolute difference of two 8-bit images, in [0, 1].
fn mean_abs_difference(a: &[u8], b: &[u8]) -> f64 {
    assert_eq!(a.len(), b.len());
    let sum: f64 = (a.iter().zip(b))
        .map(|(&x, &y)| (x as f64 - y as f64).abs() / 255.0)
        .sum();
    sum / a.len() as f64
}

/// The generated fisheye capture (`splat demo --variant fisheye`): photos through an OPENCV_FISHEYE lens
/// seeing 170 degrees across, loaded as the equidistant camera, match the room ray-traced through the
/// ideal equidistant camera directly (the lens model, its inversion in the generator and the loader's
/// resampling all agree).
#[test]
fn generated_fisheye_capture_loads_as_the_equidistant_camera() {
    use splat_io::dataset::demo::{render_view_through, write_demo_dataset};
    use splat_io::dataset::demo_variants::{fisheye_camera, DemoVariant};
    let dir = tempfile::tempdir().unwrap();
    let opts = DemoOptions {
        width: 128,
        height: 96,
        views: 3,
        points: 200,
        variant: DemoVariant::Fisheye,
        ..Default::default()
    };
    write_demo_dataset(dir.path(), &opts).unwrap();
    let cameras = std::fs::read_to_string(dir.path().join("sparse/0/cameras.txt")).unwrap();
    assert!(cameras.contains("OPENCV_FISHEYE"), "{cameras}");
    let ds = dataset::load(dir.path(), &LoadOptions::default()).unwrap();
    let want = fisheye_camera(&demo_cameras(&opts)[1]);
    let v = &ds.train[1];
    assert_eq!(v.camera.projection, Projection::Equidistant);
    assert!((v.camera.fx - want.fx).abs() < 1e-9);
    // The corner looks past 90 degrees from the axis.
    let corner = (v.camera.cx / v.camera.fx).hypot(v.camera.cy / v.camera.fy);
    assert!(corner > 90f64.to_radians(), "corner at {corner} rad");
    // Every pixel holds some of the photo (the lens covers the whole frame).
    let mask = v.mask.as_ref().expect("a fisheye's validity mask");
    assert!(
        mask.kept() > mask.keep.len() * 95 / 100,
        "{} kept",
        mask.kept()
    );
    let direct = render_view_through(&v.camera, Distortion::fisheye([0.0; 4]));
    let mean = mean_abs_difference(&v.image.data, &direct);
    // Resampling blurs edges by up to a pixel (1.3 degrees a pixel here).
    // The photo as the lens took it, before resampling, is further from it.
    let raw = image::open(dir.path().join("images").join(&v.name))
        .unwrap()
        .to_rgb8()
        .into_raw();
    let raw_mean = mean_abs_difference(&raw, &direct);
    eprintln!("mean difference {mean:.4}, unresampled photo {raw_mean:.4}");
    assert!(
        mean < 0.015 && raw_mean > 2.0 * mean,
        "mean difference {mean}, raw {raw_mean}"
    );
    let wrong = render_view_through(&v.camera, Distortion::fisheye([0.1, 0.0, 0.0, 0.0]));
    let wrong_mean = mean_abs_difference(&v.image.data, &wrong);
    assert!(wrong_mean > 2.0 * mean, "{wrong_mean} vs {mean}");
}

/// `--poses FILE`: the perturbed-poses demo read with its true poses gets them (matched by name, the
/// load says how many), and a file that names none of the images, or is missing, is an error naming it.
#[test]
fn poses_from_another_images_txt() {
    use splat_io::dataset::demo::write_demo_dataset;
    use splat_io::dataset::demo_variants::{DemoVariant, TRUE_POSES_FILE};
    let dir = tempfile::tempdir().unwrap();
    let opts = DemoOptions {
        width: 32,
        height: 24,
        views: 10,
        points: 100,
        variant: DemoVariant::PerturbedPoses,
        ..Default::default()
    };
    write_demo_dataset(dir.path(), &opts).unwrap();
    let given = dataset::load(dir.path(), &LoadOptions::default()).unwrap();
    let truth_file = dir.path().join(TRUE_POSES_FILE);
    let with = |poses: &Path| LoadOptions {
        poses: Some(poses.to_path_buf()),
        ..Default::default()
    };
    let truth = dataset::load(dir.path(), &with(&truth_file)).unwrap();
    assert!(truth
        .notes
        .iter()
        .any(|n| n.contains("poses of 10 of 10 images")));
    let cams = demo_cameras(&opts);
    for (i, (v, g)) in truth.train.iter().zip(&given.train).enumerate() {
        let c = v.camera.center();
        let want = cams[i].center();
        assert!((0..3).all(|k| (c[k] - want[k]).abs() < 1e-9), "{}", v.name);
        // Every view but the held-out ones (0 and 8) was perturbed in the model.
        let moved = (0..3).any(|k| (g.camera.center()[k] - want[k]).abs() > 1e-6);
        assert_eq!(moved, i % 8 != 0, "{}", v.name);
    }
    let other = dir.path().join("other.txt");
    std::fs::write(&other, "1 1 0 0 0 0 0 0 1 nothing.png\n\n").unwrap();
    let e = dataset::load(dir.path(), &with(&other))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("other.txt") && e.contains("none of its 1 images"),
        "{e}"
    );
    let e = dataset::load(dir.path(), &with(&dir.path().join("missing.txt")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.txt"), "{e}");
}
