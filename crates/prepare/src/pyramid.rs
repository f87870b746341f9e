//! `images_2`, `images_4`, `images_8`: the images at 1/2, 1/4 and 1/8 size (box filter: each output
//! pixel the mean of its factor x factor block), under the same names and in the same format (JPEG
//! at quality 95, or PNG), as the original 3DGS scripts write them. `splat train --images images_4`
//! scales the COLMAP intrinsics to the size it finds.

use std::path::Path;

use rayon::prelude::*;
use splat_io::dataset::imageload::{downscale, load_rgb};

use crate::PrepareError;

/// The factors written.
pub const FACTORS: [u32; 3] = [2, 4, 8];

/// Writes `root/images_F/NAME` for every name and factor.
pub fn write_pyramid(root: &Path, names: &[String]) -> Result<(), PrepareError> {
    for f in FACTORS {
        let dir = root.join(format!("images_{f}"));
        std::fs::create_dir_all(&dir).map_err(|e| PrepareError::io(&dir, e))?;
    }
    names.par_iter().try_for_each(|name| {
        let src = root.join("images").join(name);
        let full = load_rgb(&src, [0.0; 3])?;
        for f in FACTORS {
            let small = downscale(&full, f);
            let dst = root.join(format!("images_{f}")).join(name);
            let bytes = encode_like(&dst, small.width, small.height, &small.data)?;
            splat_io::write_atomic(&dst, &bytes).map_err(|e| PrepareError::io(&dst, e))?;
        }
        Ok(())
    })
}

/// The image encoded as its file name says (JPEG for .jpg/.jpeg, else PNG).
fn encode_like(path: &Path, w: u32, h: u32, rgb: &[u8]) -> Result<Vec<u8>, PrepareError> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let mut out = Vec::new();
    let result = if ext == "jpg" || ext == "jpeg" {
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 95).encode(
            rgb,
            w,
            h,
            image::ExtendedColorType::Rgb8,
        )
    } else {
        use image::ImageEncoder;
        image::codecs::png::PngEncoder::new(&mut out).write_image(
            rgb,
            w,
            h,
            image::ExtendedColorType::Rgb8,
        )
    };
    result.map_err(|e| PrepareError::io(path, std::io::Error::other(e)))?;
    Ok(out)
}
