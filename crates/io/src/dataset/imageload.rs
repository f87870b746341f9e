//! Decoding, compositing, downscaling and undistorting the images of a dataset.

use std::path::Path;

use splat_core::lens::Distortion;

use super::DatasetError;

/// An 8-bit RGB image, row-major. Datasets keep images in this form (4x smaller than f32) and
/// training converts one view per step.
#[derive(Clone, Debug, PartialEq)]
pub struct Rgb8Image {
    pub width: u32,
    pub height: u32,
    pub data: Vec<u8>,
}

impl Rgb8Image {
    /// Values in [0, 1] into `out` (resized), row-major RGB.
    pub fn to_f32(&self, out: &mut Vec<f32>) {
        out.clear();
        out.extend(self.data.iter().map(|&v| v as f32 / 255.0));
    }

    fn sample_bilinear(&self, x: f64, y: f64) -> Option<[f64; 3]> {
        // x, y in continuous coordinates (pixel centres at +0.5).
        let (fx, fy) = (x - 0.5, y - 0.5);
        if fx < -0.5 || fy < -0.5 || fx > self.width as f64 - 0.5 || fy > self.height as f64 - 0.5 {
            return None;
        }
        let x0 = fx.floor().clamp(0.0, self.width as f64 - 1.0) as usize;
        let y0 = fy.floor().clamp(0.0, self.height as f64 - 1.0) as usize;
        let x1 = (x0 + 1).min(self.width as usize - 1);
        let y1 = (y0 + 1).min(self.height as usize - 1);
        let tx = (fx - x0 as f64).clamp(0.0, 1.0);
        let ty = (fy - y0 as f64).clamp(0.0, 1.0);
        let w = self.width as usize;
        let px = |xx: usize, yy: usize, c: usize| self.data[(yy * w + xx) * 3 + c] as f64;
        Some(std::array::from_fn(|c| {
            let top = px(x0, y0, c) * (1.0 - tx) + px(x1, y0, c) * tx;
            let bot = px(x0, y1, c) * (1.0 - tx) + px(x1, y1, c) * tx;
            top * (1.0 - ty) + bot * ty
        }))
    }
}

/// Decodes an image file; RGBA is composited over `background` (the NeRF-synthetic convention).
pub fn load_rgb(path: &Path, background: [f32; 3]) -> Result<Rgb8Image, DatasetError> {
    Ok(load_rgb_alpha(path, background)?.0)
}

/// [`load_rgb`] and, for an image with an alpha channel, the alpha per pixel.
pub fn load_rgb_alpha(
    path: &Path,
    background: [f32; 3],
) -> Result<(Rgb8Image, Option<Vec<u8>>), DatasetError> {
    let bytes = std::fs::read(path).map_err(|e| DatasetError::io(path, e))?;
    decode_rgb_alpha(&bytes, path, background)
}

/// Decodes image bytes (PNG, JPEG, ...; `path` names them in errors). The decoder's default limits
/// (512 MiB per allocation) bound what a lying header can make it allocate.
pub fn decode_rgb(
    bytes: &[u8],
    path: &Path,
    background: [f32; 3],
) -> Result<Rgb8Image, DatasetError> {
    Ok(decode_rgb_alpha(bytes, path, background)?.0)
}

/// [`decode_rgb`] and the alpha channel when the image has one.
pub fn decode_rgb_alpha(
    bytes: &[u8],
    path: &Path,
    background: [f32; 3],
) -> Result<(Rgb8Image, Option<Vec<u8>>), DatasetError> {
    let img = image::load_from_memory(bytes)
        .map_err(|e| DatasetError::invalid(path, format!("cannot decode image: {e}")))?;
    let (width, height) = (img.width(), img.height());
    if width == 0 || height == 0 {
        return Err(DatasetError::invalid(path, "image is empty"));
    }
    let (data, alpha) = if img.color().has_alpha() {
        let rgba = img.to_rgba8();
        let mut out = Vec::with_capacity(width as usize * height as usize * 3);
        let mut alpha = Vec::with_capacity(width as usize * height as usize);
        for p in rgba.pixels() {
            let a = p[3] as f32 / 255.0;
            for c in 0..3 {
                let v = p[c] as f32 / 255.0 * a + background[c] * (1.0 - a);
                out.push((v * 255.0).round().clamp(0.0, 255.0) as u8);
            }
            alpha.push(p[3]);
        }
        (out, Some(alpha))
    } else {
        (img.to_rgb8().into_raw(), None)
    };
    let image = Rgb8Image {
        width,
        height,
        data,
    };
    Ok((image, alpha))
}

/// Averages `factor x factor` blocks (the size is rounded down).
pub fn downscale(img: &Rgb8Image, factor: u32) -> Rgb8Image {
    if factor <= 1 {
        return img.clone();
    }
    let (w, h) = ((img.width / factor).max(1), (img.height / factor).max(1));
    let f = factor as usize;
    let mut data = Vec::with_capacity(w as usize * h as usize * 3);
    for y in 0..h as usize {
        for x in 0..w as usize {
            let mut acc = [0u32; 3];
            let mut n = 0;
            for yy in y * f..((y + 1) * f).min(img.height as usize) {
                for xx in x * f..((x + 1) * f).min(img.width as usize) {
                    let o = (yy * img.width as usize + xx) * 3;
                    for c in 0..3 {
                        acc[c] += img.data[o + c] as u32;
                    }
                    n += 1;
                }
            }
            for c in 0..3 {
                data.push(((acc[c] + n / 2) / n) as u8);
            }
        }
    }
    Rgb8Image {
        width: w,
        height: h,
        data,
    }
}

/// Pinhole intrinsics plus the lens's distortion at an image's resolution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Intrinsics {
    pub fx: f64,
    pub fy: f64,
    pub cx: f64,
    pub cy: f64,
    pub distortion: Distortion,
}

/// Where in the distorted photo output pixel `(x, y)` of the ideal camera comes from, and that pixel's
/// normalized coordinates in the ideal camera.
fn source_of(k: &Intrinsics, x: u32, y: u32) -> ([f64; 2], [f64; 2]) {
    let nx = (x as f64 + 0.5 - k.cx) / k.fx;
    let ny = (y as f64 + 0.5 - k.cy) / k.fy;
    let (dx, dy) = k.distortion.distort(nx, ny);
    ([dx * k.fx + k.cx, dy * k.fy + k.cy], [nx, ny])
}

/// Resamples a distorted image to the ideal camera with the same `fx, fy, cx, cy` and size (the pinhole;
/// the equidistant fisheye for a fisheye lens, whose pixels outside the photo [`fisheye_validity`] marks):
/// every output pixel is mapped through the distortion model and sampled bilinearly. Pixels whose source
/// falls outside the image take the nearest edge value; where the model is undefined, black.
pub fn undistort(img: &Rgb8Image, k: &Intrinsics) -> Rgb8Image {
    let mut data = Vec::with_capacity(img.data.len());
    for y in 0..img.height {
        for x in 0..img.width {
            let ([u, v], _) = source_of(k, x, y);
            if !(u.is_finite() && v.is_finite()) {
                // Where the model is undefined (a rational model's pole): black, left out of a mask.
                data.extend([0; 3]);
                continue;
            }
            let (uc, vc) = (
                u.clamp(0.5, img.width as f64 - 0.5),
                v.clamp(0.5, img.height as f64 - 0.5),
            );
            let p = img.sample_bilinear(uc, vc).expect("clamped inside");
            data.extend(p.map(|c| c.round().clamp(0.0, 255.0) as u8));
        }
    }
    Rgb8Image {
        width: img.width,
        height: img.height,
        data,
    }
}

/// Which pixels of the equidistant fisheye photo [`undistort`] makes from a fisheye photo hold some of
/// it (1) and which do not (0): the source lies outside the photo, or beyond the angle where the lens
/// model folds back (its distorted radius stops growing).
pub fn fisheye_validity(width: u32, height: u32, k: &Intrinsics) -> Vec<u8> {
    let mut keep = Vec::with_capacity(width as usize * height as usize);
    for y in 0..height {
        for x in 0..width {
            let ([u, v], [nx, ny]) = source_of(k, x, y);
            let inside = u >= 0.0 && u <= width as f64 && v >= 0.0 && v <= height as f64;
            let unfolded = k.distortion.radial_slope(nx.hypot(ny)) > 0.0;
            keep.push(u8::from(inside && unfolded));
        }
    }
    keep
}

/// Resizes to `width` (height keeps the aspect ratio, rounded down) with a Catmull-Rom filter.
pub fn resize_to_width(img: &Rgb8Image, width: u32) -> Rgb8Image {
    let height = ((img.height as u64 * width as u64) / img.width as u64).max(1) as u32;
    resize(img, width, height, image::imageops::FilterType::CatmullRom)
}

/// Resizes to `width x height` with `filter`.
pub fn resize(
    img: &Rgb8Image,
    width: u32,
    height: u32,
    filter: image::imageops::FilterType,
) -> Rgb8Image {
    let buf: image::RgbImage =
        image::ImageBuffer::from_raw(img.width, img.height, img.data.clone())
            .expect("consistent size");
    let out = image::imageops::resize(&buf, width, height, filter);
    Rgb8Image {
        width,
        height,
        data: out.into_raw(),
    }
}
