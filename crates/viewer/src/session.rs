//! One page's WebSocket: what the page learns on connecting (the scene's frame, the dataset's cameras,
//! training status), a notice for each new scene version (the page then fetches `/scene.spz`), and
//! the reference render: splat's own CPU renderer answers camera requests with an image, half
//! resolution JPEG while the camera moves and full resolution PNG (lossless) once it rests. Requests
//! that arrive during a render replace each other, so a slow render drops stale frames.

use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};
use serde::Serialize;
use splat_core::{Camera, Gaussians};
use splat_render::{Buffers, CpuBackend, RenderSettings};

use crate::camera::{scaled, CameraRequest, WireCamera};
use crate::scene::scene_frame;
use crate::{AppState, TrainStatus};

/// What the page learns on connecting.
#[derive(Serialize)]
struct Hello<'a> {
    kind: &'static str,
    num_gaussians: usize,
    version: u64,
    center: [f64; 3],
    radius: f64,
    up: [f64; 3],
    background: [f32; 3],
    views: Vec<HelloView<'a>>,
    status: Option<TrainStatus>,
}

/// A dataset camera, exactly (COLMAP convention: `x_cam = R x_world + t`, pixels).
#[derive(Serialize)]
struct HelloView<'a> {
    name: &'a str,
    #[serde(flatten)]
    camera: WireCamera,
    /// An equidistant fisheye: the page draws a pinhole of the same pose and focal length and says so
    /// (the server's reference render draws the fisheye).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    fisheye: bool,
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
        // Fast compression: a frame is sent once, and encoding time is latency.
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

/// A message from the page: a camera request, or `{"kind":"idle"}` when the page leaves the
/// reference view (no more renders on new snapshots).
enum Incoming {
    Camera(CameraRequest),
    Idle,
}

fn parse_incoming(text: &str) -> Result<Incoming, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if value.get("kind").and_then(|k| k.as_str()) == Some("idle") {
        return Ok(Incoming::Idle);
    }
    serde_json::from_value(value)
        .map(Incoming::Camera)
        .map_err(|e| e.to_string())
}

struct Done {
    bytes: Vec<u8>,
    header: FrameHeader,
    tools: Tools,
}

fn hello_text(app: &AppState) -> String {
    let snap = app.scene.snapshot();
    hello_json(&snap.gaussians, snap.version, snap.status, &app.options)
}

/// The hello message for `gaussians` at `version` (also what a scene.html page starts from).
pub(crate) fn hello_json(
    gaussians: &Gaussians<f32>,
    version: u64,
    status: Option<TrainStatus>,
    options: &crate::ViewerOptions,
) -> String {
    let (center, radius) = scene_frame(gaussians);
    let hello = Hello {
        kind: "hello",
        num_gaussians: gaussians.len(),
        version,
        center,
        radius,
        up: options.up,
        background: options.background,
        views: options
            .dataset
            .iter()
            .map(|v| HelloView {
                name: &v.name,
                camera: WireCamera::from(&v.camera),
                fisheye: v.camera.projection == splat_core::Projection::Equidistant,
            })
            .collect(),
        status,
    };
    serde_json::to_string(&hello).expect("serializable")
}

/// What a reference render needs, handed to its blocking task and back.
type Tools = (CpuBackend, Buffers);

/// The full-resolution camera `req` asks for, or what is wrong with it.
fn requested_camera(app: &AppState, req: &CameraRequest) -> Result<Camera, String> {
    let cameras: Vec<Camera> = app
        .options
        .dataset
        .iter()
        .map(|v| v.camera.clone())
        .collect();
    req.camera(&cameras)
}

/// Starts rendering `full` (at half size while moving) on a blocking thread; returns the scene
/// version it shows.
fn start_render(
    app: &AppState,
    req: &CameraRequest,
    full: Camera,
    (mut backend, mut buffers): Tools,
) -> (u64, tokio::task::JoinHandle<Done>) {
    let snap = app.scene.snapshot();
    let moving = req.moving();
    let cam = if moving { scaled(&full, 0.5) } else { full };
    let background = app.options.background;
    let (id, version, status) = (req.id(), snap.version, snap.status);
    let handle = tokio::task::spawn_blocking(move || {
        let bytes = render_frame(
            &mut backend,
            &mut buffers,
            &snap.gaussians,
            snap.sh_degree,
            background,
            &cam,
            !moving,
        );
        Done {
            bytes,
            header: FrameHeader {
                id,
                width: cam.width,
                height: cam.height,
                format: if moving { "jpeg" } else { "png" },
                moving,
                version,
                camera: camera_numbers(&cam),
                status,
            },
            tools: (backend, buffers),
        }
    });
    (version, handle)
}

async fn send_text(socket: &mut WebSocket, value: serde_json::Value) -> bool {
    socket
        .send(Message::Text(value.to_string().into()))
        .await
        .is_ok()
}

pub(crate) async fn session(mut socket: WebSocket, app: AppState) {
    use std::sync::atomic::Ordering;
    app.scene.clients.fetch_add(1, Ordering::Relaxed);
    let _guard = ClientGuard(app.scene.clients.clone());
    if socket
        .send(Message::Text(hello_text(&app).into()))
        .await
        .is_err()
    {
        return;
    }
    let mut announced = app.scene.snapshot().version;
    let mut tools = Some((CpuBackend::new(), Buffers::default()));
    let mut pending: Option<CameraRequest> = None;
    let mut last: Option<CameraRequest> = None;
    let mut shown_version = 0u64;
    let mut rendering: Option<tokio::task::JoinHandle<Done>> = None;
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        if rendering.is_none() && tools.is_some() {
            if let Some(req) = pending.take() {
                match requested_camera(&app, &req) {
                    Ok(full) => {
                        let t = tools.take().expect("checked");
                        let (version, handle) = start_render(&app, &req, full, t);
                        last = Some(req);
                        shown_version = version;
                        rendering = Some(handle);
                    }
                    Err(e) => {
                        let msg =
                            serde_json::json!({"kind": "error", "id": req.id(), "message": e});
                        if !send_text(&mut socket, msg).await {
                            return;
                        }
                        continue;
                    }
                }
            }
        }
        tokio::select! {
            msg = socket.recv() => {
                let Some(Ok(msg)) = msg else { return };
                match msg {
                    Message::Text(t) => match parse_incoming(&t) {
                        Ok(Incoming::Camera(req)) => pending = Some(req),
                        Ok(Incoming::Idle) => {
                            pending = None;
                            last = None;
                        }
                        Err(e) => {
                            let msg = serde_json::json!({"kind": "error", "message": format!("bad request: {e}")});
                            if !send_text(&mut socket, msg).await {
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
                tools = Some(done.tools);
                if socket.send(Message::Binary(msg.into())).await.is_err() {
                    return;
                }
            }
            _ = tick.tick() => {
                let snap = app.scene.snapshot();
                if snap.version != announced {
                    announced = snap.version;
                    let msg = serde_json::json!({"kind": "scene", "version": snap.version, "num_gaussians": snap.gaussians.len()});
                    if !send_text(&mut socket, msg).await {
                        return;
                    }
                }
                // In the reference view, a new snapshot is shown from the current camera at rest quality.
                if snap.version != shown_version && pending.is_none() {
                    if let Some(mut req) = last.clone() {
                        req.set_moving(false);
                        pending = Some(req);
                    }
                }
                if let Some(status) = snap.status {
                    if !send_text(&mut socket, serde_json::json!({"kind": "status", "status": status})).await {
                        return;
                    }
                }
            }
        }
    }
}

struct ClientGuard(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for ClientGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page learns which dataset cameras are fisheyes (to say it draws them as pinholes); a
    /// pinhole's entry is unchanged.
    #[test]
    fn hello_marks_fisheye_views() {
        let mut cam = Camera::look_at([0.0, 0.0, -3.0], [0.0; 3], [0.0, -1.0, 0.0], 60.0, 64, 48);
        let view = |cam: &Camera| {
            serde_json::to_value(HelloView {
                name: "v",
                camera: WireCamera::from(cam),
                fisheye: cam.projection == splat_core::Projection::Equidistant,
            })
            .unwrap()
        };
        let pinhole = view(&cam);
        assert!(pinhole.get("fisheye").is_none(), "{pinhole}");
        cam.projection = splat_core::Projection::Equidistant;
        assert_eq!(view(&cam)["fisheye"], true);
    }
}
