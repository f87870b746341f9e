//! The viewer end to end: `splat view` serves the page, headless Chromium (driven by playwright-core,
//! `tests/e2e/viewer.mjs`) waits for a frame, which must equal a direct render of the same camera
//! pixel for pixel (frames at rest are PNG), drags to orbit and gets a different frame. Raw HTTP
//! requests check that no path outside the page's own routes is served, and raw WebSocket clients that
//! send garbage, oversized messages or vanish mid-frame do not take the server down.
//!
//! Needs node, `tests/e2e/node_modules` (`npm ci --prefix tests/e2e`) and Chromium (`/usr/bin/chromium`,
//! or `CHROMIUM`); `.ci/run` installs them and sets `SPLAT_REQUIRE_BROWSER=1`, which turns their absence
//! into a failure instead of a skip.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn browser_available() -> Result<(), String> {
    let chromium = std::env::var("CHROMIUM").unwrap_or("/usr/bin/chromium".into());
    if !Path::new(&chromium).exists() {
        return Err(format!("{chromium} not found (apt-get install chromium)"));
    }
    if Command::new("node").arg("--version").output().is_err() {
        return Err("node not found".into());
    }
    if !repo()
        .join("tests/e2e/node_modules/playwright-core")
        .is_dir()
    {
        return Err("tests/e2e/node_modules missing (npm ci --prefix tests/e2e)".into());
    }
    Ok(())
}

struct Viewer {
    child: Child,
    port: u16,
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_viewer(ply: &Path) -> Viewer {
    let mut child = Command::new(env!("CARGO_BIN_EXE_splat"))
        .arg("view")
        .arg(ply)
        .args(["--port", "0", "--up", "0,0,1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no URL in {line:?}"));
    Viewer { child, port }
}

/// Sends `request` verbatim; returns the status code and body.
fn raw_http(port: u16, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).to_string();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, text)
}

/// A WebSocket client by hand: handshake, then `frames` (masked text frames of these payloads), then
/// the socket is dropped without a close frame.
fn rude_ws_client(port: u16, payloads: &[Vec<u8>], wait_for_reply: bool) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .unwrap();
    let mut buf = [0u8; 1024];
    let n = s.read(&mut buf).unwrap();
    assert!(
        String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 101"),
        "no upgrade"
    );
    for p in payloads {
        let mut frame = vec![0x81u8];
        let len = p.len();
        if len < 126 {
            frame.push(0x80 | len as u8);
        } else if len < 65536 {
            frame.push(0x80 | 126);
            frame.extend((len as u16).to_be_bytes());
        } else {
            frame.push(0x80 | 127);
            frame.extend((len as u64).to_be_bytes());
        }
        let mask = [1u8, 2, 3, 4];
        frame.extend(mask);
        frame.extend(p.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        if s.write_all(&frame).is_err() {
            break;
        }
    }
    if wait_for_reply {
        // Read a little of the reply (the hello, maybe part of a frame), then vanish mid-frame.
        let _ = s.read(&mut buf);
    }
}

fn camera_from_header(h: &serde_json::Value) -> splat_core::Camera {
    let c: Vec<f64> = h["camera"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    splat_core::Camera {
        width: h["width"].as_u64().unwrap() as u32,
        height: h["height"].as_u64().unwrap() as u32,
        fx: c[0],
        fy: c[1],
        cx: c[2],
        cy: c[3],
        rotation: [
            [c[4], c[5], c[6]],
            [c[7], c[8], c[9]],
            [c[10], c[11], c[12]],
        ],
        translation: [c[13], c[14], c[15]],
    }
}

fn decode_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let img = image::open(path).unwrap().to_rgb8();
    (img.width(), img.height(), img.into_raw())
}

fn direct_render(scene: &splat_core::Gaussians<f32>, cam: &splat_core::Camera) -> Vec<u8> {
    let mut backend = splat_render::CpuBackend::new();
    let mut buffers = splat_render::Buffers::default();
    let settings = splat_render::RenderSettings::new(scene.sh_degree);
    splat_render::render(&mut backend, scene, cam, &settings, &mut buffers);
    splat_io::images::to_rgb8(cam.width, cam.height, &buffers.raster.image).unwrap()
}

#[test]
fn the_viewer_in_headless_chromium() {
    if let Err(why) = browser_available() {
        if std::env::var_os("SPLAT_REQUIRE_BROWSER").is_some() {
            panic!("browser test required but {why}");
        }
        eprintln!("skipping the browser test: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ply = dir.path().join("scene.ply");
    let o = Command::new(env!("CARGO_BIN_EXE_splat"))
        .args(["builtin-scene", "--gaussians", "3000", "--out"])
        .arg(&ply)
        .output()
        .unwrap();
    assert!(o.status.success());
    let viewer = start_viewer(&ply);
    let port = viewer.port;

    // Only the page's own routes answer.
    let (code, body) = raw_http(port, "/");
    assert_eq!(code, 200);
    assert!(body.contains("splat viewer"));
    for path in [
        "/../Cargo.toml",
        "/%2e%2e/%2e%2e/Cargo.toml",
        "/..%2f..%2fCargo.toml",
        "/gt/../../etc/passwd",
        "/gt/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/gt/0",
        "/index.html",
        "/assets/index.html",
        "/crates/viewer/assets/index.html",
        "/etc/passwd",
        "//etc/passwd",
    ] {
        let (code, body) = raw_http(port, path);
        assert!(code == 404 || code == 400, "{path} answered {code}: {body}");
        assert!(!body.contains("root:") && !body.contains("[workspace]"));
    }

    // Rude clients: garbage, an oversized message, a valid request then gone mid-frame.
    rude_ws_client(port, &[b"{not json".to_vec()], true);
    rude_ws_client(port, &[vec![b'x'; 100_000]], false);
    let cam = br#"{"kind":"orbit","eye":[6,0,2],"target":[0,0,0.5],"up":[0,0,1],"fov_x":60,"width":2000,"height":1500,"moving":false,"id":1}"#;
    rude_ws_client(port, &[cam.to_vec()], true);
    let nan = br#"{"kind":"orbit","eye":[NaN,0,2],"target":[0,0,0],"up":[0,0,1],"fov_x":60,"width":20,"height":10,"moving":false,"id":2}"#;
    rude_ws_client(port, &[nan.to_vec()], true);
    assert_eq!(raw_http(port, "/").0, 200, "server died");

    // The page in Chromium.
    let out = dir.path().join("browser");
    std::fs::create_dir(&out).unwrap();
    let o = Command::new("node")
        .arg(repo().join("tests/e2e/viewer.mjs"))
        .arg(format!("http://127.0.0.1:{port}/"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let scene = splat_io::read_ply(&ply).unwrap();
    let mut frames = Vec::new();
    for name in ["frame1", "frame2"] {
        let header: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join(format!("{name}.json"))).unwrap())
                .unwrap();
        assert_eq!(header["format"], "png");
        let cam = camera_from_header(&header);
        let (w, h, pixels) = decode_png(&out.join(format!("{name}.png")));
        assert_eq!((w, h), (cam.width, cam.height));
        assert!(w >= 320 && h >= 200, "{w} x {h}");
        let direct = direct_render(&scene, &cam);
        assert!(
            pixels == direct,
            "{name} differs from a direct render of its camera"
        );
        frames.push((header["camera"].clone(), pixels));
    }
    assert_ne!(frames[0].0, frames[1].0, "dragging did not move the camera");
    let changed = frames[0]
        .1
        .iter()
        .zip(&frames[1].1)
        .filter(|(a, b)| a != b)
        .count();
    assert!(
        changed > frames[0].1.len() / 10,
        "orbiting changed only {changed} values"
    );
    assert_eq!(raw_http(port, "/").0, 200);
}
