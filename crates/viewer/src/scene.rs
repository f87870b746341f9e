//! The scene the server shows, shared with its producer (a file, or training), and its compact
//! encoding for the page.
//!
//! The page draws the splats itself, so the server sends the scene, not frames: SPZ v3 (the compact
//! format Spark reads; ~18 B a splat at SH 1 against the PLY's 248 B at SH 3), at the SH degree
//! training has reached. One encoding per scene version is cached and shared by every page; it is
//! made on the first request after a snapshot, in the request's blocking task, so training only pays
//! for the copy it publishes.

use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use splat_core::Gaussians;
use splat_io::formats::{encode, SceneFormat, WriteOptions};

use crate::TrainStatus;

/// What the server shows.
pub struct Scene {
    pub gaussians: Arc<Gaussians<f32>>,
    /// SH degree in use (training raises it step by step; a file uses all it has).
    pub sh_degree: usize,
    /// Bumped on every new snapshot.
    pub version: u64,
    pub status: Option<TrainStatus>,
}

/// One scene version as the page downloads it.
pub struct Encoded {
    pub version: u64,
    pub bytes: Vec<u8>,
    pub num_gaussians: usize,
    pub sh_degree: usize,
    pub antialiased: bool,
    pub encode_seconds: f64,
}

/// The scene shared between its producer and the server.
#[derive(Clone)]
pub struct SharedScene {
    inner: Arc<RwLock<Scene>>,
    encoded: Arc<Mutex<Option<Arc<Encoded>>>>,
    pub(crate) clients: Arc<std::sync::atomic::AtomicUsize>,
}

/// A consistent view of the scene at one moment.
pub(crate) struct Snapshot {
    pub gaussians: Arc<Gaussians<f32>>,
    pub sh_degree: usize,
    pub version: u64,
    pub status: Option<TrainStatus>,
}

impl SharedScene {
    pub fn new(gaussians: Gaussians<f32>) -> Self {
        let sh_degree = gaussians.sh_degree;
        SharedScene {
            inner: Arc::new(RwLock::new(Scene {
                gaussians: Arc::new(gaussians),
                sh_degree,
                version: 0,
                status: None,
            })),
            encoded: Arc::default(),
            clients: Arc::default(),
        }
    }

    /// Replaces the scene (a training snapshot).
    pub fn publish(&self, gaussians: Gaussians<f32>, sh_degree: usize, status: TrainStatus) {
        let mut s = self.inner.write().expect("scene lock");
        s.gaussians = Arc::new(gaussians);
        s.sh_degree = sh_degree;
        s.version += 1;
        s.status = Some(status);
    }

    /// Updates the progress without a new scene.
    pub fn set_status(&self, status: TrainStatus) {
        self.inner.write().expect("scene lock").status = Some(status);
    }

    /// Pages connected now (training only takes snapshots when someone is watching).
    pub fn clients(&self) -> usize {
        self.clients.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        let s = self.inner.read().expect("scene lock");
        Snapshot {
            gaussians: s.gaussians.clone(),
            sh_degree: s.sh_degree,
            version: s.version,
            status: s.status,
        }
    }

    /// The current scene as SPZ v3, encoded once per version. Blocking (tens to hundreds of ms).
    pub fn encoded(&self) -> Result<Arc<Encoded>, String> {
        let mut cache = self.encoded.lock().expect("encoding lock");
        let snap = self.snapshot();
        if let Some(e) = cache.as_ref().filter(|e| e.version == snap.version) {
            return Ok(e.clone());
        }
        let start = Instant::now();
        let g = &snap.gaussians;
        let degree = snap.sh_degree.min(g.sh_degree);
        let reduced;
        let to_send = if degree < g.sh_degree {
            reduced = g.with_sh_degree(degree);
            &reduced
        } else {
            g.as_ref()
        };
        let opts = WriteOptions {
            spz_version: 3,
            gzip_level: 1,
            ..Default::default()
        };
        let bytes = encode(SceneFormat::Spz, to_send, &opts).map_err(|e| e.to_string())?;
        let e = Arc::new(Encoded {
            version: snap.version,
            bytes,
            num_gaussians: g.len(),
            sh_degree: degree,
            antialiased: g.antialiased,
            encode_seconds: start.elapsed().as_secs_f64(),
        });
        *cache = Some(e.clone());
        Ok(e)
    }
}

/// Robust centre and radius of the scene for the initial orbit.
pub(crate) fn scene_frame(g: &Gaussians<f32>) -> ([f64; 3], f64) {
    let c = g.median_mean();
    (c, g.distance_quantile(c, 0.9))
}
