//! `splat view`: serves the viewer page for a PLY or a training output folder.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;
use splat_io::dataset::display::{DisplayPhotos, DISPLAY_LONG_EDGE};
use splat_viewer::{Server, SharedScene, ViewerOptions};

use crate::dataset_args::{load_dataset, DataArgs};
use crate::viewer_link::{dataset_views, photo_cache_dir};

#[derive(Args)]
pub struct ViewArgs {
    /// A scene in any format splat reads (see `splat convert --help`), or a training output folder
    /// (its point_cloud.ply).
    pub scene: PathBuf,
    /// Dataset whose cameras the page lists, with each ground-truth photo beside the render (from the
    /// refined poses when SCENE is the folder of a `--pose-opt` run, which holds them in images.txt).
    /// The photos are shown at most 1,024 pixels on the long edge, made once and kept in
    /// $SPLAT_CACHE_DIR/photos (default $XDG_CACHE_HOME/splat/photos or ~/.cache/splat/photos).
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
    #[arg(long, value_parser = crate::parse::parse_vec3)]
    pub up: Option<[f64; 3]>,
}

pub fn view(args: ViewArgs) -> Result<()> {
    let gaussians = crate::scene_files::load_scene(&args.scene)?;
    let mut background = [0.0f32; 3];
    let (views, mut up) = match &args.data {
        Some(data) => {
            let mut options = args.data_args.options(false)?;
            // A `--pose-opt` run's folder: its cameras are the refined ones.
            let refined = args.scene.join("images.txt");
            if options.poses.is_none() && args.scene.is_dir() && refined.is_file() {
                eprintln!(
                    "cameras: the refined poses of {} (--poses FILE to choose others)",
                    refined.display()
                );
                options.poses = Some(refined);
            }
            // The panel's photos at display size, made once and cached; no masks.
            options.masks.ignore = true;
            options.display = Some(DisplayPhotos {
                long_edge: DISPLAY_LONG_EDGE,
                cache_dir: photo_cache_dir(),
            });
            let ds = load_dataset(data, &options)?;
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
