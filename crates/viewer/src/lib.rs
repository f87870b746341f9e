//! The splat viewer: an HTTP server that serves one embedded page and streams frames rendered by
//! splat's own renderer over a WebSocket, the way the nerfstudio viewer works. The page sends its
//! camera; the server renders it with the CPU backend and answers with an image: half resolution JPEG
//! while the camera moves, full resolution PNG (lossless) once it rests. Requests that arrive during a
//! render replace each other, so a slow render drops stale frames instead of queueing them.
//!
//! Routes: `/` (the page), `/ws` (frames), `/gt/N` (ground-truth photo N of the dataset, from memory).
//! Nothing a request names reaches the file system; every other path is a 404. WebSocket messages are
//! limited to [`MAX_MESSAGE_BYTES`] and camera requests are validated before use.
//!
//! The scene lives in a [`SharedScene`]; training publishes snapshots into it (`splat train --view`), and
//! the server re-renders the current camera of each page when the scene's version changes.

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::{Deserialize, Serialize};
use splat_core::{Camera, Gaussians};
use splat_render::{Buffers, CpuBackend, RenderSettings};

const INDEX_HTML: &str = include_str!("../assets/index.html");

/// Largest WebSocket message the server accepts (camera requests are a few hundred bytes).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;
/// Largest frame side the server renders.
pub const MAX_SIDE: u32 = 4096;

/// Training progress shown on the page.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct TrainStatus {
    pub step: u64,
    pub total_steps: u64,
    pub loss: f64,
    pub psnr: f64,
    pub num_gaussians: usize,
}

/// A dataset camera the page can jump to, with its photo.
#[derive(Clone, Debug)]
pub struct DatasetView {
    pub name: String,
    pub camera: Camera,
    /// JPEG bytes of the ground-truth photo.
    pub photo_jpeg: Vec<u8>,
}

/// What the server shows.
pub struct Scene {
    pub gaussians: Arc<Gaussians<f32>>,
    pub sh_degree: usize,
    /// Bumped on every new snapshot.
    pub version: u64,
    pub status: Option<TrainStatus>,
}

/// The scene shared between its producer (a file, or training) and the server.
#[derive(Clone)]
pub struct SharedScene {
    inner: Arc<RwLock<Scene>>,
    clients: Arc<std::sync::atomic::AtomicUsize>,
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

    fn snapshot(&self) -> (Arc<Gaussians<f32>>, usize, u64, Option<TrainStatus>) {
        let s = self.inner.read().expect("scene lock");
        (s.gaussians.clone(), s.sh_degree, s.version, s.status)
    }
}

/// Server settings.
#[derive(Clone)]
pub struct ViewerOptions {
    pub background: [f32; 3],
    /// World up for the orbit controls.
    pub up: [f64; 3],
    pub dataset: Arc<Vec<DatasetView>>,
}

#[derive(Clone)]
struct AppState {
    scene: SharedScene,
    options: ViewerOptions,
}

/// A camera request from the page.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CameraRequest {
    /// The orbit camera: eye, target, up, horizontal field of view, frame size.
    Orbit {
        eye: [f64; 3],
        target: [f64; 3],
        up: [f64; 3],
        fov_x: f64,
        width: u32,
        height: u32,
        moving: bool,
        id: u64,
    },
    /// Dataset camera `index` at its own intrinsics (scaled to fit `max_width`).
    Dataset {
        index: usize,
        max_width: u32,
        moving: bool,
        id: u64,
    },
}

impl CameraRequest {
    fn id(&self) -> u64 {
        match self {
            CameraRequest::Orbit { id, .. } | CameraRequest::Dataset { id, .. } => *id,
        }
    }

    fn moving(&self) -> bool {
        match self {
            CameraRequest::Orbit { moving, .. } | CameraRequest::Dataset { moving, .. } => *moving,
        }
    }

    /// The camera to render, at full resolution; `Err` says what is wrong with the request.
    pub fn camera(&self, dataset: &[DatasetView]) -> Result<Camera, String> {
        match *self {
            CameraRequest::Orbit {
                eye,
                target,
                up,
                fov_x,
                width,
                height,
                ..
            } => {
                let all = eye.iter().chain(&target).chain(&up).chain([&fov_x]);
                if all.into_iter().any(|v| !v.is_finite()) {
                    return Err("non-finite camera".into());
                }
                if width == 0 || height == 0 || width > MAX_SIDE || height > MAX_SIDE {
                    return Err(format!(
                        "frame size {width} x {height} outside 1..={MAX_SIDE}"
                    ));
                }
                if !(fov_x > 1.0 && fov_x < 170.0) {
                    return Err(format!("field of view {fov_x} outside (1, 170)"));
                }
                Camera::try_look_at(eye, target, up, fov_x, width, height)
                    .map_err(|e| format!("degenerate camera: {e:?}"))
            }
            CameraRequest::Dataset {
                index, max_width, ..
            } => {
                let v = dataset
                    .get(index)
                    .ok_or_else(|| format!("no dataset view {index}"))?;
                let mut cam = v.camera.clone();
                let max_width = max_width.clamp(16, MAX_SIDE);
                if cam.width > max_width {
                    cam = scaled(&cam, max_width as f64 / cam.width as f64);
                }
                Ok(cam)
            }
        }
    }
}

/// The same view at `s` times the resolution.
pub fn scaled(cam: &Camera, s: f64) -> Camera {
    let mut c = cam.clone();
    c.width = ((cam.width as f64 * s).round() as u32).max(1);
    c.height = ((cam.height as f64 * s).round() as u32).max(1);
    let (sx, sy) = (
        c.width as f64 / cam.width as f64,
        c.height as f64 / cam.height as f64,
    );
    c.fx *= sx;
    c.fy *= sy;
    c.cx *= sx;
    c.cy *= sy;
    c
}

/// Renders `cam` and encodes it: PNG (lossless) or JPEG.
pub fn render_frame(
    backend: &mut CpuBackend,
    buffers: &mut Buffers,
    gaussians: &Gaussians<f32>,
    sh_degree: usize,
    background: [f32; 3],
    cam: &Camera,
    png: bool,
) -> Vec<u8> {
    let mut settings = RenderSettings::new(sh_degree.min(gaussians.sh_degree));
    settings.background = background;
    splat_render::render(backend, gaussians, cam, &settings, buffers);
    let img = &buffers.raster.image;
    let rgb = splat_io::images::to_rgb8(cam.width, cam.height, img).expect("valid frame size");
    let mut out = Vec::new();
    if png {
        // Fast compression: a frame is sent once, and encoding time is latency (and, during
        // training, time taken from training).
        use image::ImageEncoder;
        image::codecs::png::PngEncoder::new_with_quality(
            &mut out,
            image::codecs::png::CompressionType::Fast,
            image::codecs::png::FilterType::Sub,
        )
        .write_image(&rgb, cam.width, cam.height, image::ExtendedColorType::Rgb8)
        .expect("PNG encoding to memory");
    } else {
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80)
            .encode(&rgb, cam.width, cam.height, image::ExtendedColorType::Rgb8)
            .expect("JPEG encoding to memory");
    }
    out
}

/// The router: the page, the WebSocket, ground-truth photos; everything else is a 404.
pub fn router(scene: SharedScene, options: ViewerOptions) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/ws", get(ws))
        .route("/gt/{index}", get(photo))
        .fallback(not_found)
        .with_state(AppState { scene, options })
}

async fn index() -> Html<&'static str> {
    Html(INDEX_HTML)
}

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found").into_response()
}

async fn photo(State(app): State<AppState>, Path(index): Path<String>) -> Response {
    match index
        .parse::<usize>()
        .ok()
        .and_then(|i| app.options.dataset.get(i))
    {
        Some(v) => ([(header::CONTENT_TYPE, "image/jpeg")], v.photo_jpeg.clone()).into_response(),
        None => not_found().await,
    }
}

async fn ws(State(app): State<AppState>, upgrade: WebSocketUpgrade) -> Response {
    upgrade
        .max_message_size(MAX_MESSAGE_BYTES)
        .max_frame_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| session(socket, app))
}

/// What the page learns on connecting.
#[derive(Serialize)]
struct Hello<'a> {
    kind: &'static str,
    num_gaussians: usize,
    center: [f64; 3],
    radius: f64,
    up: [f64; 3],
    views: Vec<HelloView<'a>>,
    status: Option<TrainStatus>,
}

#[derive(Serialize)]
struct HelloView<'a> {
    name: &'a str,
    eye: [f64; 3],
    forward: [f64; 3],
    down: [f64; 3],
    width: u32,
    height: u32,
    fov_x: f64,
}

/// The frame header sent before the image bytes in one binary message: `u32` header length (LE),
/// the JSON header, the image.
#[derive(Serialize)]
struct FrameHeader {
    id: u64,
    width: u32,
    height: u32,
    format: &'static str,
    moving: bool,
    version: u64,
    camera: [f64; 16],
    status: Option<TrainStatus>,
}

fn camera_numbers(c: &Camera) -> [f64; 16] {
    let r = &c.rotation;
    let t = &c.translation;
    [
        c.fx, c.fy, c.cx, c.cy, r[0][0], r[0][1], r[0][2], r[1][0], r[1][1], r[1][2], r[2][0],
        r[2][1], r[2][2], t[0], t[1], t[2],
    ]
}

/// Robust centre and radius of the scene for the initial orbit.
fn scene_frame(g: &Gaussians<f32>) -> ([f64; 3], f64) {
    let c = g.median_mean();
    (c, g.distance_quantile(c, 0.9))
}

struct Done {
    bytes: Vec<u8>,
    header: FrameHeader,
    backend: CpuBackend,
    buffers: Buffers,
}

async fn session(mut socket: WebSocket, app: AppState) {
    use std::sync::atomic::Ordering;
    app.scene.clients.fetch_add(1, Ordering::Relaxed);
    let _guard = ClientGuard(app.scene.clients.clone());
    let (gaussians, _, _, status) = app.scene.snapshot();
    let (center, radius) = scene_frame(&gaussians);
    let hello = Hello {
        kind: "hello",
        num_gaussians: gaussians.len(),
        center,
        radius,
        up: app.options.up,
        views: app
            .options
            .dataset
            .iter()
            .map(|v| HelloView {
                name: &v.name,
                eye: v.camera.center(),
                forward: v.camera.rotation[2],
                down: v.camera.rotation[1],
                width: v.camera.width,
                height: v.camera.height,
                fov_x: 2.0
                    * (0.5 * v.camera.width as f64 / v.camera.fx)
                        .atan()
                        .to_degrees(),
            })
            .collect(),
        status,
    };
    let text = serde_json::to_string(&hello).expect("serializable");
    if socket.send(Message::Text(text.into())).await.is_err() {
        return;
    }
    drop(gaussians);

    let mut tools = Some((CpuBackend::new(), Buffers::default()));
    let mut pending: Option<CameraRequest> = None;
    let mut last: Option<CameraRequest> = None;
    let mut shown_version = 0u64;
    let mut rendering: Option<tokio::task::JoinHandle<Done>> = None;
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        // Start the newest request when idle.
        if rendering.is_none() && pending.is_some() && tools.is_some() {
            if let (Some(req), Some((mut backend, mut buffers))) = (pending.take(), tools.take()) {
                let (gaussians, sh, version, status) = app.scene.snapshot();
                let options = app.options.clone();
                match req.camera(&options.dataset) {
                    Err(e) => {
                        let msg =
                            serde_json::json!({"kind": "error", "id": req.id(), "message": e});
                        tools = Some((backend, buffers));
                        if socket
                            .send(Message::Text(msg.to_string().into()))
                            .await
                            .is_err()
                        {
                            return;
                        }
                        continue;
                    }
                    Ok(full) => {
                        let moving = req.moving();
                        let cam = if moving { scaled(&full, 0.5) } else { full };
                        last = Some(req.clone());
                        shown_version = version;
                        rendering = Some(tokio::task::spawn_blocking(move || {
                            let bytes = render_frame(
                                &mut backend,
                                &mut buffers,
                                &gaussians,
                                sh,
                                options.background,
                                &cam,
                                !moving,
                            );
                            Done {
                                bytes,
                                header: FrameHeader {
                                    id: req.id(),
                                    width: cam.width,
                                    height: cam.height,
                                    format: if moving { "jpeg" } else { "png" },
                                    moving,
                                    version,
                                    camera: camera_numbers(&cam),
                                    status,
                                },
                                backend,
                                buffers,
                            }
                        }));
                    }
                }
            }
        }
        tokio::select! {
            msg = socket.recv() => {
                let Some(Ok(msg)) = msg else { return };
                match msg {
                    Message::Text(t) => match serde_json::from_str::<CameraRequest>(&t) {
                        Ok(req) => pending = Some(req),
                        Err(e) => {
                            let err = serde_json::json!({"kind": "error", "message": format!("bad request: {e}")});
                            if socket.send(Message::Text(err.to_string().into())).await.is_err() {
                                return;
                            }
                        }
                    },
                    Message::Close(_) => return,
                    _ => {}
                }
            }
            done = async { rendering.as_mut().expect("guarded").await }, if rendering.is_some() => {
                rendering = None;
                let Ok(done) = done else { return };
                let header = serde_json::to_vec(&done.header).expect("serializable");
                let mut msg = Vec::with_capacity(4 + header.len() + done.bytes.len());
                msg.extend((header.len() as u32).to_le_bytes());
                msg.extend(header);
                msg.extend(done.bytes);
                tools = Some((done.backend, done.buffers));
                if socket.send(Message::Binary(msg.into())).await.is_err() {
                    return;
                }
            }
            _ = tick.tick() => {
                // A new training snapshot: show it from the current camera (at rest quality).
                let (_, _, version, status) = app.scene.snapshot();
                if version != shown_version && pending.is_none() {
                    if let Some(mut req) = last.clone() {
                        let (CameraRequest::Orbit { moving, .. } | CameraRequest::Dataset { moving, .. }) = &mut req;
                        *moving = false;
                        pending = Some(req);
                    }
                }
                if let Some(status) = status {
                    let msg = serde_json::json!({"kind": "status", "status": status});
                    if socket.send(Message::Text(msg.to_string().into())).await.is_err() {
                        return;
                    }
                }
            }
        }
    }
}

struct ClientGuard(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for ClientGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Server {
    /// Binds `host:port` (port 0 picks a free one) and serves in background threads.
    pub fn start(
        host: &str,
        port: u16,
        scene: SharedScene,
        options: ViewerOptions,
    ) -> std::io::Result<Server> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("splat-viewer")
            .enable_all()
            .build()?;
        let listener = runtime.block_on(tokio::net::TcpListener::bind((host, port)))?;
        let addr = listener.local_addr()?;
        let app = router(scene, options);
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Server {
            addr,
            runtime: Some(runtime),
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}
