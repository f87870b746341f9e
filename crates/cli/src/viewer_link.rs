//! The browser viewer's side of the other commands: a dataset's cameras and photos for the page
//! ([`dataset_views`]), and `splat train --view` ([`LiveViewer`]): the page served while training, fed by
//! a [`LivePublisher`] observing the run, then serving the result.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use splat_io::dataset::Dataset;
use splat_train::run::{Observer, StepEvent};
use splat_viewer::{DatasetView, Server, SharedScene, TrainStatus, ViewerOptions};

/// How often `--view` copies the training scene for the page (each copy costs an SPZ encode, shared
/// by every open page, and each page's download and decode: 2 s keeps the slowdown within 5% on 2
/// cores, see BENCHMARKS.md).
const LIVE_VIEW_INTERVAL: Duration = Duration::from_secs(2);

/// Dataset cameras with their photos as JPEG (at most [`DISPLAY_LONG_EDGE`] pixels on the long
/// edge), and the mean "up" of the cameras.
///
/// [`DISPLAY_LONG_EDGE`]: splat_io::dataset::display::DISPLAY_LONG_EDGE
pub fn dataset_views(ds: &splat_io::dataset::Dataset) -> Result<(Vec<DatasetView>, [f64; 3])> {
    views_of(ds, true)
}

/// Dataset cameras without their photos (a scene.html page lists the cameras only), and "up".
pub fn dataset_cameras(ds: &splat_io::dataset::Dataset) -> Result<(Vec<DatasetView>, [f64; 3])> {
    views_of(ds, false)
}

fn views_of(ds: &splat_io::dataset::Dataset, photos: bool) -> Result<(Vec<DatasetView>, [f64; 3])> {
    use rayon::prelude::*;
    use splat_io::dataset::display::{encode_jpeg, shrink, DISPLAY_LONG_EDGE};
    let all: Vec<_> = ds.all_views().collect();
    let views = all
        .par_iter()
        .map(|v| {
            let photo_jpeg = match (photos, &v.display_jpeg) {
                (false, _) => Vec::new(),
                (true, Some(jpeg)) => jpeg.clone(),
                (true, None) => encode_jpeg(&shrink(&v.image, DISPLAY_LONG_EDGE))
                    .with_context(|| format!("encoding the photo of {}", v.name))?,
            };
            Ok(DatasetView {
                name: v.name.clone(),
                camera: v.camera.clone(),
                photo_jpeg,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut up = [0.0; 3];
    for v in &all {
        for (u, d) in up.iter_mut().zip(v.camera.rotation[1]) {
            *u -= d;
        }
    }
    Ok((views, up))
}

/// Where `splat view --data` keeps its display-size photos: `$SPLAT_CACHE_DIR/photos`, else
/// `$XDG_CACHE_HOME/splat/photos`, else `~/.cache/splat/photos`; `None` when none is set (the
/// photos are then made at every start).
pub fn photo_cache_dir() -> Option<std::path::PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let base = match (var("SPLAT_CACHE_DIR"), var("XDG_CACHE_HOME"), var("HOME")) {
        (Some(dir), _, _) => std::path::PathBuf::from(dir),
        (None, Some(xdg), _) => std::path::PathBuf::from(xdg).join("splat"),
        (None, None, Some(home)) => std::path::PathBuf::from(home).join(".cache/splat"),
        (None, None, None) => return None,
    };
    Some(base.join("photos"))
}

/// The viewer of `splat train --view`.
pub struct LiveViewer {
    server: Server,
    scene: SharedScene,
}

impl LiveViewer {
    /// Serves the page on `host:port`, showing the dataset's initial points until the first snapshot
    /// (they frame the scene), and prints its address on stdout.
    pub fn start(ds: &Dataset, host: &str, port: u16) -> Result<Self> {
        let (views, up) = dataset_views(ds)?;
        let len = up.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
        let scene = SharedScene::new(splat_train::init::gaussians_from_points(&ds.points, 0));
        let server = Server::start(
            host,
            port,
            scene.clone(),
            ViewerOptions {
                background: ds.background,
                up: up.map(|v| v / len),
                dataset: Arc::new(views),
            },
        )
        .with_context(|| format!("cannot listen on {host}:{port}"))?;
        println!("viewer: {}", server.url());
        std::io::stdout().flush().ok();
        Ok(LiveViewer { server, scene })
    }

    /// The observer that shows the run's steps on the page.
    pub fn publisher(&self) -> LivePublisher {
        LivePublisher {
            scene: self.scene.clone(),
            last_publish: None,
        }
    }

    /// Shows the run's result (`ply`, after `steps` steps) and serves it until the process is stopped.
    pub fn serve_result(self, ply: &Path, steps: u64) -> ! {
        if let Ok(g) = splat_io::read_ply(ply) {
            let status = TrainStatus {
                step: steps,
                total_steps: steps,
                num_gaussians: g.len(),
                ..Default::default()
            };
            let degree = g.sh_degree;
            self.scene.publish(g, degree, status);
        }
        println!(
            "training done; the viewer keeps serving the result at {} (Ctrl-C to stop)",
            self.server.url()
        );
        std::io::stdout().flush().ok();
        loop {
            std::thread::park();
        }
    }
}

/// Puts each step's status on the page, and a copy of the scene at most every [`LIVE_VIEW_INTERVAL`]
/// while a page is open (the state is read back at the end of each resident block for it).
pub struct LivePublisher {
    scene: SharedScene,
    last_publish: Option<Instant>,
}

impl Observer for LivePublisher {
    fn wants_state(&self, event: &StepEvent<'_>) -> bool {
        event.block_end
    }

    fn on_step(&mut self, event: &StepEvent<'_>) {
        let s = event.stats;
        let status = TrainStatus {
            step: s.step,
            total_steps: event.total_steps,
            loss: s.loss,
            psnr: s.psnr,
            num_gaussians: s.num_gaussians,
        };
        let due = self
            .last_publish
            .is_none_or(|t| t.elapsed() >= LIVE_VIEW_INTERVAL);
        if self.scene.clients() > 0 && (due || event.done) {
            let state = event.state;
            self.scene
                .publish(state.export_gaussians(), state.active_sh_degree, status);
            self.last_publish = Some(Instant::now());
        } else {
            self.scene.set_status(status);
        }
    }
}
