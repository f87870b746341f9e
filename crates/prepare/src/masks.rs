//! Masks brought with the photos: a `masks/` folder in the input folder (beside the photos, or beside
//! their `images/`) is passed on. Each photo's mask, named as the loader finds it
//! (`splat_io::dataset::masks`), is written to `DATASET/masks/NAME.png` as a grey PNG (COLMAP's name
//! for the mask of `images/NAME`), which COLMAP's feature extraction reads (`ImageReader.mask_path`: no
//! features where the mask is black, so a passer-by does not pull the poses) and `splat train` then
//! uses. Masks are taken as they are (white keeps); a mask of another size than its photo is an error.

use std::path::{Path, PathBuf};

use splat_io::dataset::masks::{candidates, load_mask};

use crate::{Event, PrepareError};

/// The input's mask folder: `INPUT/masks`, or `masks` beside the photo folder.
pub fn find_input_masks(input: &Path, photos: &Path) -> Option<PathBuf> {
    let beside = photos.parent().map(|p| p.join("masks"));
    [Some(input.join("masks")), beside]
        .into_iter()
        .flatten()
        .find(|d| d.is_dir())
}

/// Writes the mask of each photo found in `from` to `to/NAME.png`; returns `to` when any was found.
/// A folder that is already `to` (photos prepared in place) is read before anything is written.
pub fn copy_masks(
    from: &Path,
    to: &Path,
    images: &Path,
    names: &[String],
    events: &mut dyn FnMut(Event),
) -> Result<Option<PathBuf>, PrepareError> {
    let mut found = Vec::new();
    for name in names {
        if let Some(path) = candidates(from, name).into_iter().find(|p| p.is_file()) {
            let mask = load_mask(&path, false)?;
            let size =
                image::image_dimensions(images.join(name)).map_err(|e| PrepareError::BadInput {
                    path: images.join(name),
                    message: format!("cannot read image header: {e}"),
                })?;
            if (mask.width, mask.height) != size {
                return Err(PrepareError::BadInput {
                    path,
                    message: format!(
                        "mask is {} x {} but its photo is {} x {}",
                        mask.width, mask.height, size.0, size.1
                    ),
                });
            }
            found.push((name, mask));
        }
    }
    if found.is_empty() {
        events(Event::Note {
            message: format!(
                "{}: no mask for any photo (expected NAME.png, e.g. {}.png); not used",
                from.display(),
                names.first().map_or("photo.jpg", |n| n.as_str())
            ),
        });
        return Ok(None);
    }
    std::fs::create_dir_all(to).map_err(|e| PrepareError::io(to, e))?;
    for (name, mask) in &found {
        let dst = to.join(format!("{name}.png"));
        let grey: Vec<u8> = mask.keep.iter().map(|&k| k * 255).collect();
        let img = image::GrayImage::from_raw(mask.width, mask.height, grey).expect("mask size");
        let mut png = std::io::Cursor::new(Vec::new());
        img.write_to(&mut png, image::ImageFormat::Png)
            .map_err(|e| PrepareError::BadInput {
                path: dst.clone(),
                message: e.to_string(),
            })?;
        splat_io::write_atomic(&dst, png.get_ref()).map_err(|e| PrepareError::io(&dst, e))?;
    }
    events(Event::Note {
        message: format!(
            "masks for {} of {} photos in {} (COLMAP extracts no features where they are black)",
            found.len(),
            names.len(),
            to.display()
        ),
    });
    Ok(Some(to.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_are_renamed_to_colmaps_convention_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let (photos, from, to) = (
            dir.path().join("p"),
            dir.path().join("m"),
            dir.path().join("o"),
        );
        for d in [&photos, &from] {
            std::fs::create_dir_all(d).unwrap();
        }
        image::RgbImage::new(8, 6)
            .save(photos.join("a.jpg"))
            .unwrap();
        image::RgbImage::new(8, 6)
            .save(photos.join("b.jpg"))
            .unwrap();
        let mut m = image::GrayImage::new(8, 6);
        m.put_pixel(1, 1, image::Luma([255]));
        m.save(from.join("a.png")).unwrap();
        let names = vec!["a.jpg".to_string(), "b.jpg".to_string()];
        let mut notes = Vec::new();
        let got = copy_masks(&from, &to, &photos, &names, &mut |e| {
            notes.push(format!("{e:?}"))
        })
        .unwrap();
        assert_eq!(got.as_deref(), Some(to.as_path()));
        let back = load_mask(&to.join("a.jpg.png"), false).unwrap();
        assert_eq!(back.kept(), 1);
        assert!(!to.join("b.jpg.png").exists());
        assert!(notes[0].contains("masks for 1 of 2 photos"), "{notes:?}");
        // Another size is an error naming the mask.
        image::GrayImage::new(4, 3)
            .save(from.join("b.jpg.png"))
            .unwrap();
        let err = copy_masks(&from, &to, &photos, &names, &mut |_| {}).unwrap_err();
        assert!(
            err.to_string()
                .contains("b.jpg.png: mask is 4 x 3 but its photo is 8 x 6"),
            "{err}"
        );
    }
}
