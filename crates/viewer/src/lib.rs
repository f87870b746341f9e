//! The splat viewer: an HTTP server whose page draws the splats itself, in the browser, with Spark
//! (a three.js Gaussian-splat renderer on WebGL2), at display rate and without taking cores from
//! training. The server sends the scene as SPZ v3 (`/scene.spz`, one encoding per scene version) and,
//! over a WebSocket, the dataset's cameras, training status and a notice for each new snapshot; the
//! page downloads the new scene and swaps it in once it is ready, so no frame is blank.
//!
//! splat's own renderer stays as the "reference" view: the page sends its camera over the WebSocket
//! and shows the exact CPU render (PNG at rest, JPEG while moving). It is also the fallback where the
//! browser has no WebGL2.
//!
//! Routes: `/` (the page), `/viewer.js`, `/vendor/...` (the embedded libraries, see [`assets`]),
//! `/scene.spz`, `/ws`, `/gt/N` (ground-truth photo N of the dataset, from memory). Nothing a
//! request names reaches the file system; every other path is a 404. WebSocket messages are limited
//! to [`MAX_MESSAGE_BYTES`] and camera requests are validated before use.

pub mod assets;
pub mod camera;
pub mod scene;
mod session;
pub mod standalone;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Serialize;
use splat_core::Camera;

pub use camera::{scaled, CameraRequest, WireCamera, MAX_SIDE};
pub use scene::{Scene, SharedScene};
pub use session::render_frame;

/// Largest WebSocket message the server accepts (camera requests are a few hundred bytes).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

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

/// Server settings.
#[derive(Clone)]
pub struct ViewerOptions {
    pub background: [f32; 3],
    /// World up for the orbit controls.
    pub up: [f64; 3],
    pub dataset: Arc<Vec<DatasetView>>,
}

#[derive(Clone)]
pub(crate) struct AppState {
    scene: SharedScene,
    options: ViewerOptions,
}

/// The router: the page, its script and libraries, the scene, the WebSocket, ground-truth photos;
/// everything else is a 404.
pub fn router(scene: SharedScene, options: ViewerOptions) -> Router {
    let mut r = Router::new()
        .route("/", get(index))
        .route("/scene.spz", get(scene_bytes))
        .route("/ws", get(ws))
        .route("/gt/{index}", get(photo));
    for a in assets::ASSETS {
        r = r.route(a.route, get(move || async move { embedded(a) }));
    }
    r.fallback(not_found)
        .with_state(AppState { scene, options })
}

fn embedded(a: &'static assets::Asset) -> Response {
    (
        [
            (header::CONTENT_TYPE, a.mime),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        a.bytes,
    )
        .into_response()
}

async fn index() -> Response {
    (
        [(header::X_CONTENT_TYPE_OPTIONS, "nosniff")],
        Html(assets::INDEX_HTML),
    )
        .into_response()
}

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found").into_response()
}

/// The current scene as SPZ v3; `x-splat-version` says which snapshot it is.
async fn scene_bytes(State(app): State<AppState>) -> Response {
    let scene = app.scene.clone();
    match tokio::task::spawn_blocking(move || scene.encoded()).await {
        Ok(Ok(e)) => {
            let mut resp = (
                [
                    (header::CONTENT_TYPE, "application/octet-stream"),
                    (header::CACHE_CONTROL, "no-store"),
                ],
                e.bytes.clone(),
            )
                .into_response();
            let h = resp.headers_mut();
            for (name, value) in [
                ("x-splat-version", e.version.to_string()),
                ("x-splat-count", e.num_gaussians.to_string()),
                ("x-splat-sh-degree", e.sh_degree.to_string()),
                ("x-splat-antialiased", (e.antialiased as u8).to_string()),
            ] {
                h.insert(name, HeaderValue::from_str(&value).expect("ASCII digits"));
            }
            resp
        }
        Ok(Err(why)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the scene cannot be encoded: {why}"),
        )
            .into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "encoder failed").into_response(),
    }
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
        .on_upgrade(move |socket| session::session(socket, app))
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
