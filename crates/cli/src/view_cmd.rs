//! `splat view`: serves the viewer page for a PLY or a training output folder.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;
use splat_viewer::{DatasetView, Server, SharedScene, ViewerOptions};

use crate::train_cmd::{load_dataset, DataArgs};

#[derive(Args)]
pub struct ViewArgs {
    /// A scene in any format splat reads (see `splat convert --help`), or a training output folder
    /// (its point_cloud.ply).
    pub scene: PathBuf,
    /// Dataset whose cameras the page lists, with each ground-truth photo beside the render.
    #[arg(long)]
    pub data: Option<PathBuf>,
    #[command(flatten)]
    pub data_args: DataArgs,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Address to listen on; anything but 127.0.0.1 / localhost exposes the scene to the network.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// World up direction "x,y,z" for the orbit controls (default: from the dataset cameras, else -y as
    /// in COLMAP scenes).
    #[arg(long, value_parser = crate::render_cmd::parse_vec3)]
    pub up: Option<[f64; 3]>,
}

/// Dataset cameras with their photos as JPEG, and the mean "up" of the cameras.
pub fn dataset_views(ds: &splat_io::dataset::Dataset) -> Result<(Vec<DatasetView>, [f64; 3])> {
    let mut views = Vec::new();
    let mut up = [0.0; 3];
    for v in ds.all_views() {
        let mut jpeg = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90)
            .encode(
                &v.image.data,
                v.image.width,
                v.image.height,
                image::ExtendedColorType::Rgb8,
            )
            .with_context(|| format!("encoding the photo of {}", v.name))?;
        for (u, d) in up.iter_mut().zip(v.camera.rotation[1]) {
            *u -= d;
        }
        views.push(DatasetView {
            name: v.name.clone(),
            camera: v.camera.clone(),
            photo_jpeg: jpeg,
        });
    }
    Ok((views, up))
}

pub fn view(args: ViewArgs) -> Result<()> {
    let gaussians = crate::convert_cmd::load_scene(&args.scene)?;
    let mut background = [0.0f32; 3];
    let (views, mut up) = match &args.data {
        Some(data) => {
            let ds = load_dataset(data, &args.data_args.options(false)?)?;
            background = ds.background;
            dataset_views(&ds)?
        }
        None => (Vec::new(), [0.0, -1.0, 0.0]),
    };
    if let Some(u) = args.up {
        up = u;
    }
    let len = up.iter().map(|v| v * v).sum::<f64>().sqrt();
    if !(len > 1e-9) || !len.is_finite() {
        bail!("--up must be a non-zero direction");
    }
    let up = up.map(|v| v / len);
    if let Some(bg) = args.data_args.background {
        background = bg.map(|v| v as f32);
    }
    let count = gaussians.len();
    let server = Server::start(
        &args.host,
        args.port,
        SharedScene::new(gaussians),
        ViewerOptions {
            background,
            up,
            dataset: Arc::new(views),
        },
    )
    .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
    if !matches!(args.host.as_str(), "127.0.0.1" | "localhost" | "::1") {
        eprintln!(
            "warning: listening on {}: anyone who can reach this address sees the scene",
            args.host
        );
    }
    eprintln!("{}: {count} Gaussians", args.scene.display());
    println!("viewer: {} (Ctrl-C to stop)", server.url());
    std::io::stdout().flush().ok();
    loop {
        std::thread::park();
    }
}
