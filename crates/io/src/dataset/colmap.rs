//! COLMAP sparse reconstructions: `cameras`, `images` and `points3D`, in `.bin` or `.txt`.
//!
//! Binary layouts (little-endian): cameras: `u64` count, then per camera `u32` id, `i32` model, `u64` width,
//! `u64` height, `f64` params; images: `u64` count, then `u32` id, `qvec` (w, x, y, z) and `tvec` as `f64`,
//! `u32` camera id, NUL-terminated name, `u64` count of 2D points, each `f64 x, f64 y, i64 point id`;
//! points3D: `u64` count, then `u64` id, `f64` xyz, `u8` rgb, `f64` error, `u64` track length, then
//! `(i32 image id, i32 point2D index)` pairs. Counts are checked against the bytes present before use.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use splat_core::lens::Distortion;

use super::DatasetError;

/// COLMAP's camera models (all of them): perspective ones are undistorted to pinhole when images are
/// loaded, fisheye ones resampled to the ideal equidistant fisheye ([`Distortion`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CameraModel {
    SimplePinhole,
    Pinhole,
    SimpleRadial,
    Radial,
    OpenCv,
    FullOpenCv,
    Fov,
    OpenCvFisheye,
    SimpleRadialFisheye,
    RadialFisheye,
    ThinPrismFisheye,
}

impl CameraModel {
    /// COLMAP's name of the model.
    pub fn name(self) -> &'static str {
        match self {
            CameraModel::SimplePinhole => "SIMPLE_PINHOLE",
            CameraModel::Pinhole => "PINHOLE",
            CameraModel::SimpleRadial => "SIMPLE_RADIAL",
            CameraModel::Radial => "RADIAL",
            CameraModel::OpenCv => "OPENCV",
            CameraModel::FullOpenCv => "FULL_OPENCV",
            CameraModel::Fov => "FOV",
            CameraModel::OpenCvFisheye => "OPENCV_FISHEYE",
            CameraModel::SimpleRadialFisheye => "SIMPLE_RADIAL_FISHEYE",
            CameraModel::RadialFisheye => "RADIAL_FISHEYE",
            CameraModel::ThinPrismFisheye => "THIN_PRISM_FISHEYE",
        }
    }

    fn from_id(id: i32) -> Option<CameraModel> {
        Some(match id {
            0 => CameraModel::SimplePinhole,
            1 => CameraModel::Pinhole,
            2 => CameraModel::SimpleRadial,
            3 => CameraModel::Radial,
            4 => CameraModel::OpenCv,
            5 => CameraModel::OpenCvFisheye,
            6 => CameraModel::FullOpenCv,
            7 => CameraModel::Fov,
            8 => CameraModel::SimpleRadialFisheye,
            9 => CameraModel::RadialFisheye,
            10 => CameraModel::ThinPrismFisheye,
            _ => return None,
        })
    }

    fn from_name(name: &str) -> Option<CameraModel> {
        Some(match name {
            "SIMPLE_PINHOLE" => CameraModel::SimplePinhole,
            "PINHOLE" => CameraModel::Pinhole,
            "SIMPLE_RADIAL" => CameraModel::SimpleRadial,
            "RADIAL" => CameraModel::Radial,
            "OPENCV" => CameraModel::OpenCv,
            "FULL_OPENCV" => CameraModel::FullOpenCv,
            "FOV" => CameraModel::Fov,
            "OPENCV_FISHEYE" => CameraModel::OpenCvFisheye,
            "SIMPLE_RADIAL_FISHEYE" => CameraModel::SimpleRadialFisheye,
            "RADIAL_FISHEYE" => CameraModel::RadialFisheye,
            "THIN_PRISM_FISHEYE" => CameraModel::ThinPrismFisheye,
            _ => return None,
        })
    }

    fn num_params(self) -> usize {
        match self {
            CameraModel::SimplePinhole => 3,
            CameraModel::Pinhole => 4,
            CameraModel::SimpleRadial => 4,
            CameraModel::Radial => 5,
            CameraModel::OpenCv => 8,
            CameraModel::FullOpenCv => 12,
            CameraModel::Fov => 5,
            CameraModel::OpenCvFisheye => 8,
            CameraModel::SimpleRadialFisheye => 4,
            CameraModel::RadialFisheye => 5,
            CameraModel::ThinPrismFisheye => 12,
        }
    }
}

/// COLMAP model names by id, for error messages about unsupported ones.
const MODEL_NAMES: [&str; 11] = [
    "SIMPLE_PINHOLE",
    "PINHOLE",
    "SIMPLE_RADIAL",
    "RADIAL",
    "OPENCV",
    "OPENCV_FISHEYE",
    "FULL_OPENCV",
    "FOV",
    "SIMPLE_RADIAL_FISHEYE",
    "RADIAL_FISHEYE",
    "THIN_PRISM_FISHEYE",
];

/// Intrinsics with distortion, at the resolution the reconstruction was made.
#[derive(Clone, Debug, PartialEq)]
pub struct ColmapCamera {
    pub model: CameraModel,
    pub width: u64,
    pub height: u64,
    pub fx: f64,
    pub fy: f64,
    pub cx: f64,
    pub cy: f64,
    pub distortion: Distortion,
}

impl ColmapCamera {
    fn new(model: CameraModel, width: u64, height: u64, p: &[f64]) -> ColmapCamera {
        let (fx, fy, cx, cy, d) = match model {
            CameraModel::SimplePinhole => (p[0], p[0], p[1], p[2], Distortion::None),
            CameraModel::Pinhole => (p[0], p[1], p[2], p[3], Distortion::None),
            CameraModel::SimpleRadial => (
                p[0],
                p[0],
                p[1],
                p[2],
                Distortion::opencv(p[3], 0.0, 0.0, 0.0),
            ),
            CameraModel::Radial => (
                p[0],
                p[0],
                p[1],
                p[2],
                Distortion::opencv(p[3], p[4], 0.0, 0.0),
            ),
            CameraModel::OpenCv => (
                p[0],
                p[1],
                p[2],
                p[3],
                Distortion::opencv(p[4], p[5], p[6], p[7]),
            ),
            // fx, fy, cx, cy, k1, k2, p1, p2, k3, k4, k5, k6
            CameraModel::FullOpenCv => {
                let k = [p[4], p[5], p[8], p[9], p[10], p[11]];
                (
                    p[0],
                    p[1],
                    p[2],
                    p[3],
                    Distortion::OpenCv { k, p: [p[6], p[7]] }.simplified(),
                )
            }
            CameraModel::Fov => (
                p[0],
                p[1],
                p[2],
                p[3],
                Distortion::Fov { omega: p[4] }.simplified(),
            ),
            CameraModel::OpenCvFisheye => (
                p[0],
                p[1],
                p[2],
                p[3],
                Distortion::fisheye([p[4], p[5], p[6], p[7]]),
            ),
            CameraModel::SimpleRadialFisheye => (
                p[0],
                p[0],
                p[1],
                p[2],
                Distortion::fisheye([p[3], 0.0, 0.0, 0.0]),
            ),
            CameraModel::RadialFisheye => (
                p[0],
                p[0],
                p[1],
                p[2],
                Distortion::fisheye([p[3], p[4], 0.0, 0.0]),
            ),
            // fx, fy, cx, cy, k1, k2, p1, p2, k3, k4, sx1, sy1
            CameraModel::ThinPrismFisheye => (
                p[0],
                p[1],
                p[2],
                p[3],
                Distortion::Fisheye {
                    k: [p[4], p[5], p[8], p[9]],
                    p: [p[6], p[7]],
                    s: [p[10], p[11]],
                },
            ),
        };
        ColmapCamera {
            model,
            width,
            height,
            fx,
            fy,
            cx,
            cy,
            distortion: d,
        }
    }

    pub fn is_distorted(&self) -> bool {
        !self.distortion.is_identity()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ColmapImage {
    pub id: u32,
    /// World-to-camera rotation `(w, x, y, z)`.
    pub qvec: [f64; 4],
    pub tvec: [f64; 3],
    pub camera_id: u32,
    pub name: String,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Points {
    pub positions: Vec<[f64; 3]>,
    pub colors: Vec<[u8; 3]>,
}

#[derive(Clone, Debug)]
pub struct Reconstruction {
    pub cameras: BTreeMap<u32, ColmapCamera>,
    pub images: Vec<ColmapImage>,
    pub points: Points,
    pub dir: PathBuf,
}

/// Finds the model folder under a dataset root: `sparse/0`, then `sparse`.
pub fn find_model_dir(root: &Path) -> Option<PathBuf> {
    for sub in ["sparse/0", "sparse"] {
        let d = root.join(sub);
        if d.join("cameras.bin").is_file() || d.join("cameras.txt").is_file() {
            return Some(d);
        }
    }
    None
}

/// Reads a reconstruction from a model folder (`.bin` preferred over `.txt` when both exist).
pub fn read_model(dir: &Path) -> Result<Reconstruction, DatasetError> {
    let pick = |stem: &str| -> Result<(PathBuf, bool), DatasetError> {
        let bin = dir.join(format!("{stem}.bin"));
        let txt = dir.join(format!("{stem}.txt"));
        if bin.is_file() {
            Ok((bin, true))
        } else if txt.is_file() {
            Ok((txt, false))
        } else {
            Err(DatasetError::invalid(
                dir,
                format!("no {stem}.bin or {stem}.txt"),
            ))
        }
    };
    let (p, bin) = pick("cameras")?;
    let cameras = if bin {
        read_cameras_bin(&p)?
    } else {
        read_cameras_txt(&p)?
    };
    let (p, bin) = pick("images")?;
    let mut images = if bin {
        read_images_bin(&p)?
    } else {
        read_images_txt(&p)?
    };
    images.sort_by(|a, b| a.name.cmp(&b.name));
    let points = match pick("points3D") {
        Ok((p, true)) => read_points_bin(&p)?,
        Ok((p, false)) => read_points_txt(&p)?,
        Err(_) => Points::default(),
    };
    if images.is_empty() {
        return Err(DatasetError::invalid(
            dir,
            "the reconstruction has no images",
        ));
    }
    for im in &images {
        if !cameras.contains_key(&im.camera_id) {
            return Err(DatasetError::invalid(
                &p,
                format!(
                    "image {:?} refers to camera {} which does not exist",
                    im.name, im.camera_id
                ),
            ));
        }
    }
    Ok(Reconstruction {
        cameras,
        images,
        points,
        dir: dir.to_path_buf(),
    })
}

/// A bounds-checked little-endian cursor.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    path: &'a Path,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DatasetError> {
        if self.bytes.len() - self.pos < n {
            return Err(DatasetError::invalid(
                self.path,
                format!("truncated at byte {} (needed {n} more bytes)", self.pos),
            ));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, DatasetError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, DatasetError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn i32(&mut self) -> Result<i32, DatasetError> {
        Ok(i32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> Result<u64, DatasetError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn f64(&mut self) -> Result<f64, DatasetError> {
        Ok(f64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    /// A count of records of at least `min_size` bytes each, checked against the bytes left.
    fn count(&mut self, min_size: usize, what: &str) -> Result<usize, DatasetError> {
        let n = self.u64()?;
        let left = (self.bytes.len() - self.pos) as u64;
        if n.saturating_mul(min_size as u64) > left {
            return Err(DatasetError::invalid(
                self.path,
                format!("{n} {what} announced but only {left} bytes follow"),
            ));
        }
        Ok(n as usize)
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, DatasetError> {
    std::fs::read(path).map_err(|e| DatasetError::io(path, e))
}

fn finite(path: &Path, what: &str, values: &[f64]) -> Result<(), DatasetError> {
    if values.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(DatasetError::invalid(
            path,
            format!("{what} has a non-finite value: {values:?}"),
        ))
    }
}

fn check_camera(path: &Path, id: u32, cam: &ColmapCamera) -> Result<(), DatasetError> {
    let vals = [cam.fx, cam.fy, cam.cx, cam.cy];
    finite(path, &format!("camera {id}"), &vals)?;
    cam.distortion
        .check()
        .map_err(|e| DatasetError::invalid(path, format!("camera {id}: {e}")))?;
    if cam.width == 0 || cam.height == 0 || cam.width > 1 << 16 || cam.height > 1 << 16 {
        return Err(DatasetError::invalid(
            path,
            format!("camera {id} has size {} x {}", cam.width, cam.height),
        ));
    }
    if cam.fx <= 0.0 || cam.fy <= 0.0 {
        return Err(DatasetError::invalid(
            path,
            format!("camera {id} has focal length <= 0"),
        ));
    }
    Ok(())
}

fn unsupported_model(path: &Path, id: u32, model: &str) -> DatasetError {
    DatasetError::invalid(
        path,
        format!(
            "camera {id} uses model {model}, which is not supported (not a COLMAP camera model)"
        ),
    )
}

pub fn read_cameras_bin(path: &Path) -> Result<BTreeMap<u32, ColmapCamera>, DatasetError> {
    parse_cameras_bin(&read_file(path)?, path)
}

/// Parses the bytes of a `cameras.bin` (`path` names it in errors).
pub fn parse_cameras_bin(
    bytes: &[u8],
    path: &Path,
) -> Result<BTreeMap<u32, ColmapCamera>, DatasetError> {
    let mut r = Reader {
        bytes,
        pos: 0,
        path,
    };
    let n = r.count(24, "cameras")?;
    let mut out = BTreeMap::new();
    for _ in 0..n {
        let id = r.u32()?;
        let model_id = r.i32()?;
        let width = r.u64()?;
        let height = r.u64()?;
        let model = CameraModel::from_id(model_id).ok_or_else(|| {
            let name = usize::try_from(model_id)
                .ok()
                .and_then(|i| MODEL_NAMES.get(i))
                .map(|s| s.to_string())
                .unwrap_or(format!("id {model_id}"));
            unsupported_model(path, id, &name)
        })?;
        let params: Vec<f64> = (0..model.num_params())
            .map(|_| r.f64())
            .collect::<Result<_, _>>()?;
        let cam = ColmapCamera::new(model, width, height, &params);
        check_camera(path, id, &cam)?;
        out.insert(id, cam);
    }
    Ok(out)
}

pub fn read_images_bin(path: &Path) -> Result<Vec<ColmapImage>, DatasetError> {
    parse_images_bin(&read_file(path)?, path)
}

/// Parses the bytes of a `images.bin` (`path` names it in errors).
pub fn parse_images_bin(bytes: &[u8], path: &Path) -> Result<Vec<ColmapImage>, DatasetError> {
    let mut r = Reader {
        bytes,
        pos: 0,
        path,
    };
    let n = r.count(4 + 56 + 4 + 1 + 8, "images")?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let id = r.u32()?;
        let q = [r.f64()?, r.f64()?, r.f64()?, r.f64()?];
        let t = [r.f64()?, r.f64()?, r.f64()?];
        let camera_id = r.u32()?;
        let mut name = Vec::new();
        loop {
            let c = r.u8()?;
            if c == 0 {
                break;
            }
            name.push(c);
        }
        let n2d = r.count(24, "2D points")?;
        r.take(n2d * 24)?;
        let name = String::from_utf8(name).map_err(|_| {
            DatasetError::invalid(path, format!("image {id} has a name that is not UTF-8"))
        })?;
        finite(
            path,
            &format!("image {name:?} pose"),
            &[q[0], q[1], q[2], q[3], t[0], t[1], t[2]],
        )?;
        out.push(ColmapImage {
            id,
            qvec: q,
            tvec: t,
            camera_id,
            name,
        });
    }
    Ok(out)
}

pub fn read_points_bin(path: &Path) -> Result<Points, DatasetError> {
    parse_points_bin(&read_file(path)?, path)
}

/// Parses the bytes of a `points.bin` (`path` names it in errors).
pub fn parse_points_bin(bytes: &[u8], path: &Path) -> Result<Points, DatasetError> {
    let mut r = Reader {
        bytes,
        pos: 0,
        path,
    };
    let n = r.count(8 + 24 + 3 + 8 + 8, "points")?;
    let mut pts = Points::default();
    pts.positions.reserve(n);
    pts.colors.reserve(n);
    for _ in 0..n {
        let _id = r.u64()?;
        let p = [r.f64()?, r.f64()?, r.f64()?];
        let c = [r.u8()?, r.u8()?, r.u8()?];
        let _err = r.f64()?;
        let track = r.count(8, "track entries")?;
        r.take(track * 8)?;
        finite(path, "a point", &p)?;
        pts.positions.push(p);
        pts.colors.push(c);
    }
    Ok(pts)
}

/// Non-comment lines with their 1-based line numbers; blank lines are kept (images.txt needs them).
fn text_lines(bytes: &[u8], path: &Path) -> Result<Vec<(usize, String)>, DatasetError> {
    let text =
        std::str::from_utf8(bytes).map_err(|_| DatasetError::invalid(path, "not UTF-8 text"))?;
    Ok(text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with('#'))
        .map(|(i, l)| (i + 1, l.trim().to_string()))
        .collect())
}

fn parse<T: std::str::FromStr>(
    path: &Path,
    line: usize,
    word: Option<&str>,
    what: &str,
) -> Result<T, DatasetError> {
    let w =
        word.ok_or_else(|| DatasetError::invalid(path, format!("line {line}: missing {what}")))?;
    w.parse::<T>()
        .map_err(|_| DatasetError::invalid(path, format!("line {line}: {what} {w:?} is not valid")))
}

pub fn read_cameras_txt(path: &Path) -> Result<BTreeMap<u32, ColmapCamera>, DatasetError> {
    parse_cameras_txt(&read_file(path)?, path)
}

/// Parses the text of a `cameras.txt` (`path` names it in errors).
pub fn parse_cameras_txt(
    bytes: &[u8],
    path: &Path,
) -> Result<BTreeMap<u32, ColmapCamera>, DatasetError> {
    let mut out = BTreeMap::new();
    for (ln, line) in text_lines(bytes, path)? {
        if line.is_empty() {
            continue;
        }
        let mut w = line.split_whitespace();
        let id: u32 = parse(path, ln, w.next(), "camera id")?;
        let model_name = w.next().unwrap_or("");
        let model = CameraModel::from_name(model_name)
            .ok_or_else(|| unsupported_model(path, id, model_name))?;
        let width: u64 = parse(path, ln, w.next(), "width")?;
        let height: u64 = parse(path, ln, w.next(), "height")?;
        let params: Vec<f64> = (0..model.num_params())
            .map(|_| parse(path, ln, w.next(), "parameter"))
            .collect::<Result<_, _>>()?;
        let cam = ColmapCamera::new(model, width, height, &params);
        check_camera(path, id, &cam)?;
        out.insert(id, cam);
    }
    Ok(out)
}

pub fn read_images_txt(path: &Path) -> Result<Vec<ColmapImage>, DatasetError> {
    parse_images_txt(&read_file(path)?, path)
}

/// Parses the text of a `images.txt` (`path` names it in errors).
pub fn parse_images_txt(bytes: &[u8], path: &Path) -> Result<Vec<ColmapImage>, DatasetError> {
    let lines = text_lines(bytes, path)?;
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (ln, line) = &lines[i];
        if line.is_empty() {
            i += 1;
            continue;
        }
        let mut w = line.split_whitespace();
        let id: u32 = parse(path, *ln, w.next(), "image id")?;
        let mut q = [0.0; 4];
        for v in &mut q {
            *v = parse(path, *ln, w.next(), "qvec")?;
        }
        let mut t = [0.0; 3];
        for v in &mut t {
            *v = parse(path, *ln, w.next(), "tvec")?;
        }
        let camera_id: u32 = parse(path, *ln, w.next(), "camera id")?;
        let name = w.collect::<Vec<_>>().join(" ");
        if name.is_empty() {
            return Err(DatasetError::invalid(
                path,
                format!("line {ln}: missing image name"),
            ));
        }
        finite(
            path,
            &format!("line {ln}: pose"),
            &[q[0], q[1], q[2], q[3], t[0], t[1], t[2]],
        )?;
        out.push(ColmapImage {
            id,
            qvec: q,
            tvec: t,
            camera_id,
            name,
        });
        i += 2; // the next line lists the 2D points (possibly empty)
    }
    Ok(out)
}

pub fn read_points_txt(path: &Path) -> Result<Points, DatasetError> {
    parse_points_txt(&read_file(path)?, path)
}

/// Parses the text of a `points.txt` (`path` names it in errors).
pub fn parse_points_txt(bytes: &[u8], path: &Path) -> Result<Points, DatasetError> {
    let mut pts = Points::default();
    for (ln, line) in text_lines(bytes, path)? {
        if line.is_empty() {
            continue;
        }
        let mut w = line.split_whitespace();
        let _id: u64 = parse(path, ln, w.next(), "point id")?;
        let p = [
            parse(path, ln, w.next(), "x")?,
            parse(path, ln, w.next(), "y")?,
            parse(path, ln, w.next(), "z")?,
        ];
        let c = [
            parse(path, ln, w.next(), "r")?,
            parse(path, ln, w.next(), "g")?,
            parse(path, ln, w.next(), "b")?,
        ];
        finite(path, &format!("line {ln}: point"), &p)?;
        pts.positions.push(p);
        pts.colors.push(c);
    }
    Ok(pts)
}

/// World-to-camera rotation matrix of a COLMAP `qvec`.
pub fn qvec_to_rotation(q: [f64; 4]) -> [[f64; 3]; 3] {
    let n = q.iter().map(|v| v * v).sum::<f64>().sqrt();
    splat_core::math::quat_to_mat(q.map(|v| v / n))
}

/// Writers for the text format (the demo writes its dataset this way; tests write fixtures).
pub mod write {
    use super::*;
    use std::fmt::Write as _;

    pub fn cameras_txt(cams: &[(u32, &str, u64, u64, Vec<f64>)]) -> String {
        let mut s = String::from("# Camera list with one line of data per camera:\n#   CAMERA_ID, MODEL, WIDTH, HEIGHT, PARAMS[]\n");
        for (id, model, w, h, params) in cams {
            let p: Vec<String> = params.iter().map(|v| format!("{v}")).collect();
            let _ = writeln!(s, "{id} {model} {w} {h} {}", p.join(" "));
        }
        s
    }

    pub fn images_txt(images: &[ColmapImage]) -> String {
        let mut s = String::from("# Image list with two lines of data per image:\n#   IMAGE_ID, QW, QX, QY, QZ, TX, TY, TZ, CAMERA_ID, NAME\n#   POINTS2D[] as (X, Y, POINT3D_ID)\n");
        for im in images {
            let [qw, qx, qy, qz] = im.qvec;
            let [tx, ty, tz] = im.tvec;
            let _ = writeln!(
                s,
                "{} {qw} {qx} {qy} {qz} {tx} {ty} {tz} {} {}\n",
                im.id, im.camera_id, im.name
            );
        }
        s
    }

    pub fn points3d_txt(points: &Points) -> String {
        let mut s = String::from("# 3D point list with one line of data per point:\n#   POINT3D_ID, X, Y, Z, R, G, B, ERROR, TRACK[] as (IMAGE_ID, POINT2D_IDX)\n");
        for (i, (p, c)) in points.positions.iter().zip(&points.colors).enumerate() {
            let _ = writeln!(
                s,
                "{} {} {} {} {} {} {} 0",
                i + 1,
                p[0],
                p[1],
                p[2],
                c[0],
                c[1],
                c[2]
            );
        }
        s
    }
}
