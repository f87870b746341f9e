//! `splat convert`: a scene between the formats splats are shared in: the INRIA PLY, compressed PLY,
//! `.splat`, SPZ, SOG (zip or folder) and glTF / GLB. Reading detects the format from the file's
//! first bytes (from its name for `.splat`, see [`crate::scene_files`]); writing takes it from the
//! output's name. An output named `.html` is a page with the viewer and the scene in one file
//! ([`crate::scene_page`]).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use splat_io::formats::{output_format, write_scene, SceneFormat, WriteOptions};

use crate::dataset_args::{load_dataset, DataArgs};
use crate::scene_files::{load_scene, written_bytes};
use crate::scene_page::{is_page, write_page, PageFrame};

#[derive(Args)]
pub struct ConvertArgs {
    /// Scene to read: .ply, .compressed.ply, .splat, .spz (v1-4), .sog, a SOG folder or its
    /// meta.json, .glb or .gltf (the format is detected from the content), or a training output
    /// folder (its point_cloud.ply).
    pub input: PathBuf,
    /// File to write; the format comes from its name: .ply (INRIA, lossless), .compressed.ply,
    /// .splat (no SH above degree 0), .spz, .sog, meta.json (a SOG folder), .glb or .gltf; or .html:
    /// one page with the viewer and the scene (SPZ) inside, that opens from disk in a browser with no
    /// server and no network, to send to someone.
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
    /// For an .html page: the dataset whose cameras the page lists to jump to (no photos are stored),
    /// and whose cameras give up and background.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    #[command(flatten)]
    pub data_args: DataArgs,
}

pub fn convert(args: ConvertArgs) -> Result<()> {
    // The format is known (or refused) before the input is read.
    let format = match is_page(&args.output) {
        true => None,
        false => Some(output_format(&args.output)?),
    };
    if args.data.is_some() && format.is_some() {
        bail!("--data is for an .html page (its camera list)");
    }
    let t = Instant::now();
    let mut g = load_scene(&args.input)?;
    let read_s = t.elapsed().as_secs_f64();
    if let Some(d) = args.sh_degree {
        if d > 3 {
            bail!("--sh-degree {d}: SH degrees 0 to 3");
        }
        g = g.with_sh_degree(d);
    }
    let Some(format) = format else {
        return convert_to_page(&args, &g, read_s);
    };
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

fn convert_to_page(args: &ConvertArgs, g: &splat_core::Gaussians<f32>, read_s: f64) -> Result<()> {
    let frame = match &args.data {
        Some(data) => PageFrame::of_dataset(&load_dataset(data, &args.data_args.options(false)?)?)?,
        None => PageFrame::bare(),
    };
    let t = Instant::now();
    let page = write_page(&args.output, g, &frame)?;
    println!(
        "{} -> {}: {} splats, SH degree {}, {} bytes (the scene as SPZ {} bytes, the viewer's scripts {} bytes gzipped from {}), {} cameras listed; read {read_s:.2} s, written {:.2} s",
        args.input.display(),
        args.output.display(),
        g.len(),
        g.sh_degree,
        page.html.len(),
        page.scene_bytes,
        page.stored_script_bytes,
        page.script_bytes,
        frame.options.dataset.len(),
        t.elapsed().as_secs_f64(),
    );
    println!(
        "open it: double-click {} (or drag it onto a browser window); it needs no server and no network",
        args.output.display()
    );
    Ok(())
}
