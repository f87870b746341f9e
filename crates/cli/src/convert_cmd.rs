//! `splat convert` and the scene formats every command accepts: the INRIA PLY, compressed PLY,
//! `.splat`, SPZ, SOG (zip or folder) and glTF / GLB. Reading detects the format from the file's
//! first bytes (from its name for `.splat`); writing takes it from the output's name.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use splat_core::Gaussians;
use splat_io::formats::{output_format, read_scene, write_scene, SceneFormat, WriteOptions};

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

/// Parses a format name for `--export`.
pub fn parse_format(s: &str) -> Result<SceneFormat, String> {
    SceneFormat::from_name(s).ok_or_else(|| {
        format!(
            "unknown format {s:?}; one of: {}",
            SceneFormat::ALL.map(|f| f.name()).join(", ")
        )
    })
}

/// Parses `--spz-version`.
pub fn parse_spz_version(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(v @ 2..=4) => Ok(v),
        _ => Err(format!("{s:?}: SPZ versions 2, 3 or 4 are written")),
    }
}

#[derive(Args)]
pub struct ConvertArgs {
    /// Scene to read: .ply, .compressed.ply, .splat, .spz (v1-4), .sog, a SOG folder or its
    /// meta.json, .glb or .gltf (the format is detected from the content), or a training output
    /// folder (its point_cloud.ply).
    pub input: PathBuf,
    /// File to write; the format comes from its name: .ply (INRIA, lossless), .compressed.ply,
    /// .splat (no SH above degree 0), .spz, .sog, meta.json (a SOG folder), .glb or .gltf.
    pub output: PathBuf,
    /// Keep SH up to this degree (0..3; a higher degree than the input's adds zeros).
    #[arg(long)]
    pub sh_degree: Option<usize>,
    /// SPZ version to write: 3 (default: what browsers read) or 4 (zstd streams), or 2.
    #[arg(long, default_value = "3", value_parser = parse_spz_version)]
    pub spz_version: u32,
    /// Lloyd iterations of the SOG SH palette.
    #[arg(long, default_value_t = 10)]
    pub sog_iterations: usize,
}

pub fn convert(args: ConvertArgs) -> Result<()> {
    let format = output_format(&args.output)?;
    let t = Instant::now();
    let mut g = load_scene(&args.input)?;
    let read_s = t.elapsed().as_secs_f64();
    if let Some(d) = args.sh_degree {
        if d > 3 {
            bail!("--sh-degree {d}: SH degrees 0 to 3");
        }
        g = g.with_sh_degree(d);
    }
    if format == SceneFormat::Splat && g.sh_degree > 0 {
        eprintln!(
            "note: .splat has no SH above degree 0; degrees 1..{} are dropped",
            g.sh_degree
        );
    }
    let opts = WriteOptions {
        spz_version: args.spz_version,
        sog_iterations: args.sog_iterations,
        ..Default::default()
    };
    let t = Instant::now();
    write_scene(&args.output, &g, format, &opts)?;
    let write_s = t.elapsed().as_secs_f64();
    let bytes = written_bytes(&args.output, format)?;
    println!(
        "{} -> {} ({format}): {} splats, SH degree {}, {bytes} bytes ({:.1} bytes a splat); read {read_s:.2} s, written {write_s:.2} s",
        args.input.display(),
        args.output.display(),
        g.len(),
        g.sh_degree,
        bytes as f64 / g.len().max(1) as f64,
    );
    Ok(())
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
