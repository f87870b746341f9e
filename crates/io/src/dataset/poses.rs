//! `--poses FILE`: camera poses from a COLMAP `images.txt` (such as the refined poses `splat train
//! --pose-opt` writes beside its scene) in place of the dataset's own, matched by image name. The file
//! is in the frame the dataset loads into (COLMAP's convention: world-to-camera quaternion and
//! translation), so poses written from one load of a dataset read back into the next; intrinsics and
//! images stay the dataset's.

use std::collections::HashMap;
use std::path::Path;

use super::colmap::{qvec_to_rotation, read_images_txt};
use super::{Dataset, DatasetError};

/// Replaces the pose of every view of `ds` that `path` names; a note says how many. An error when the
/// file cannot be read or names none of the dataset's images.
pub fn apply_poses(ds: &mut Dataset, path: &Path) -> Result<(), DatasetError> {
    let images = read_images_txt(path)?;
    let by_name: HashMap<&str, _> = images.iter().map(|im| (im.name.as_str(), im)).collect();
    let total = ds.train.len() + ds.test.len();
    let mut replaced = 0;
    for v in ds.train.iter_mut().chain(ds.test.iter_mut()) {
        if let Some(im) = by_name.get(v.name.as_str()) {
            v.camera.rotation = qvec_to_rotation(im.qvec);
            v.camera.translation = im.tvec;
            replaced += 1;
        }
    }
    if replaced == 0 {
        return Err(DatasetError::invalid(
            path,
            format!(
                "none of its {} images names one of the dataset's {total} (poses are matched by image name)",
                images.len()
            ),
        ));
    }
    let others = if replaced < total {
        "; the others keep the dataset's"
    } else {
        ""
    };
    ds.notes.push(format!(
        "poses of {replaced} of {total} images from {}{others}",
        path.display()
    ));
    Ok(())
}
