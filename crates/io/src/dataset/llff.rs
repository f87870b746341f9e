//! LLFF `poses_bounds.npy`: `N x 17` doubles, per image a 3 x 5 matrix (camera-to-world columns
//! `[down, right, back]` and a translation, plus `[H, W, focal]` at full resolution) and the near/far
//! depth bounds. Images come from `images_N` (or `--images`), matched to poses by sorted order.

use std::path::Path;

use super::imageload::Intrinsics;
use super::{
    colmap, list_images, load_views, random_init, split_every_8th, Dataset, DatasetError,
    DatasetFormat, LoadOptions, PendingView, Points,
};

/// Parses a 2-D `float64` (or `float32`) little-endian C-order `.npy` array: (rows, cols, values).
pub fn parse_npy(path: &Path, bytes: &[u8]) -> Result<(usize, usize, Vec<f64>), DatasetError> {
    let bad = |m: &str| DatasetError::invalid(path, format!("not a supported .npy file: {m}"));
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("missing the \\x93NUMPY magic"));
    }
    let major = bytes[6];
    let (header_len, start): (usize, usize) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(bad("truncated header"));
            }
            (
                u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize,
                12,
            )
        }
        _ => return Err(bad(&format!("version {major}"))),
    };
    let end = start
        .checked_add(header_len)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| bad("truncated header"))?;
    let header = std::str::from_utf8(&bytes[start..end]).map_err(|_| bad("header is not text"))?;
    let descr_f8 = header.contains("'<f8'") || header.contains("\"<f8\"");
    let descr_f4 = header.contains("'<f4'") || header.contains("\"<f4\"");
    if !descr_f8 && !descr_f4 {
        return Err(bad("dtype is not little-endian float64 or float32"));
    }
    if header.contains("'fortran_order': True") {
        return Err(bad("Fortran order"));
    }
    let shape_start = header.find("'shape':").ok_or_else(|| bad("no shape"))? + 8;
    let open = header[shape_start..]
        .find('(')
        .ok_or_else(|| bad("no shape"))?
        + shape_start;
    let close = header[open..].find(')').ok_or_else(|| bad("no shape"))? + open;
    let dims: Vec<usize> = header[open + 1..close]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().map_err(|_| bad("bad shape")))
        .collect::<Result<_, _>>()?;
    if dims.len() != 2 {
        return Err(bad(&format!("shape {dims:?} is not 2-D")));
    }
    let (rows, cols) = (dims[0], dims[1]);
    let size = if descr_f8 { 8 } else { 4 };
    let need = rows
        .checked_mul(cols)
        .and_then(|n| n.checked_mul(size))
        .ok_or_else(|| bad("shape too large"))?;
    if bytes.len() - end < need {
        return Err(DatasetError::invalid(
            path,
            format!(
                "truncated: shape ({rows}, {cols}) needs {need} bytes of data, the file has {}",
                bytes.len() - end
            ),
        ));
    }
    let data = &bytes[end..end + need];
    let values = if descr_f8 {
        data.chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    } else {
        data.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect()
    };
    Ok((rows, cols, values))
}

/// Chooses the image folder: `--images`, else `images`, else the `images_N` with the smallest N.
fn image_folder(root: &Path, opts: &LoadOptions) -> Result<String, DatasetError> {
    if let Some(f) = &opts.images {
        return Ok(f.clone());
    }
    if root.join("images").is_dir() {
        return Ok("images".into());
    }
    let rd = std::fs::read_dir(root).map_err(|e| DatasetError::io(root, e))?;
    let mut best: Option<(u32, String)> = None;
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().to_string();
        if let Some(n) = name
            .strip_prefix("images_")
            .and_then(|s| s.parse::<u32>().ok())
        {
            if e.path().is_dir() && best.as_ref().is_none_or(|(b, _)| n < *b) {
                best = Some((n, name));
            }
        }
    }
    best.map(|b| b.1)
        .ok_or_else(|| DatasetError::invalid(root, "no images or images_N folder"))
}

pub fn load_llff(root: &Path, opts: &LoadOptions) -> Result<Dataset, DatasetError> {
    let npy = root.join("poses_bounds.npy");
    let bytes = std::fs::read(&npy).map_err(|e| DatasetError::io(&npy, e))?;
    let (rows, cols, v) = parse_npy(&npy, &bytes)?;
    if cols != 17 || rows == 0 {
        return Err(DatasetError::invalid(
            &npy,
            format!("shape ({rows}, {cols}); expected (N, 17)"),
        ));
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Err(DatasetError::invalid(&npy, "contains non-finite values"));
    }
    let folder = image_folder(root, opts)?;
    let dir = root.join(&folder);
    let names = list_images(&dir)?;
    if names.len() != rows {
        return Err(DatasetError::invalid(
            &dir,
            format!(
                "{} images but poses_bounds.npy has {rows} poses",
                names.len()
            ),
        ));
    }
    let mut warnings = Vec::new();
    let mut notes = vec![format!(
        "LLFF poses matched to {} by sorted order",
        dir.display()
    )];
    let mut pending = Vec::new();
    let (mut near, mut far) = (f64::INFINITY, 0.0f64);
    for (i, name) in names.iter().enumerate() {
        let r = &v[i * 17..(i + 1) * 17];
        let m = |row: usize, col: usize| r[row * 5 + col];
        // Columns: 0 = down, 1 = right, 2 = back (OpenGL z), 3 = centre, 4 = [H, W, focal].
        // OpenCV camera axes: x = right, y = down, z = forward = -back.
        let r_c2w: [[f64; 3]; 3] = std::array::from_fn(|row| [m(row, 1), m(row, 0), -m(row, 2)]);
        let c = [m(0, 3), m(1, 3), m(2, 3)];
        let (h, w, f) = (m(0, 4), m(1, 4), m(2, 4));
        if !(h > 0.0 && w > 0.0 && f > 0.0) {
            return Err(DatasetError::invalid(
                &npy,
                format!("pose {i}: H, W, focal = {h}, {w}, {f}"),
            ));
        }
        near = near.min(r[15]);
        far = far.max(r[16]);
        let rot = splat_core::math::transpose(&r_c2w);
        let rc = splat_core::math::mat3_vec(&rot, c);
        pending.push(PendingView {
            name: name.clone(),
            path: dir.join(name),
            rotation: rot,
            translation: [-rc[0], -rc[1], -rc[2]],
            intrinsics: Intrinsics {
                fx: f,
                fy: f,
                cx: 0.5 * w,
                cy: 0.5 * h,
                distortion: splat_core::lens::Distortion::None,
            },
            ref_size: (w, h),
            mask: None,
        });
    }
    let background = opts.background.unwrap_or([0.0; 3]);
    let views = load_views(pending, opts, background, root, &mut warnings, &mut notes)?;
    let (train, test) = split_every_8th(views, opts.eval);
    let mut ds = Dataset {
        root: root.to_path_buf(),
        format: DatasetFormat::Llff,
        train,
        test,
        points: Points::default(),
        points_from_dataset: false,
        background,
        scene_extent: 1.0,
        warnings,
        notes,
    };
    match colmap::find_model_dir(root)
        .map(|d| d.join("points3D.bin"))
        .filter(|p| p.is_file())
    {
        Some(p) => {
            ds.points = colmap::read_points_bin(&p)?;
            ds.points_from_dataset = true;
            ds.notes
                .push(format!("initial points from {}", p.display()));
        }
        None => {
            if near.is_finite() && far > near {
                ds.points = random_init::random_points_in_views(
                    &ds,
                    random_init::RANDOM_POINTS,
                    |_| (near, far),
                    |_| true,
                    0,
                );
                ds.notes.push(format!(
                    "no SfM points: {} random points between the bounds' depths {near:.3} and {far:.3}",
                    random_init::RANDOM_POINTS
                ));
            } else {
                let (points, note) =
                    random_init::random_points_seen(&ds, random_init::RANDOM_POINTS, 0);
                ds.points = points;
                ds.notes.push(note);
            }
        }
    }
    Ok(ds)
}
