//! Masks: the pixels of a photo that training and the metrics leave out (people walking by, the rig, a
//! turntable, the sky).
//!
//! Where they come from, in this order:
//! - `--masks DIR` names the folder; otherwise `masks/` beside the image folder (COLMAP's convention);
//!   in either folder the mask of image `NAME` is the first of `NAME.png` (COLMAP:
//!   `masks/abc/012.jpg.png` for `images/abc/012.jpg`), `NAME` itself, or `NAME` with its extension
//!   replaced by `.png`; the file name alone is tried the same way;
//! - nerfstudio's per-frame `mask_path` in `transforms.json` (relative to the file);
//! - with `--alpha-mode mask`, an RGBA photo's alpha.
//!
//! A mask is one channel at the photo's size; white (>= 128) keeps a pixel, black leaves it out;
//! `--invert-masks` swaps them. A mask goes through what its photo goes through (downscaling, resizing,
//! undistortion); a pixel of the result is kept only where every source pixel it mixes was kept, so
//! a mask's edge never lets a left-out pixel's colour in.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::imageload::Rgb8Image;
use super::DatasetError;

/// What an RGBA photo's alpha means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AlphaMode {
    /// Composited over the background, and trained against (the NeRF-synthetic convention).
    #[default]
    Background,
    /// A mask: pixels with alpha under one half are left out.
    Mask,
}

/// How masks are found and read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MaskOptions {
    /// The mask folder (`--masks DIR`); default `masks/` beside the images, when it exists.
    pub dir: Option<PathBuf>,
    /// Read no masks (`--no-masks`).
    pub ignore: bool,
    /// Black keeps and white leaves out (`--invert-masks`).
    pub invert: bool,
    pub alpha: AlphaMode,
}

/// Which pixels of a view count: `keep[y * width + x]` is 1 (kept) or 0 (left out).
#[derive(Clone, Debug, PartialEq)]
pub struct Mask {
    pub width: u32,
    pub height: u32,
    pub keep: Vec<u8>,
}

/// Value of a kept pixel in a mask carried as a grey image.
const WHITE: u8 = 255;
/// After resampling, a pixel is kept only at this value or above (all its sources kept, up to rounding).
const KEPT_AFTER_RESAMPLING: u8 = 250;

impl Mask {
    /// A mask from its per-pixel keep flags (non-zero keeps).
    pub fn from_keep(width: u32, height: u32, keep: Vec<u8>) -> Mask {
        Mask {
            width,
            height,
            keep,
        }
    }

    /// Pixels kept.
    pub fn kept(&self) -> usize {
        self.keep.iter().filter(|&&k| k != 0).count()
    }

    /// The mask as a grey image in three channels (255 kept), so that the photo's own resampling
    /// functions apply to it.
    pub fn to_grey(&self) -> Rgb8Image {
        Rgb8Image {
            width: self.width,
            height: self.height,
            data: self
                .keep
                .iter()
                .flat_map(|&k| [if k != 0 { WHITE } else { 0 }; 3])
                .collect(),
        }
    }

    /// A resampled grey image back to a mask: kept only where nothing left out was mixed in.
    pub fn from_grey(img: &Rgb8Image) -> Mask {
        Mask {
            width: img.width,
            height: img.height,
            keep: img
                .data
                .chunks_exact(3)
                .map(|p| u8::from(p[0] >= KEPT_AFTER_RESAMPLING))
                .collect(),
        }
    }

    /// Resampled as its photo was by `f` (downscaling, resizing, undistortion).
    pub fn resampled(&self, f: impl FnOnce(&Rgb8Image) -> Rgb8Image) -> Mask {
        Mask::from_grey(&f(&self.to_grey()))
    }

    /// From a grey level per pixel (`>= 128` keeps), inverted on request.
    pub fn from_levels(width: u32, height: u32, levels: &[u8], invert: bool) -> Mask {
        Mask {
            width,
            height,
            keep: levels
                .iter()
                .map(|&v| u8::from((v >= 128) != invert))
                .collect(),
        }
    }

    /// The per-pixel weights training and the metrics use (1 kept, 0 left out) into `out`.
    pub fn weights(&self, out: &mut Vec<f32>) {
        out.clear();
        out.extend(self.keep.iter().map(|&k| if k != 0 { 1.0 } else { 0.0 }));
    }
}

/// The pixels both masks keep (`a` absent keeps every pixel); the two are of one size.
pub fn keep_both(a: Option<Mask>, b: Mask) -> Mask {
    match a {
        None => b,
        Some(a) => {
            let keep = a
                .keep
                .iter()
                .zip(&b.keep)
                .map(|(&x, &y)| u8::from(x != 0 && y != 0));
            Mask::from_keep(b.width, b.height, keep.collect())
        }
    }
}

/// Reads a mask file (any image format; colour is reduced to its luminance, alpha ignored).
pub fn load_mask(path: &Path, invert: bool) -> Result<Mask, DatasetError> {
    let bytes = std::fs::read(path).map_err(|e| DatasetError::io(path, e))?;
    let img = image::load_from_memory(&bytes)
        .map_err(|e| DatasetError::invalid(path, format!("cannot decode mask: {e}")))?;
    let grey = img.to_luma8();
    if grey.width() == 0 || grey.height() == 0 {
        return Err(DatasetError::invalid(path, "mask is empty"));
    }
    Ok(Mask::from_levels(
        grey.width(),
        grey.height(),
        grey.as_raw(),
        invert,
    ))
}

/// A mask at a whole multiple of its image's size (the full-size mask of `images_4/NAME`, say) brought
/// to the image's size the way the image was (blocks averaged, the size rounded down); others as they are.
pub fn to_image_size(m: Mask, width: u32, height: u32) -> Mask {
    if (m.width, m.height) == (width, height) || width == 0 || height == 0 {
        return m;
    }
    let f = m.width / width;
    if f >= 2 && m.width / f == width && m.height / f == height {
        m.resampled(|g| super::imageload::downscale(g, f))
    } else {
        m
    }
}

/// The files that may hold the mask of image `name` in `dir`, in the order they are tried.
pub fn candidates(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut names = vec![name.to_string()];
    if let Some(file) = Path::new(name).file_name() {
        let file = file.to_string_lossy().to_string();
        if file != name {
            names.push(file);
        }
    }
    let mut out = Vec::new();
    for n in names {
        out.push(dir.join(format!("{n}.png")));
        out.push(dir.join(&n));
        let stem = Path::new(&n).with_extension("png");
        out.push(dir.join(stem));
    }
    out.dedup();
    out
}

/// The folder masks are read from: `--masks DIR`, else `root/masks` when it is a folder; none with
/// `--no-masks`. An explicit folder that does not exist is an error.
pub fn mask_dir(root: &Path, opts: &MaskOptions) -> Result<Option<PathBuf>, DatasetError> {
    if opts.ignore {
        return Ok(None);
    }
    match &opts.dir {
        Some(d) if d.is_dir() => Ok(Some(d.clone())),
        Some(d) => Err(DatasetError::invalid(d, "--masks: not a folder")),
        None => {
            let d = root.join("masks");
            Ok(d.is_dir().then_some(d))
        }
    }
}

/// Finds the mask of each image named in `names` whose mask is not set yet (`found[i]` is `None`).
/// Returns a note on how many were found, and an error when a folder named with `--masks` holds
/// none of them.
pub fn find_masks(
    dir: &Path,
    names: &[&str],
    found: &mut [Option<PathBuf>],
    explicit: bool,
) -> Result<Option<String>, DatasetError> {
    for (name, slot) in names.iter().zip(found.iter_mut()) {
        if slot.is_none() {
            *slot = candidates(dir, name).into_iter().find(|p| p.is_file());
        }
    }
    let with = found.iter().filter(|f| f.is_some()).count();
    if with == 0 {
        let first = names.first().copied().unwrap_or("NAME");
        let message = format!(
            "holds no mask for any of the {} images (expected e.g. {})",
            names.len(),
            dir.join(format!("{first}.png")).display()
        );
        return if explicit {
            Err(DatasetError::invalid(dir, format!("--masks: {message}")))
        } else {
            Ok(Some(format!(
                "{}: {message}; training on every pixel",
                dir.display()
            )))
        };
    }
    Ok(Some(masks_note(dir, with, names.len())))
}

fn masks_note(dir: &Path, with: usize, of: usize) -> String {
    if with == of {
        format!("masks from {} for all {of} images", dir.display())
    } else {
        format!(
            "masks from {} for {with} of {of} images; the {} without one train on every pixel",
            dir.display(),
            of - with
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_follow_colmap_then_plain_names() {
        let c = candidates(Path::new("/m"), "abc/012.jpg");
        let want = [
            "/m/abc/012.jpg.png",
            "/m/abc/012.jpg",
            "/m/abc/012.png",
            "/m/012.jpg.png",
            "/m/012.jpg",
            "/m/012.png",
        ];
        assert_eq!(c, want.map(PathBuf::from));
    }

    #[test]
    fn resampling_keeps_only_wholly_kept_pixels() {
        // 4 x 2, the third column left out.
        let m = Mask::from_levels(4, 2, &[255, 255, 0, 255, 255, 255, 0, 255], false);
        let half = m.resampled(|g| super::super::imageload::downscale(g, 2));
        assert_eq!((half.width, half.height), (2, 1));
        assert_eq!(half.keep, vec![1, 0]);
        let inv = Mask::from_levels(2, 1, &[200, 10], true);
        assert_eq!(inv.keep, vec![0, 1]);
        assert_eq!(inv.kept(), 1);
    }
}
