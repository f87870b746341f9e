//! `transforms*.json` datasets: NeRF-synthetic (`transforms_train.json` / `transforms_test.json`,
//! `camera_angle_x`, RGBA on a background) and instant-ngp / nerfstudio (`transforms.json` with `fl_x`,
//! `fl_y`, `cx`, `cy`, `w`, `h` and OpenCV distortion `k1 k2 k3 p1 p2` at the top level or per frame;
//! `camera_model` OPENCV or PINHOLE; OPENCV_FISHEYE with `k1..k4`).
//!
//! Poses are camera-to-world in the OpenGL convention (x right, y up, z back); flipping the y and z camera
//! axes gives OpenCV, which is then inverted to world-to-camera.

use std::path::{Path, PathBuf};

use serde_json::Value;

use splat_core::lens::Distortion;

use super::imageload::Intrinsics;
use super::{
    load_views, split_every_8th, Dataset, DatasetError, DatasetFormat, LoadOptions, PendingView,
    Points,
};

fn read_json(path: &Path) -> Result<Value, DatasetError> {
    let bytes = std::fs::read(path).map_err(|e| DatasetError::io(path, e))?;
    parse_json(&bytes, path)
}

fn parse_json(bytes: &[u8], path: &Path) -> Result<Value, DatasetError> {
    serde_json::from_slice(bytes)
        .map_err(|e| DatasetError::invalid(path, format!("invalid JSON: {e}")))
}

/// Parses a transforms JSON whose images all have size `image_size` (the file system is not read):
/// the number of frames it describes. The fuzz targets and their replay test use it.
pub fn parse_transforms_frames(
    bytes: &[u8],
    path: &Path,
    image_size: (u32, u32),
) -> Result<usize, DatasetError> {
    let json = parse_json(bytes, path)?;
    let mut warnings = Vec::new();
    let pending = pending_from_json(path, &json, &mut warnings, &|_| Ok(Some(image_size)), false)?;
    Ok(pending.len())
}

/// Size of an image file; `None` when it does not exist.
type SizeOf<'a> = &'a dyn Fn(&Path) -> Result<Option<(u32, u32)>, DatasetError>;

fn file_image_size(path: &Path) -> Result<Option<(u32, u32)>, DatasetError> {
    if !path.exists() {
        return Ok(None);
    }
    image_size(path).map(Some)
}

fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// World-to-camera `(R, t)` from an OpenGL camera-to-world 4 x 4 matrix.
pub fn opengl_c2w_to_w2c(m: &[[f64; 4]; 4]) -> ([[f64; 3]; 3], [f64; 3]) {
    // Camera axes (columns) in OpenCV: x = x_gl, y = -y_gl, z = -z_gl.
    let r_c2w: [[f64; 3]; 3] = std::array::from_fn(|i| [m[i][0], -m[i][1], -m[i][2]]);
    let c = [m[0][3], m[1][3], m[2][3]];
    let r = splat_core::math::transpose(&r_c2w);
    let rc = splat_core::math::mat3_vec(&r, c);
    (r, [-rc[0], -rc[1], -rc[2]])
}

fn matrix(path: &Path, frame: &Value, index: usize) -> Result<[[f64; 4]; 4], DatasetError> {
    let bad = || {
        DatasetError::invalid(
            path,
            format!("frame {index}: transform_matrix is not a 4 x 4 matrix of numbers"),
        )
    };
    let rows = frame
        .get("transform_matrix")
        .and_then(Value::as_array)
        .ok_or_else(bad)?;
    if rows.len() != 4 && rows.len() != 3 {
        return Err(bad());
    }
    let mut m = [
        [0.0, 0.0, 0.0, 0.0],
        [0.0; 4],
        [0.0; 4],
        [0.0, 0.0, 0.0, 1.0],
    ];
    for (i, row) in rows.iter().enumerate() {
        let row = row.as_array().ok_or_else(bad)?;
        if row.len() != 4 {
            return Err(bad());
        }
        for (j, v) in row.iter().enumerate() {
            m[i][j] = v.as_f64().filter(|x| x.is_finite()).ok_or_else(bad)?;
        }
    }
    Ok(m)
}

/// Resolves `file_path` relative to the JSON's folder, trying image extensions when it has none.
fn image_path(json_dir: &Path, file_path: &str) -> PathBuf {
    let p = json_dir.join(file_path);
    if p.is_file() {
        return p;
    }
    for ext in ["png", "jpg", "jpeg", "PNG", "JPG"] {
        let q = json_dir.join(format!("{file_path}.{ext}"));
        if q.is_file() {
            return q;
        }
    }
    p
}

fn image_size(path: &Path) -> Result<(u32, u32), DatasetError> {
    if !path.is_file() {
        return Err(DatasetError::invalid(path, "image not found"));
    }
    image::image_dimensions(path)
        .map_err(|e| DatasetError::invalid(path, format!("cannot read image header: {e}")))
}

/// Intrinsics of frame `i` (keys missing from the frame come from the file's top level) and the
/// reference size they are given at.
fn frame_intrinsics(
    path: &Path,
    json: &Value,
    frame: &Value,
    i: usize,
    (w, h): (u32, u32),
) -> Result<(Intrinsics, f64, f64), DatasetError> {
    let get = |k: &str| num(frame, k).or_else(|| num(json, k));
    let ref_w = get("w").unwrap_or(w as f64);
    let ref_h = get("h").unwrap_or(h as f64);
    let fx = match (get("fl_x"), get("camera_angle_x")) {
        (Some(f), _) => f,
        (None, Some(a)) => 0.5 * ref_w / (0.5 * a).tan(),
        (None, None) => {
            return Err(DatasetError::invalid(
                path,
                format!("frame {i}: no fl_x or camera_angle_x"),
            ))
        }
    };
    let k = |key: &str| get(key).unwrap_or(0.0);
    let model = (frame
        .get("camera_model")
        .or_else(|| json.get("camera_model")))
    .and_then(Value::as_str)
    .unwrap_or("OPENCV");
    let fisheye = model == "OPENCV_FISHEYE";
    if !fisheye && !["OPENCV", "PINHOLE", "SIMPLE_PINHOLE", "PERSPECTIVE"].contains(&model) {
        return Err(DatasetError::invalid(
            path,
            format!(
                "frame {i}: camera_model {model} is not read (OPENCV, OPENCV_FISHEYE and PINHOLE are)"
            ),
        ));
    }
    if !fisheye && k("k4") != 0.0 {
        // nerfstudio's perspective k4 is an r^8 term, which OpenCV's models have not.
        return Err(DatasetError::invalid(
            path,
            format!("frame {i}: k4 on a perspective camera is not read (k1, k2, k3, p1, p2 are)"),
        ));
    }
    let fy = match (get("fl_y"), get("camera_angle_y")) {
        (Some(f), _) => f,
        (None, Some(a)) => 0.5 * ref_h / (0.5 * a).tan(),
        (None, None) => fx,
    };
    let intr = Intrinsics {
        fx,
        fy,
        cx: get("cx").unwrap_or(0.5 * ref_w),
        cy: get("cy").unwrap_or(0.5 * ref_h),
        // OpenCV's k1, k2, p1, p2 and k3 (nerfstudio's OPENCV camera), or the fisheye's k1..k4.
        distortion: if fisheye {
            Distortion::fisheye([k("k1"), k("k2"), k("k3"), k("k4")])
        } else {
            Distortion::OpenCv {
                k: [k("k1"), k("k2"), k("k3"), 0.0, 0.0, 0.0],
                p: [k("p1"), k("p2")],
            }
            .simplified()
        },
    };
    intr.distortion
        .check()
        .map_err(|e| DatasetError::invalid(path, format!("frame {i}: {e}")))?;
    let vals = [intr.fx, intr.fy, intr.cx, intr.cy, ref_w, ref_h];
    if vals.iter().any(|v| !v.is_finite())
        || intr.fx <= 0.0
        || intr.fy <= 0.0
        || ref_w <= 0.0
        || ref_h <= 0.0
    {
        return Err(DatasetError::invalid(
            path,
            format!("frame {i}: invalid intrinsics {vals:?}"),
        ));
    }
    Ok((intr, ref_w, ref_h))
}

/// Pending views of one JSON file. `defaults` supplies intrinsics keys missing from a frame.
fn pending_from_json(
    path: &Path,
    json: &Value,
    warnings: &mut Vec<String>,
    size_of: SizeOf,
    skip_missing: bool,
) -> Result<Vec<PendingView>, DatasetError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let frames = json
        .get("frames")
        .and_then(Value::as_array)
        .ok_or_else(|| DatasetError::invalid(path, "no \"frames\" array"))?;
    if frames.is_empty() {
        return Err(DatasetError::invalid(path, "\"frames\" is empty"));
    }
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        let file = frame
            .get("file_path")
            .and_then(Value::as_str)
            .ok_or_else(|| DatasetError::invalid(path, format!("frame {i}: no file_path")))?;
        let img_path = image_path(dir, file);
        let Some((w, h)) = size_of(&img_path)? else {
            missing.push(file.to_string());
            continue;
        };
        let (intr, ref_w, ref_h) = frame_intrinsics(path, json, frame, i, (w, h))?;
        let (rotation, translation) = opengl_c2w_to_w2c(&matrix(path, frame, i)?);
        out.push(PendingView {
            name: file.trim_start_matches("./").to_string(),
            path: img_path,
            rotation,
            translation,
            intrinsics: intr,
            ref_size: (ref_w, ref_h),
            // nerfstudio's per-frame mask, relative to the file (a missing one is reported at load).
            mask: frame
                .get("mask_path")
                .and_then(Value::as_str)
                .map(|m| dir.join(m.trim_start_matches("./"))),
        });
    }
    if out.is_empty() {
        return Err(DatasetError::invalid(
            path,
            format!(
                "none of the {} frames' images exist (first: {:?})",
                frames.len(),
                missing[0]
            ),
        ));
    }
    if !missing.is_empty() && !skip_missing {
        return Err(DatasetError::invalid(
            path,
            format!(
                "the image of frame {:?} is missing{} (--skip-bad-images trains without {})",
                missing[0],
                if missing.len() > 1 {
                    format!(", and {} more", missing.len() - 1)
                } else {
                    String::new()
                },
                if missing.len() > 1 { "them" } else { "it" }
            ),
        ));
    }
    if !missing.is_empty() {
        warnings.push(format!(
            "{}: {} frame image(s) missing, skipped: {}",
            path.display(),
            missing.len(),
            missing
                .iter()
                .take(10)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(out)
}

pub fn load_nerf_synthetic(root: &Path, opts: &LoadOptions) -> Result<Dataset, DatasetError> {
    let background = opts.background.unwrap_or([1.0; 3]);
    let mut warnings = Vec::new();
    let mut notes = vec![format!("RGBA composited on background {background:?}")];
    let train_path = root.join("transforms_train.json");
    let test_path = root.join("transforms_test.json");
    let train_json = read_json(&train_path)?;
    let pending = pending_from_json(
        &train_path,
        &train_json,
        &mut warnings,
        &file_image_size,
        opts.skip_bad_images,
    )?;
    let mut train = load_views(pending, opts, background, root, &mut warnings, &mut notes)?;
    let mut test = if test_path.is_file() {
        let test_json = read_json(&test_path)?;
        let pending = pending_from_json(
            &test_path,
            &test_json,
            &mut warnings,
            &file_image_size,
            opts.skip_bad_images,
        )?;
        load_views(pending, opts, background, root, &mut warnings, &mut notes)?
    } else {
        warnings.push(format!("{} not found: no test views", test_path.display()));
        Vec::new()
    };
    if !opts.eval {
        // As the original: without --eval the test views are trained on too.
        train.append(&mut test);
    }
    notes.push("no SfM points: 100,000 random points in the cube [-1.3, 1.3]^3".into());
    Ok(Dataset {
        root: root.to_path_buf(),
        format: DatasetFormat::NerfSynthetic,
        train,
        test,
        points: super::random_init::random_cube_points(100_000, [0.0; 3], 1.3, 0),
        points_from_dataset: false,
        background,
        scene_extent: 1.0,
        warnings,
        notes,
    })
}

pub fn load_transforms(root: &Path, opts: &LoadOptions) -> Result<Dataset, DatasetError> {
    let background = opts.background.unwrap_or([0.0; 3]);
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    let path = root.join("transforms.json");
    let json = read_json(&path)?;
    let pending = pending_from_json(
        &path,
        &json,
        &mut warnings,
        &file_image_size,
        opts.skip_bad_images,
    )?;
    if pending
        .iter()
        .any(|p| !p.intrinsics.distortion.is_identity())
    {
        notes.push("undistorting to pinhole (k1 k2 p1 p2)".into());
    }
    let views = load_views(pending, opts, background, root, &mut warnings, &mut notes)?;
    let (train, test) = split_every_8th(views, opts.eval);
    let mut ds = Dataset {
        root: root.to_path_buf(),
        format: DatasetFormat::Transforms,
        train,
        test,
        points: Points::default(),
        points_from_dataset: false,
        background,
        scene_extent: 1.0,
        warnings,
        notes,
    };
    let (points, note) =
        super::random_init::random_points_seen(&ds, super::random_init::RANDOM_POINTS, 0);
    ds.points = points;
    ds.notes.push(note);
    Ok(ds)
}
