//! Writing `scene.html` ([`splat_viewer::standalone`]): the scene and the viewer in one file that
//! opens from disk, for `splat convert SCENE scene.html` and `splat scan`.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use splat_core::Gaussians;
use splat_viewer::standalone::{self, Page, MAX_BROWSER_SPLATS};
use splat_viewer::ViewerOptions;

use crate::viewer_link::dataset_cameras;

/// Is `path` a page's name (`.html` or `.htm`)?
pub fn is_page(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
}

/// What the page shows besides the scene: the cameras to list (from a dataset), up, background.
pub struct PageFrame {
    pub options: ViewerOptions,
}

impl PageFrame {
    /// No dataset: COLMAP's up (-y), black background, no cameras.
    pub fn bare() -> Self {
        PageFrame {
            options: ViewerOptions {
                background: [0.0; 3],
                up: [0.0, -1.0, 0.0],
                dataset: Arc::new(Vec::new()),
            },
        }
    }

    /// The dataset's cameras (no photos), their mean up and the dataset's background.
    pub fn of_dataset(ds: &splat_io::dataset::Dataset) -> Result<Self> {
        let (views, up) = dataset_cameras(ds)?;
        let len = up.iter().map(|v| v * v).sum::<f64>().sqrt();
        let up = if len > 1e-9 {
            up.map(|v| v / len)
        } else {
            [0.0, -1.0, 0.0]
        };
        Ok(PageFrame {
            options: ViewerOptions {
                background: ds.background,
                up,
                dataset: Arc::new(views),
            },
        })
    }
}

/// Writes the page for `g` to `path` (through a temporary file: an old page stays whole until the new
/// one is complete), titled by the file's stem; says on stderr when browsers will find it too large.
pub fn write_page(path: &Path, g: &Gaussians<f32>, frame: &PageFrame) -> Result<Page> {
    let title = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scene".into());
    let page = standalone::page(g, &title, &frame.options)
        .with_context(|| format!("cannot make {}", path.display()))?;
    if page.too_large_for_browsers {
        eprintln!(
            "note: {} splats ({} MB): more than a browser opens safely (about {MAX_BROWSER_SPLATS} splats); \
             the page says so and offers to load anyway. `splat view` shows it whole.",
            page.splats,
            page.html.len() / 1_000_000
        );
    }
    splat_io::atomic::write_atomic(path, &page.html)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(page)
}
