//! `splat convert`: a scene between the formats splats are shared in: the INRIA PLY, compressed PLY,
//! `.splat`, SPZ, SOG (zip or folder) and glTF / GLB. Reading detects the format from the file's
//! first bytes (from its name for `.splat`, see [`crate::scene_files`]); writing takes it from the
//! output's name.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use splat_io::formats::{output_format, write_scene, SceneFormat, WriteOptions};

use crate::scene_files::{load_scene, written_bytes};

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
    #[arg(long, default_value = "3", value_parser = crate::parse::parse_spz_version)]
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
