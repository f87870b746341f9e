//! The refined poses of a `--pose-opt` run, written beside the scene: `cameras.json` (the original
//! 3DGS repository's layout: per view `id`, `img_name`, `width`, `height`, `position` (the centre),
//! `rotation` (camera-to-world, rows), `fx`, `fy`; plus `split` and `refined`) and a COLMAP
//! `images.txt` (world-to-camera quaternion and translation per image name, every camera id 1) that
//! `--poses` reads back (`splat train`, `splat view --data`). Test views keep their given poses.

use std::path::Path;

use serde::Serialize;
use splat_core::math::{mat_to_quat, transpose};
use splat_core::Camera;
use splat_io::dataset::colmap::{write::images_txt, ColmapImage};
use splat_io::dataset::View;
use splat_io::write_atomic;

use super::files::{io_err, write_json};
use super::RunError;

/// The COLMAP file of the refined poses.
pub const POSES_FILE: &str = "images.txt";
/// The JSON file of the refined cameras.
pub const CAMERAS_FILE: &str = "cameras.json";

#[derive(Serialize)]
struct CameraEntry<'a> {
    id: usize,
    img_name: &'a str,
    width: u32,
    height: u32,
    position: [f64; 3],
    rotation: [[f64; 3]; 3],
    fx: f64,
    fy: f64,
    split: &'static str,
    refined: bool,
}

/// Writes both files into `dir`: the training views with `refined` cameras, then the test views.
pub(super) fn write_poses(
    dir: &Path,
    train: &[View],
    refined: &[Camera],
    test: &[View],
) -> Result<(), RunError> {
    let views: Vec<(&View, &Camera, &'static str)> = train
        .iter()
        .zip(refined)
        .map(|(v, c)| (v, c, "train"))
        .chain(test.iter().map(|v| (v, &v.camera, "test")))
        .collect();
    let entries: Vec<CameraEntry> = views
        .iter()
        .enumerate()
        .map(|(id, (v, c, split))| CameraEntry {
            id,
            img_name: &v.name,
            width: c.width,
            height: c.height,
            position: c.center(),
            rotation: transpose(&c.rotation),
            fx: c.fx,
            fy: c.fy,
            split,
            refined: *split == "train",
        })
        .collect();
    write_json(&dir.join(CAMERAS_FILE), &entries)?;
    let images: Vec<ColmapImage> = views
        .iter()
        .enumerate()
        .map(|(k, (v, c, _))| ColmapImage {
            id: k as u32 + 1,
            qvec: mat_to_quat(&c.rotation),
            tvec: c.translation,
            camera_id: 1,
            name: v.name.clone(),
        })
        .collect();
    let path = dir.join(POSES_FILE);
    write_atomic(&path, images_txt(&images).as_bytes()).map_err(io_err(&path))
}
