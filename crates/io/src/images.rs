//! Image output.

use std::path::Path;

use image::{ImageBuffer, ImageFormat, Rgb};

use crate::atomic::write_atomic;

/// Errors writing an image.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: cannot encode: {source}")]
    Encode {
        path: String,
        source: image::ImageError,
    },
    #[error("image of {width} x {height} needs {expected} values, got {got}")]
    Size {
        width: u32,
        height: u32,
        expected: usize,
        got: usize,
    },
}

/// Converts a row-major RGB float image to 8-bit, clamping to [0, 1] and rounding.
pub fn to_rgb8(width: u32, height: u32, rgb: &[f32]) -> Result<Vec<u8>, ImageError> {
    let expected = width as usize * height as usize * 3;
    if rgb.len() != expected {
        return Err(ImageError::Size {
            width,
            height,
            expected,
            got: rgb.len(),
        });
    }
    Ok(rgb
        .iter()
        .map(|&v| (v.clamp(0.0, 1.0) * 255.0).round() as u8)
        .collect())
}

/// Encodes a row-major RGB float image as PNG bytes.
pub fn png_bytes(width: u32, height: u32, rgb: &[f32]) -> Result<Vec<u8>, ImageError> {
    let data = to_rgb8(width, height, rgb)?;
    let buf: ImageBuffer<Rgb<u8>, Vec<u8>> =
        ImageBuffer::from_raw(width, height, data).expect("size checked above");
    let mut out = std::io::Cursor::new(Vec::new());
    buf.write_to(&mut out, ImageFormat::Png)
        .map_err(|source| ImageError::Encode {
            path: "<memory>".into(),
            source,
        })?;
    Ok(out.into_inner())
}

/// Writes a row-major RGB float image as a PNG file (atomically).
pub fn save_png(path: &Path, width: u32, height: u32, rgb: &[f32]) -> Result<(), ImageError> {
    let bytes = png_bytes(width, height, rgb).map_err(|e| match e {
        ImageError::Encode { source, .. } => ImageError::Encode {
            path: path.display().to_string(),
            source,
        },
        other => other,
    })?;
    write_atomic(path, &bytes).map_err(|source| ImageError::Io {
        path: path.display().to_string(),
        source,
    })
}
