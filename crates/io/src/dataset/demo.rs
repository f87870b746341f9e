//! The built-in demo capture: a small ray-traced room written as a COLMAP text dataset, so the demo and the
//! tests exercise exactly the path real captures take.
//!
//! The room is a 4 x 4 x 2.5 box with a checkered floor, banded walls (a different pattern on each) and a
//! gridded ceiling, lit by a point light (Lambert + ambient, with the sphere's shadow); in the middle
//! stands a glossy sphere whose Blinn-Phong highlight moves with the viewpoint, which is what the SH
//! coefficients must learn. Cameras stand on a ring looking at the sphere; the sparse points are samples of
//! the surfaces with their diffuse colour, as an SfM reconstruction would give.

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use splat_core::lens::Distortion;
use splat_core::math::mat_to_quat;
use splat_core::{Camera, Projection};

use super::colmap::{write, ColmapImage, Points};
use super::demo_variants::{
    fisheye_camera, lens, perturbed_poses, vary, DemoVariant, TRUE_POSES_FILE,
};
use super::DatasetError;
use crate::write_atomic;

/// Size and number of the demo's views.
#[derive(Clone, Copy, Debug)]
pub struct DemoOptions {
    pub width: u32,
    pub height: u32,
    pub views: usize,
    pub points: usize,
    pub seed: u64,
    /// Exposure changes or a moving object in the training photos ([`super::demo_variants`]).
    pub variant: DemoVariant,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            width: 160,
            height: 120,
            views: 32,
            points: 6000,
            seed: 7,
            variant: DemoVariant::Plain,
        }
    }
}

const HALF: f64 = 2.0;
const HEIGHT: f64 = 2.5;
const SPHERE_C: [f64; 3] = [0.0, 0.0, 0.55];
const SPHERE_R: f64 = 0.55;
const LIGHT: [f64; 3] = [1.2, -0.8, 2.2];

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn norm(a: [f64; 3]) -> [f64; 3] {
    let n = dot(a, a).sqrt();
    [a[0] / n, a[1] / n, a[2] / n]
}
fn add_scaled(a: [f64; 3], d: [f64; 3], t: f64) -> [f64; 3] {
    [a[0] + d[0] * t, a[1] + d[1] * t, a[2] + d[2] * t]
}

fn hit_sphere(o: [f64; 3], d: [f64; 3]) -> Option<f64> {
    let oc = sub(o, SPHERE_C);
    let b = dot(oc, d);
    let c = dot(oc, oc) - SPHERE_R * SPHERE_R;
    let disc = b * b - c;
    if disc < 0.0 {
        return None;
    }
    let t = -b - disc.sqrt();
    (t > 1e-6).then_some(t)
}

/// Diffuse colour and normal of the room surface at `p` (a point on the box).
fn room_surface(p: [f64; 3]) -> ([f64; 3], [f64; 3]) {
    let eps = 1e-6;
    if p[2] <= eps {
        let c = ((p[0] / 0.5).floor() as i64 + (p[1] / 0.5).floor() as i64).rem_euclid(2) == 0;
        let col = if c {
            [0.80, 0.62, 0.42]
        } else {
            [0.35, 0.22, 0.15]
        };
        (col, [0.0, 0.0, 1.0])
    } else if p[2] >= HEIGHT - eps {
        let line = (p[0] * 2.0).fract().abs() < 0.05 || (p[1] * 2.0).fract().abs() < 0.05;
        (
            if line {
                [0.55, 0.55, 0.6]
            } else {
                [0.92, 0.92, 0.9]
            },
            [0.0, 0.0, -1.0],
        )
    } else if p[0] <= -HALF + eps {
        let band = (0.5 + 0.5 * (p[2] * 6.0).sin()) * 0.6 + 0.2;
        ([0.2, band, 0.3], [1.0, 0.0, 0.0])
    } else if p[0] >= HALF - eps {
        let band = (0.5 + 0.5 * (p[1] * 5.0).sin()) * 0.6 + 0.2;
        ([band, 0.25, 0.25], [-1.0, 0.0, 0.0])
    } else if p[1] <= -HALF + eps {
        let d = ((p[0] * 3.0).floor() as i64 + (p[2] * 3.0).floor() as i64).rem_euclid(3);
        (
            [[0.9, 0.8, 0.2], [0.2, 0.4, 0.9], [0.95, 0.95, 0.95]][d as usize],
            [0.0, 1.0, 0.0],
        )
    } else {
        let r = ((p[0] - 0.3).powi(2) + (p[2] - 1.2).powi(2)).sqrt();
        let ring = (0.5 + 0.5 * (r * 9.0).cos()) * 0.7 + 0.15;
        ([ring, ring * 0.5 + 0.3, 0.8], [0.0, -1.0, 0.0])
    }
}

fn hit_room(o: [f64; 3], d: [f64; 3]) -> f64 {
    let lo = [-HALF, -HALF, 0.0];
    let hi = [HALF, HALF, HEIGHT];
    let mut t = f64::INFINITY;
    for a in 0..3 {
        if d[a] > 1e-12 {
            t = t.min((hi[a] - o[a]) / d[a]);
        } else if d[a] < -1e-12 {
            t = t.min((lo[a] - o[a]) / d[a]);
        }
    }
    t
}

fn shade_diffuse(p: [f64; 3], n: [f64; 3], albedo: [f64; 3]) -> [f64; 3] {
    let to_light = sub(LIGHT, p);
    let dist = dot(to_light, to_light).sqrt();
    let l = norm(to_light);
    let mut lambert = dot(n, l).max(0.0);
    if let Some(t) = hit_sphere(add_scaled(p, n, 1e-4), l) {
        if t < dist {
            lambert = 0.0;
        }
    }
    albedo.map(|a| a * (0.35 + 0.75 * lambert))
}

/// Value noise in [0, 1] on the integer lattice: a hash per lattice point, trilinear in between.
fn value_noise(p: [f64; 3]) -> f64 {
    let hash = |x: i64, y: i64, z: i64| {
        let mut h = (x as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ (y as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
            ^ (z as u64).wrapping_mul(0x1656_67B1_9E37_79F9);
        h ^= h >> 29;
        h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h ^= h >> 32;
        (h >> 11) as f64 / (1u64 << 53) as f64
    };
    let i = p.map(|v| v.floor() as i64);
    let f = [0, 1, 2].map(|k| {
        let t = p[k] - i[k] as f64;
        t * t * (3.0 - 2.0 * t)
    });
    let mut acc = 0.0;
    for corner in 0..8 {
        let o = [corner & 1, (corner >> 1) & 1, (corner >> 2) & 1];
        let w: f64 = (0..3)
            .map(|k| if o[k] == 1 { f[k] } else { 1.0 - f[k] })
            .product();
        acc += w * hash(i[0] + o[0], i[1] + o[1], i[2] + o[2]);
    }
    acc
}

/// A multiplier in [0.45, 1.15] that gives every surface of the photo capture blobs and edges at
/// several scales (what SIFT finds); the demo's smooth patterns alone register poorly.
fn texture(p: [f64; 3]) -> f64 {
    let n = 0.5 * value_noise(p.map(|v| v * 6.0))
        + 0.3 * value_noise(p.map(|v| v * 15.0 + 17.0))
        + 0.2 * value_noise(p.map(|v| v * 37.0 + 41.0));
    0.45 + 0.7 * n
}

/// Colour seen along a ray (with the photo capture's texture when `textured`).
fn trace(o: [f64; 3], d: [f64; 3], textured: bool) -> [f64; 3] {
    let tex = |p: [f64; 3], albedo: [f64; 3]| {
        if textured {
            let t = texture(p);
            albedo.map(|a| (a * t).min(1.0))
        } else {
            albedo
        }
    };
    let t_room = hit_room(o, d);
    match hit_sphere(o, d) {
        Some(t) if t < t_room => {
            let p = add_scaled(o, d, t);
            let n = norm(sub(p, SPHERE_C));
            let albedo = tex(p, [0.25, 0.45, 0.85]);
            let base = shade_diffuse(p, n, albedo);
            let l = norm(sub(LIGHT, p));
            let h = norm(sub(l, d));
            let spec = dot(n, h).max(0.0).powf(40.0) * 0.8;
            base.map(|c| c + spec)
        }
        _ => {
            let p = add_scaled(o, d, t_room);
            let (albedo, n) = room_surface(p);
            shade_diffuse(p, n, tex(p, albedo))
        }
    }
}

/// Renders one view with 2 x 2 supersampling, 8-bit RGB.
pub fn render_view(cam: &Camera) -> Vec<u8> {
    render_view_with(cam, Distortion::None, false)
}

/// [`render_view`] through a fisheye lens: `cam` equidistant, `lens` its distortion of `theta`
/// ([`Distortion::Fisheye`], radial terms only).
pub fn render_view_through(cam: &Camera, lens: Distortion) -> Vec<u8> {
    render_view_with(cam, lens, false)
}

/// The camera-space direction of the ray through continuous pixel `(px, py)`.
fn ray_direction(cam: &Camera, lens: Distortion, px: f64, py: f64) -> [f64; 3] {
    let (xd, yd) = ((px - cam.cx) / cam.fx, (py - cam.cy) / cam.fy);
    match cam.projection {
        Projection::Pinhole => [xd, yd, 1.0],
        Projection::Equidistant => {
            let theta_d = xd.hypot(yd);
            if theta_d == 0.0 {
                return [0.0, 0.0, 1.0];
            }
            let theta = invert_theta_d(lens, theta_d);
            let s = theta.sin() / theta_d;
            [xd * s, yd * s, theta.cos()]
        }
    }
}

/// The `theta` whose distorted angle is `theta_d` (Newton's method on the lens's radial map).
fn invert_theta_d(lens: Distortion, theta_d: f64) -> f64 {
    let mut theta = theta_d;
    for _ in 0..30 {
        let f = lens.distort(theta, 0.0).0 - theta_d;
        theta -= f / lens.radial_slope(theta);
    }
    theta
}

fn render_view_with(cam: &Camera, lens: Distortion, textured: bool) -> Vec<u8> {
    let center = cam.center();
    let r = &cam.rotation;
    let mut out = Vec::with_capacity(cam.num_pixels() * 3);
    for y in 0..cam.height {
        for x in 0..cam.width {
            let mut acc = [0.0; 3];
            for (sx, sy) in [(0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)] {
                let dc = ray_direction(cam, lens, x as f64 + sx, y as f64 + sy);
                // World direction R^T dc.
                let dw = norm(std::array::from_fn(|k| {
                    r[0][k] * dc[0] + r[1][k] * dc[1] + r[2][k] * dc[2]
                }));
                let c = trace(center, dw, textured);
                for k in 0..3 {
                    acc[k] += 0.25 * c[k];
                }
            }
            out.extend(acc.map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8));
        }
    }
    out
}

/// The demo's cameras: a ring around the sphere at two heights.
pub fn demo_cameras(opts: &DemoOptions) -> Vec<Camera> {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    (0..opts.views)
        .map(|i| {
            let a = i as f64 / opts.views as f64 * std::f64::consts::TAU;
            let radius = 1.45 + rng.random_range(-0.1..0.1);
            let z = if i % 2 == 0 { 0.95 } else { 1.45 } + rng.random_range(-0.05..0.05);
            let eye = [radius * a.cos(), radius * a.sin(), z];
            let target = [
                rng.random_range(-0.15..0.15),
                rng.random_range(-0.15..0.15),
                0.6,
            ];
            Camera::look_at(eye, target, [0.0, 0.0, 1.0], 75.0, opts.width, opts.height)
        })
        .collect()
}

/// Surface samples with diffuse colour.
fn demo_points(opts: &DemoOptions) -> Points {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed ^ 0x9e37);
    let mut pts = Points::default();
    let sphere_share = opts.points / 5;
    for _ in 0..sphere_share {
        let z: f64 = rng.random_range(-1.0..1.0);
        let phi: f64 = rng.random_range(0.0..std::f64::consts::TAU);
        let r = (1.0 - z * z).sqrt();
        let n = [r * phi.cos(), r * phi.sin(), z];
        let p = add_scaled(SPHERE_C, n, SPHERE_R);
        let c = shade_diffuse(p, n, [0.25, 0.45, 0.85]);
        pts.positions.push(p);
        pts.colors
            .push(c.map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8));
    }
    // Room faces with probability proportional to area.
    let areas = [16.0, 16.0, 10.0, 10.0, 10.0, 10.0];
    let total: f64 = areas.iter().sum();
    while pts.positions.len() < opts.points {
        let mut pick = rng.random_range(0.0..total);
        let mut face = 0;
        while pick > areas[face] {
            pick -= areas[face];
            face += 1;
        }
        let (u, v) = (rng.random_range(-HALF..HALF), rng.random_range(0.0..1.0));
        let p = match face {
            0 => [u, rng.random_range(-HALF..HALF), 0.0],
            1 => [u, rng.random_range(-HALF..HALF), HEIGHT],
            2 => [-HALF, u, v * HEIGHT],
            3 => [HALF, u, v * HEIGHT],
            4 => [u, -HALF, v * HEIGHT],
            _ => [u, HALF, v * HEIGHT],
        };
        let (albedo, n) = room_surface(p);
        let c = shade_diffuse(p, n, albedo);
        pts.positions.push(p);
        pts.colors
            .push(c.map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8));
    }
    pts
}

/// Writes a COLMAP text model (`cameras.txt` with one PINHOLE camera, that of `cams[0]`, `images.txt`,
/// `points3D.txt`) of cameras sharing their intrinsics, `names[i]` the image of `cams[i]`.
pub fn write_pinhole_model(
    dir: &Path,
    cams: &[Camera],
    names: &[String],
    points: &Points,
) -> Result<(), DatasetError> {
    write_model(dir, cams, Distortion::None, names, points)
}

/// COLMAP image records of `cams` (ids from 1, camera 1), `names[i]` the image of `cams[i]`.
fn colmap_images(cams: &[Camera], names: &[String]) -> Vec<ColmapImage> {
    cams.iter()
        .zip(names)
        .enumerate()
        .map(|(i, (cam, name))| ColmapImage {
            id: i as u32 + 1,
            qvec: mat_to_quat(&cam.rotation),
            tvec: cam.translation,
            camera_id: 1,
            name: name.clone(),
        })
        .collect()
}

/// [`write_pinhole_model`], or with an OPENCV_FISHEYE camera for an equidistant `cams[0]` with the
/// fisheye `lens`.
fn write_model(
    dir: &Path,
    cams: &[Camera],
    lens: Distortion,
    names: &[String],
    points: &Points,
) -> Result<(), DatasetError> {
    let Some(c) = cams.first() else {
        return Err(DatasetError::invalid(
            dir,
            "a model needs at least one camera",
        ));
    };
    let (model, extra) = match (c.projection, lens) {
        (Projection::Equidistant, Distortion::Fisheye { k, .. }) => ("OPENCV_FISHEYE", k.to_vec()),
        (Projection::Equidistant, _) => ("OPENCV_FISHEYE", vec![0.0; 4]),
        (Projection::Pinhole, _) => ("PINHOLE", Vec::new()),
    };
    std::fs::create_dir_all(dir).map_err(|e| DatasetError::io(dir, e))?;
    let images = colmap_images(cams, names);
    let files = [
        (
            "cameras.txt",
            write::cameras_txt(&[(
                1,
                model,
                c.width as u64,
                c.height as u64,
                [vec![c.fx, c.fy, c.cx, c.cy], extra].concat(),
            )]),
        ),
        ("images.txt", write::images_txt(&images)),
        ("points3D.txt", write::points3d_txt(points)),
    ];
    for (name, text) in files {
        let p = dir.join(name);
        write_atomic(&p, text.as_bytes()).map_err(|e| DatasetError::io(&p, e))?;
    }
    Ok(())
}

/// Writes the demo capture as a COLMAP text dataset under `root` (`images/`, `sparse/0/*.txt`).
pub fn write_demo_dataset(root: &Path, opts: &DemoOptions) -> Result<(), DatasetError> {
    let images_dir = root.join("images");
    let model_dir = root.join("sparse").join("0");
    for d in [&images_dir, &model_dir] {
        std::fs::create_dir_all(d).map_err(|e| DatasetError::io(d, e))?;
    }
    let lens = lens(opts.variant);
    let mut cams = demo_cameras(opts);
    if opts.variant == DemoVariant::Fisheye {
        cams = cams.iter().map(fisheye_camera).collect();
    }
    let mut names = Vec::new();
    for (i, cam) in cams.iter().enumerate() {
        let name = format!("view_{i:03}.png");
        let mut rgb = render_view_with(cam, lens, false);
        if let Some(mask) = vary(opts.variant, opts.seed, i, &mut rgb, cam.width, cam.height) {
            write_mask(&root.join("masks").join(format!("{name}.png")), cam, mask)?;
        }
        let path = images_dir.join(&name);
        let png = crate::images::png_bytes(
            cam.width,
            cam.height,
            &rgb.iter().map(|&v| v as f32 / 255.0).collect::<Vec<_>>(),
        )
        .map_err(|e| DatasetError::invalid(&path, e.to_string()))?;
        write_atomic(&path, &png).map_err(|e| DatasetError::io(&path, e))?;
        names.push(name);
    }
    let model_cams = match opts.variant {
        DemoVariant::PerturbedPoses => {
            let path = root.join(TRUE_POSES_FILE);
            let text = write::images_txt(&colmap_images(&cams, &names));
            write_atomic(&path, text.as_bytes()).map_err(|e| DatasetError::io(&path, e))?;
            perturbed_poses(&cams, opts.seed)
        }
        _ => cams,
    };
    write_model(&model_dir, &model_cams, lens, &names, &demo_points(opts))?;
    Ok(())
}

/// Writes a mask (one byte per pixel) as a grey PNG, making its folder.
fn write_mask(path: &Path, cam: &Camera, mask: Vec<u8>) -> Result<(), DatasetError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| DatasetError::io(dir, e))?;
    }
    let img =
        image::GrayImage::from_raw(cam.width, cam.height, mask).expect("mask of the view's size");
    let mut png = std::io::Cursor::new(Vec::new());
    img.write_to(&mut png, image::ImageFormat::Png)
        .map_err(|e| DatasetError::invalid(path, e.to_string()))?;
    write_atomic(path, png.get_ref()).map_err(|e| DatasetError::io(path, e))
}

/// Size and number of the photo capture's views (the input of `splat prepare`'s tests).
#[derive(Clone, Copy, Debug)]
pub struct PhotoOptions {
    pub width: u32,
    pub height: u32,
    pub views: usize,
    /// JPEG quality, 1-100.
    pub quality: u8,
    pub seed: u64,
}

impl Default for PhotoOptions {
    fn default() -> Self {
        PhotoOptions {
            width: 320,
            height: 240,
            views: 40,
            quality: 92,
            seed: 11,
        }
    }
}

/// The demo room with texture on every surface, photographed from a ring of cameras, written as
/// `photo_000.jpg`, `photo_001.jpg`, ... into `dir` with no poses: what a user brings to
/// `splat prepare`. Returns the cameras the photos were taken with (the truth a pose estimate is
/// compared against), in file order.
pub fn write_demo_photos(dir: &Path, opts: &PhotoOptions) -> Result<Vec<Camera>, DatasetError> {
    use rayon::prelude::*;
    std::fs::create_dir_all(dir).map_err(|e| DatasetError::io(dir, e))?;
    let cams = demo_cameras(&DemoOptions {
        width: opts.width,
        height: opts.height,
        views: opts.views,
        points: 0,
        seed: opts.seed,
        variant: DemoVariant::Plain,
    });
    cams.par_iter().enumerate().try_for_each(|(i, cam)| {
        let rgb = render_view_with(cam, Distortion::None, true);
        let path = dir.join(format!("photo_{i:03}.jpg"));
        let mut jpg = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpg, opts.quality.clamp(1, 100))
            .encode(&rgb, cam.width, cam.height, image::ExtendedColorType::Rgb8)
            .map_err(|e| DatasetError::invalid(&path, e.to_string()))?;
        write_atomic(&path, &jpg).map_err(|e| DatasetError::io(&path, e))
    })?;
    Ok(cams)
}
