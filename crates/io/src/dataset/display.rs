//! Dataset photos at a display size, for the viewer's camera panel (`splat view --data`).
//!
//! The viewer shows each dataset camera's photo beside the render. Loaded as for training, a phone
//! capture's 149 frames are decoded, resized and undistorted at full size and then encoded again,
//! every time the viewer starts (8 s for 720 x 1280 frames on 2 cores). Here a view's camera comes
//! from the image header alone (its size is all the camera needs), and its photo, made by the same
//! decoding, resizing and undistortion as training's and then brought to a long edge of at most
//! [`DisplayPhotos::long_edge`], is kept as a JPEG in a cache folder. The cache file is named by a
//! hash of everything that changes the picture: the image file (path, length, modification time),
//! its camera's intrinsics and lens, `--downscale`, the background, the long edge and
//! [`CACHE_VERSION`]. A later start decodes only the small JPEGs. Masks are not loaded (the panel
//! does not show them). A cache that cannot be written is not an error: the photos are made again.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::imageload::{self, Rgb8Image};
use super::{gather_views, DatasetError, LoadOptions, PendingView, View};

/// Bumped when the making of a display photo changes, so that old cache files are not used.
pub const CACHE_VERSION: u32 = 1;

/// The viewer's long edge for dataset photos (the panel is rarely wider).
pub const DISPLAY_LONG_EDGE: u32 = 1024;

/// Load photos at a display size instead of the training size ([`LoadOptions::display`]).
#[derive(Clone, Debug, PartialEq)]
pub struct DisplayPhotos {
    /// The longest side of a photo, in pixels; smaller photos keep their size.
    pub long_edge: u32,
    /// Where the display photos are kept between runs; `None` makes them every time.
    pub cache_dir: Option<PathBuf>,
}

/// A view loaded for display, and whether its photo came from the cache.
struct Loaded {
    view: View,
    cached: bool,
}

/// Loads the pending views for display: cameras at the training size, photos at most `long_edge`.
pub(crate) fn load_views(
    pending: Vec<PendingView>,
    opts: &LoadOptions,
    background: [f32; 3],
    display: &DisplayPhotos,
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<Vec<View>, DatasetError> {
    let total = pending.len();
    let results: Vec<Result<Loaded, DatasetError>> = pending
        .into_par_iter()
        .map(|p| load_view(p, opts, background, display))
        .collect();
    let cached = results
        .iter()
        .filter(|r| r.as_ref().is_ok_and(|l| l.cached))
        .count();
    let views = gather_views(
        results.into_iter().map(|r| r.map(|l| l.view)),
        opts,
        warnings,
    )?;
    if let Some(dir) = &display.cache_dir {
        notes.push(format!(
            "photos at a long edge of {} px: {cached} of {total} from the cache in {}",
            display.long_edge,
            dir.display()
        ));
    }
    Ok(views)
}

fn load_view(
    mut p: PendingView,
    opts: &LoadOptions,
    background: [f32; 3],
    display: &DisplayPhotos,
) -> Result<Loaded, DatasetError> {
    let cache = display
        .cache_dir
        .as_ref()
        .and_then(|dir| cache_file(dir, &p, opts, background, display.long_edge));
    if let Some(path) = &cache {
        if let Some(view) = cached_view(&p, path, opts, background) {
            return Ok(Loaded { view, cached: true });
        }
    }
    p.mask = None;
    let view_path = p.path.clone();
    let mut opts = opts.clone();
    opts.masks.alpha = super::AlphaMode::Background;
    let mut view = super::load_view(p, &opts, background)?;
    view.mask = None;
    view.image = shrink(&view.image, display.long_edge);
    let jpeg = encode_jpeg(&view.image)
        .map_err(|e| DatasetError::invalid(&view_path, format!("cannot encode its photo: {e}")))?;
    if let Some(path) = &cache {
        // The cache only saves time: a folder that cannot be written leaves the photo as made.
        let _ = write_cache_file(path, &jpeg);
    }
    view.display_jpeg = Some(jpeg);
    Ok(Loaded {
        view,
        cached: false,
    })
}

/// The view with its camera from the image header and its photo from the cache, when the cache
/// file decodes; `None` sends the caller to the full load (which also reports any error).
fn cached_view(
    p: &PendingView,
    cache: &Path,
    opts: &LoadOptions,
    background: [f32; 3],
) -> Option<View> {
    let bytes = std::fs::read(cache).ok()?;
    let image = imageload::decode_rgb(&bytes, cache, background).ok()?;
    let raw = image::image_dimensions(&p.path).ok()?;
    let size = super::decoded_size(raw.0, raw.1, opts.downscale);
    let (_, camera) = super::view_camera(p, raw, size).ok()?;
    Some(View {
        name: p.name.clone(),
        camera,
        image,
        mask: None,
        display_jpeg: Some(bytes),
    })
}

/// Writes a cache file through a temporary file renamed over it, so that a reader never sees half
/// of one; not synced (a cache file lost in a crash is made again).
fn write_cache_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// Brings an image to a long edge of at most `long_edge`, aspect kept (a triangle filter: the
/// panel's photo need not be training's Catmull-Rom, and it is 3x faster).
pub fn shrink(img: &Rgb8Image, long_edge: u32) -> Rgb8Image {
    let long = img.width.max(img.height);
    if long <= long_edge.max(1) {
        return img.clone();
    }
    let scale = |v: u32| (v as u64 * long_edge as u64 / long as u64).max(1) as u32;
    let (width, height) = (scale(img.width), scale(img.height));
    imageload::resize(img, width, height, image::imageops::FilterType::Triangle)
}

/// JPEG at quality 90 (what the viewer sends).
pub fn encode_jpeg(img: &Rgb8Image) -> Result<Vec<u8>, image::ImageError> {
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90).encode(
        &img.data,
        img.width,
        img.height,
        image::ExtendedColorType::Rgb8,
    )?;
    Ok(jpeg)
}

/// The cache file of a view's display photo, or `None` when its image cannot be looked at.
fn cache_file(
    dir: &Path,
    p: &PendingView,
    opts: &LoadOptions,
    background: [f32; 3],
    long_edge: u32,
) -> Option<PathBuf> {
    let path = std::fs::canonicalize(&p.path).ok()?;
    let meta = std::fs::metadata(&path).ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    CACHE_VERSION.hash(&mut h);
    path.hash(&mut h);
    meta.len().hash(&mut h);
    modified.as_nanos().hash(&mut h);
    opts.downscale.hash(&mut h);
    long_edge.hash(&mut h);
    let k = &p.intrinsics;
    let numbers = [k.fx, k.fy, k.cx, k.cy, p.ref_size.0, p.ref_size.1];
    numbers.map(f64::to_bits).hash(&mut h);
    background.map(f32::to_bits).hash(&mut h);
    format!("{:?}", k.distortion).hash(&mut h);
    let stem = path.file_stem()?.to_string_lossy();
    let stem: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(40)
        .collect();
    Some(dir.join(format!("{stem}-{:016x}.jpg", h.finish())))
}
