//! Scene files as the commands take and write them: a scene argument in any format splat reads (or a
//! training output folder), the bytes a written scene takes, and `splat train --export`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use splat_core::Gaussians;
use splat_io::formats::{read_scene, write_scene, SceneFormat, WriteOptions};

/// The file a scene argument names: a training output folder's `point_cloud.ply`, else the path
/// itself (a file in any format, or a SOG folder).
pub fn scene_file(arg: &Path) -> PathBuf {
    let ply = arg.join("point_cloud.ply");
    if arg.is_dir() && ply.is_file() {
        ply
    } else {
        arg.to_path_buf()
    }
}

/// Reads a scene argument in any format.
pub fn load_scene(arg: &Path) -> Result<Gaussians<f32>> {
    Ok(read_scene(&scene_file(arg))?)
}

/// Bytes on disk of a written scene (all files of a SOG folder).
pub fn written_bytes(path: &Path, format: SceneFormat) -> Result<u64> {
    let meta = |p: &Path| std::fs::metadata(p).with_context(|| format!("{}", p.display()));
    if format != SceneFormat::SogFolder {
        return Ok(meta(path)?.len());
    }
    let dir = if path.is_dir() {
        path
    } else {
        path.parent().unwrap_or(Path::new("."))
    };
    let mut total = 0;
    for e in std::fs::read_dir(dir).with_context(|| format!("{}", dir.display()))? {
        let e = e?;
        let name = e.file_name().to_string_lossy().to_string();
        if name == "meta.json" || name.ends_with(".webp") {
            total += e.metadata()?.len();
        }
    }
    Ok(total)
}

/// `train --export`: each format written beside `point_cloud.ply` in the run folder.
pub fn export_run(dir: &Path, formats: &[SceneFormat]) -> Result<()> {
    if formats.is_empty() {
        return Ok(());
    }
    let g = splat_io::read_ply(&dir.join("point_cloud.ply"))?;
    for &f in formats {
        if f == SceneFormat::Ply {
            continue;
        }
        let path = dir.join(f.export_name());
        write_scene(&path, &g, f, &WriteOptions::default())?;
        println!(
            "exported {} ({} bytes)",
            path.display(),
            written_bytes(&path, f)?
        );
    }
    Ok(())
}
