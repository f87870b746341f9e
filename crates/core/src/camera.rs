//! Pinhole cameras in the OpenCV/COLMAP convention.
//!
//! Camera space: x right, y down, z forward (looking along +z). A camera stores the world-to-camera transform
//! `x_cam = R x_world + t` (COLMAP's `qvec`/`tvec`). Pixel `(i, j)` (column, row) covers the continuous
//! square `[i, i + 1) x [j, j + 1)` and is sampled at its centre `(i + 0.5, j + 0.5)`; a camera-space point
//! projects to `u = fx x / z + cx`, `v = fy y / z + cy` in the same continuous coordinates, so `cx = width / 2`
//! is the middle of the image.

use crate::math::{dot3, mat3_t_vec, Mat3, Vec3};

/// A pinhole camera: intrinsics plus world-to-camera pose. Kept in `f64`; stages convert.
#[derive(Clone, Debug, PartialEq)]
pub struct Camera {
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

    /// `tan` of half the horizontal and vertical fields of view, `(width / 2fx, height / 2fy)`.
    pub fn tan_half_fov(&self) -> (f64, f64) {
        (
            0.5 * self.width as f64 / self.fx,
            0.5 * self.height as f64 / self.fy,
        )
    }

    pub fn num_pixels(&self) -> usize {
        self.width as usize * self.height as usize
    }
}

fn cross(a: Vec3<f64>, b: Vec3<f64>) -> Vec3<f64> {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn normalize(v: Vec3<f64>) -> Vec3<f64> {
    let n = dot3(v, v).sqrt();
    [v[0] / n, v[1] / n, v[2] / n]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::mat3_vec;

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
}

/// Why [`Camera::try_look_at`] has no camera.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LookAtError {
    /// `eye` and `target` coincide (or are not finite).
    SamePoint,
    /// `up` is parallel to the viewing direction (or not finite).
    UpAlongView,
}
