//! Cameras in the OpenCV/COLMAP convention: pinhole, or the equidistant fisheye ([`Projection`]).
//!
//! Camera space: x right, y down, z forward (looking along +z). A camera stores the world-to-camera transform
//! `x_cam = R x_world + t` (COLMAP's `qvec`/`tvec`). Pixel `(i, j)` (column, row) covers the continuous
//! square `[i, i + 1) x [j, j + 1)` and is sampled at its centre `(i + 0.5, j + 0.5)`; a camera-space point
//! projects to `u = fx x / z + cx`, `v = fy y / z + cy` in the same continuous coordinates, so `cx = width / 2`
//! is the middle of the image.

use crate::math::{cross, dot3, mat3_t_vec, mat3_vec, Mat3, Vec3};

/// How a camera maps a camera-space direction to the image.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Projection {
    /// `u = fx x / z + cx` (the default; distorted perspective photos are resampled to it at load).
    #[default]
    Pinhole,
    /// The ideal equidistant fisheye: a direction at angle `theta` from the optical axis lands `theta`
    /// focal lengths from the principal point, `u = fx theta x / r + cx` (`r = sqrt(x^2 + y^2)`), so a
    /// field of view of 180 degrees and more fits. Fisheye photos are resampled to it at load.
    Equidistant,
}

/// A camera: intrinsics, projection and world-to-camera pose. Kept in `f64`; stages convert.
#[derive(Clone, Debug, PartialEq)]
pub struct Camera {
    pub projection: Projection,
    pub width: u32,
    pub height: u32,
    pub fx: f64,
    pub fy: f64,
    pub cx: f64,
    pub cy: f64,
    /// World-to-camera rotation `R`.
    pub rotation: Mat3<f64>,
    /// World-to-camera translation `t`.
    pub translation: Vec3<f64>,
}

impl Camera {
    /// A camera at `eye` looking at `target`, with `up` the world direction that appears up in the image,
    /// the given horizontal field of view (degrees) and a centred principal point.
    pub fn look_at(
        eye: Vec3<f64>,
        target: Vec3<f64>,
        up: Vec3<f64>,
        fov_x_degrees: f64,
        width: u32,
        height: u32,
    ) -> Camera {
        let forward = normalize([target[0] - eye[0], target[1] - eye[1], target[2] - eye[2]]);
        // Image y points down, so the camera's y axis is -up projected orthogonal to forward.
        let right = normalize(cross(forward, up));
        let down = cross(forward, right);
        let rotation = [right, down, forward];
        let translation = [-dot3(right, eye), -dot3(down, eye), -dot3(forward, eye)];
        let fx = 0.5 * width as f64 / (0.5 * fov_x_degrees.to_radians()).tan();
        Camera {
            projection: Projection::Pinhole,
            width,
            height,
            fx,
            fy: fx,
            cx: 0.5 * width as f64,
            cy: 0.5 * height as f64,
            rotation,
            translation,
        }
    }

    /// [`Camera::look_at`] after checking the view is defined: `eye` and `target` distinct, `up` not
    /// along the viewing direction.
    pub fn try_look_at(
        eye: Vec3<f64>,
        target: Vec3<f64>,
        up: Vec3<f64>,
        fov_x_degrees: f64,
        width: u32,
        height: u32,
    ) -> Result<Camera, LookAtError> {
        let d = [target[0] - eye[0], target[1] - eye[1], target[2] - eye[2]];
        let len = dot3(d, d).sqrt();
        if !(len >= 1e-9) {
            return Err(LookAtError::SamePoint);
        }
        let c = cross(d, up);
        if !(dot3(c, c).sqrt() >= 1e-9 * len) {
            return Err(LookAtError::UpAlongView);
        }
        Ok(Camera::look_at(
            eye,
            target,
            up,
            fov_x_degrees,
            width,
            height,
        ))
    }

    /// The camera centre in world space, `-R^T t`.
    pub fn center(&self) -> Vec3<f64> {
        let c = mat3_t_vec(&self.rotation, self.translation);
        [-c[0], -c[1], -c[2]]
    }

    /// Moves the camera's centre to `c` in world space, its orientation kept: `t = -R c`.
    pub fn set_center(&mut self, c: Vec3<f64>) {
        let rc = mat3_vec(&self.rotation, c);
        self.translation = [-rc[0], -rc[1], -rc[2]];
    }

    /// `tan` of half the horizontal and vertical fields of view of a pinhole camera, `(width / 2fx,
    /// height / 2fy)` (for the equidistant fisheye these are the half angles in radians).
    pub fn tan_half_fov(&self) -> (f64, f64) {
        (
            0.5 * self.width as f64 / self.fx,
            0.5 * self.height as f64 / self.fy,
        )
    }

    /// The camera-space unit direction of the ray through continuous pixel coordinates `uv` (the
    /// inverse of [`Camera::project_camera_space`] up to distance).
    pub fn pixel_direction(&self, uv: [f64; 2]) -> Vec3<f64> {
        let (a, b) = ((uv[0] - self.cx) / self.fx, (uv[1] - self.cy) / self.fy);
        match self.projection {
            Projection::Pinhole => normalize([a, b, 1.0]),
            Projection::Equidistant => {
                let theta = a.hypot(b);
                // sin(theta) / theta, 1 on the axis.
                let k = if theta > 0.0 {
                    theta.sin() / theta
                } else {
                    1.0
                };
                [k * a, k * b, theta.cos()]
            }
        }
    }

    /// The camera-space coordinates of a world point, `R x + t`.
    pub fn to_camera_space(&self, world: Vec3<f64>) -> Vec3<f64> {
        let p = mat3_vec(&self.rotation, world);
        [0, 1, 2].map(|i| p[i] + self.translation[i])
    }

    /// Where a camera-space point lands (continuous pixel coordinates) and its depth: `z` for the
    /// pinhole, the distance for the equidistant fisheye (as the renderer sorts). `None` when the
    /// pinhole's `z` is not positive, or at the camera centre.
    pub fn project_camera_space(&self, p: Vec3<f64>) -> Option<([f64; 2], f64)> {
        match self.projection {
            Projection::Pinhole => (p[2] > 0.0).then(|| {
                let uv = [
                    self.fx * p[0] / p[2] + self.cx,
                    self.fy * p[1] / p[2] + self.cy,
                ];
                (uv, p[2])
            }),
            Projection::Equidistant => {
                let r = p[0].hypot(p[1]);
                let dist = r.hypot(p[2]);
                if !(dist > 0.0) {
                    return None;
                }
                // theta / r, 1 / z on the axis.
                let rho = if r > 0.0 {
                    r.atan2(p[2]) / r
                } else {
                    1.0 / p[2]
                };
                let uv = [
                    self.fx * rho * p[0] + self.cx,
                    self.fy * rho * p[1] + self.cy,
                ];
                Some((uv, dist))
            }
        }
    }

    pub fn num_pixels(&self) -> usize {
        self.width as usize * self.height as usize
    }
}

fn normalize(v: Vec3<f64>) -> Vec3<f64> {
    let n = dot3(v, v).sqrt();
    [v[0] / n, v[1] / n, v[2] / n]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pixel_direction_inverts_the_projection() {
        let pin = Camera::look_at([0.3, -1.0, -2.0], [0.0; 3], [0.0, -1.0, 0.0], 70.0, 64, 48);
        let fish = Camera {
            projection: Projection::Equidistant,
            fx: 18.0,
            fy: 18.0,
            ..pin.clone()
        };
        for cam in [pin, fish] {
            for uv in [[32.0, 24.0], [1.5, 2.0], [63.0, 40.5], [10.0, 47.0]] {
                let d = cam.pixel_direction(uv);
                assert!((dot3(d, d) - 1.0).abs() < 1e-12);
                let (back, depth) = cam.project_camera_space(d.map(|v| 2.5 * v)).unwrap();
                assert!((back[0] - uv[0]).abs() < 1e-9 && (back[1] - uv[1]).abs() < 1e-9);
                assert!(depth > 0.0);
            }
        }
    }

    #[test]
    fn look_at_puts_target_on_the_optical_axis_and_up_upwards() {
        let cam = Camera::look_at(
            [1.0, 2.0, 3.0],
            [0.0, 0.0, 0.0],
            [0.0, 0.0, 1.0],
            60.0,
            64,
            48,
        );
        let c = cam.center();
        for i in 0..3 {
            assert!((c[i] - [1.0, 2.0, 3.0][i]).abs() < 1e-12);
        }
        let p = mat3_vec(&cam.rotation, [0.0, 0.0, 0.0]);
        let p = [
            p[0] + cam.translation[0],
            p[1] + cam.translation[1],
            p[2] + cam.translation[2],
        ];
        assert!(p[0].abs() < 1e-12 && p[1].abs() < 1e-12 && p[2] > 0.0);
        // A point above the target projects above the image centre (smaller v).
        let q = mat3_vec(&cam.rotation, [0.0, 0.0, 0.5]);
        let y = q[1] + cam.translation[1];
        assert!(y < 0.0);
    }

    #[test]
    fn projections_of_camera_space_points() {
        let mut cam = Camera::look_at([0.0; 3], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0], 90.0, 64, 48);
        let p = [0.5, -0.25, 2.0];
        let (uv, depth) = cam.project_camera_space(p).unwrap();
        assert_eq!(
            (uv, depth),
            ([cam.fx * 0.25 + 32.0, cam.fy * -0.125 + 24.0], 2.0)
        );
        assert!(cam.project_camera_space([0.1, 0.0, -1.0]).is_none());
        // The fisheye: theta focal lengths from the centre, beside and behind the camera too.
        cam.projection = Projection::Equidistant;
        for p in [[0.5, -0.25, 2.0], [1.0, 0.0, 0.0], [0.3, 0.4, -1.0]] {
            let (uv, depth) = cam.project_camera_space(p).unwrap();
            let r: f64 = p[0] * p[0] + p[1] * p[1];
            let theta = r.sqrt().atan2(p[2]);
            let off = ((uv[0] - 32.0) / cam.fx).hypot((uv[1] - 24.0) / cam.fy);
            assert!(
                (off - theta).abs() < 1e-12 && (depth - (r + p[2] * p[2]).sqrt()).abs() < 1e-12
            );
        }
        let (uv, _) = cam.project_camera_space([0.0, 0.0, 3.0]).unwrap();
        assert_eq!(uv, [32.0, 24.0]);
    }
}

/// Why [`Camera::try_look_at`] has no camera.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LookAtError {
    /// `eye` and `target` coincide (or are not finite).
    SamePoint,
    /// `up` is parallel to the viewing direction (or not finite).
    UpAlongView,
}
