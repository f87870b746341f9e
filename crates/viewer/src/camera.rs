//! Camera requests of the reference (server-side) render, and their validation.
//!
//! The page keeps its camera in the COLMAP/OpenCV convention splat uses everywhere (`x_cam = R x_world
//! + t`, x right, y down, z forward, pinhole `fx, fy, cx, cy` in pixels) and sends it verbatim as a
//! [`CameraRequest::Pinhole`], so the reference render and the in-browser render see the same camera.

use serde::{Deserialize, Serialize};
use splat_core::Camera;

/// Largest frame side the server renders.
pub const MAX_SIDE: u32 = 4096;

/// A pinhole camera as JSON: world-to-camera rotation rows and translation, intrinsics in pixels.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct WireCamera {
    pub width: u32,
    pub height: u32,
    pub fx: f64,
    pub fy: f64,
    pub cx: f64,
    pub cy: f64,
    pub rotation: [[f64; 3]; 3],
    pub translation: [f64; 3],
}

impl From<&Camera> for WireCamera {
    fn from(c: &Camera) -> Self {
        WireCamera {
            width: c.width,
            height: c.height,
            fx: c.fx,
            fy: c.fy,
            cx: c.cx,
            cy: c.cy,
            rotation: c.rotation,
            translation: c.translation,
        }
    }
}

impl WireCamera {
    /// What is wrong with the camera for rendering, if anything.
    pub fn validate(&self) -> Result<(), String> {
        let (w, h) = (self.width, self.height);
        check_size(w, h)?;
        let numbers = [self.fx, self.fy, self.cx, self.cy]
            .into_iter()
            .chain(self.translation);
        if numbers
            .chain(self.rotation.into_iter().flatten())
            .any(|v| !v.is_finite())
        {
            return Err("non-finite camera".into());
        }
        let side = w.max(h) as f64;
        let sane = |f: f64| f > 1e-3 * side && f < 1e4 * side;
        if !(sane(self.fx) && sane(self.fy)) {
            return Err(format!(
                "focal lengths {} x {} px are absurd for {w} x {h}",
                self.fx, self.fy
            ));
        }
        if self.cx.abs() > 4.0 * side || self.cy.abs() > 4.0 * side {
            return Err(format!(
                "principal point ({}, {}) far outside the frame",
                self.cx, self.cy
            ));
        }
        if !is_rotation(&self.rotation) {
            return Err("the rotation is not orthonormal with determinant 1".into());
        }
        Ok(())
    }

    pub fn to_camera(&self) -> Camera {
        Camera {
            projection: splat_core::Projection::Pinhole,
            width: self.width,
            height: self.height,
            fx: self.fx,
            fy: self.fy,
            cx: self.cx,
            cy: self.cy,
            rotation: self.rotation,
            translation: self.translation,
        }
    }
}

/// A camera request from the page.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CameraRequest {
    /// Any pinhole camera.
    Pinhole {
        #[serde(flatten)]
        camera: WireCamera,
        moving: bool,
        id: u64,
    },
    /// An orbit camera: eye, target, up, horizontal field of view, frame size.
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

fn check_size(width: u32, height: u32) -> Result<(), String> {
    if width == 0 || height == 0 || width > MAX_SIDE || height > MAX_SIDE {
        return Err(format!(
            "frame size {width} x {height} outside 1..={MAX_SIDE}"
        ));
    }
    Ok(())
}

impl CameraRequest {
    pub fn id(&self) -> u64 {
        match self {
            CameraRequest::Pinhole { id, .. }
            | CameraRequest::Orbit { id, .. }
            | CameraRequest::Dataset { id, .. } => *id,
        }
    }

    pub fn moving(&self) -> bool {
        match self {
            CameraRequest::Pinhole { moving, .. }
            | CameraRequest::Orbit { moving, .. }
            | CameraRequest::Dataset { moving, .. } => *moving,
        }
    }

    pub fn set_moving(&mut self, value: bool) {
        match self {
            CameraRequest::Pinhole { moving, .. }
            | CameraRequest::Orbit { moving, .. }
            | CameraRequest::Dataset { moving, .. } => *moving = value,
        }
    }

    /// The camera to render, at full resolution; `Err` says what is wrong with the request.
    pub fn camera(&self, dataset: &[Camera]) -> Result<Camera, String> {
        match *self {
            CameraRequest::Pinhole { ref camera, .. } => {
                camera.validate()?;
                Ok(camera.to_camera())
            }
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
                check_size(width, height)?;
                if !(fov_x > 1.0 && fov_x < 170.0) {
                    return Err(format!("field of view {fov_x} outside (1, 170)"));
                }
                Camera::try_look_at(eye, target, up, fov_x, width, height)
                    .map_err(|e| format!("degenerate camera: {e:?}"))
            }
            CameraRequest::Dataset {
                index, max_width, ..
            } => {
                let cam = dataset
                    .get(index)
                    .ok_or_else(|| format!("no dataset view {index}"))?;
                let max_width = max_width.clamp(16, MAX_SIDE);
                Ok(if cam.width > max_width {
                    scaled(cam, max_width as f64 / cam.width as f64)
                } else {
                    cam.clone()
                })
            }
        }
    }
}

/// Rows orthonormal to 1e-4 and a right-handed frame.
fn is_rotation(r: &[[f64; 3]; 3]) -> bool {
    let dot = |a: &[f64; 3], b: &[f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    for i in 0..3 {
        for j in 0..3 {
            let want = if i == j { 1.0 } else { 0.0 };
            if (dot(&r[i], &r[j]) - want).abs() > 1e-4 {
                return false;
            }
        }
    }
    let c = [
        r[0][1] * r[1][2] - r[0][2] * r[1][1],
        r[0][2] * r[1][0] - r[0][0] * r[1][2],
        r[0][0] * r[1][1] - r[0][1] * r[1][0],
    ];
    dot(&c, &r[2]) > 0.0
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pinhole(json: &str) -> Result<Camera, String> {
        serde_json::from_str::<CameraRequest>(json)
            .map_err(|e| e.to_string())?
            .camera(&[])
    }

    #[test]
    fn pinhole_requests_are_validated() {
        let ok = r#"{"kind":"pinhole","width":64,"height":48,"fx":50,"fy":50,"cx":32,"cy":24,
            "rotation":[[1,0,0],[0,1,0],[0,0,1]],"translation":[0,0,4],"moving":false,"id":1}"#;
        let cam = pinhole(ok).unwrap();
        assert_eq!((cam.width, cam.fx, cam.translation[2]), (64, 50.0, 4.0));
        let bad = [
            ok.replace("[0,0,1]]", "[0,0,-1]]"),
            ok.replace("[0,1,0]", "[0,2,0]"),
            ok.replace("\"fx\":50", "\"fx\":0"),
            ok.replace("\"cx\":32", "\"cx\":1e9"),
            ok.replace("\"width\":64", "\"width\":5000"),
            ok.replace("\"width\":64", "\"width\":0"),
            ok.replace("[0,0,4]", "[0,0,1e400]"),
            ok.replace("\"fy\":50", "\"fy\":\"x\""),
        ];
        for b in bad {
            assert!(pinhole(&b).is_err(), "accepted {b}");
        }
    }

    #[test]
    fn dataset_requests_scale_to_the_page() {
        let cam = Camera {
            projection: splat_core::Projection::Pinhole,
            width: 800,
            height: 600,
            fx: 700.0,
            fy: 710.0,
            cx: 401.0,
            cy: 299.0,
            rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            translation: [0.0; 3],
        };
        let req = CameraRequest::Dataset {
            index: 0,
            max_width: 400,
            moving: false,
            id: 3,
        };
        let c = req.camera(std::slice::from_ref(&cam)).unwrap();
        assert_eq!((c.width, c.height, c.fx, c.cy), (400, 300, 350.0, 149.5));
        let missing = CameraRequest::Dataset {
            index: 1,
            max_width: 400,
            moving: false,
            id: 3,
        };
        assert!(missing.camera(&[cam]).is_err());
    }
}
