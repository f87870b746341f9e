//! Lens distortion, as COLMAP models it.
//!
//! A camera-space point `(X, Y, Z)` has normalized coordinates `(x, y) = (X / Z, Y / Z)`; the lens moves
//! them to `distort(x, y)` and the pixel is `fx x' + cx, fy y' + cy`. The models (COLMAP's
//! `src/colmap/camera/models.h`):
//! - [`Distortion::OpenCv`] covers SIMPLE_RADIAL (`k1`), RADIAL (`k1, k2`), OPENCV (`k1, k2, p1, p2`) and
//!   FULL_OPENCV (`k1..k6, p1, p2`): with `r^2 = x^2 + y^2`,
//!   `s = (1 + k1 r^2 + k2 r^4 + k3 r^6) / (1 + k4 r^2 + k5 r^4 + k6 r^6)`,
//!   `x' = x s + 2 p1 x y + p2 (r^2 + 2 x^2)`, `y' = y s + p1 (r^2 + 2 y^2) + 2 p2 x y`
//!   (OpenCV's rational model; the first three are the case `k3 = .. = k6 = 0`).
//! - [`Distortion::Fov`] (Devernay and Faugeras' field-of-view model, COLMAP's FOV): `(x', y') = (x, y)
//!   atan(2 r tan(omega / 2)) / (r omega)`, with series where `omega^2` or `r^2` is under 1e-4.
//!
//! - [`Distortion::Fisheye`]: COLMAP's fisheye models, as a distortion of the ideal equidistant
//!   camera's coordinates.
//!
//! A distorted perspective photo is resampled at load to the pinhole camera with the same `fx, fy, cx,
//! cy` (the dataset loader); a fisheye photo to the equidistant camera with them, which the renderer
//! draws natively (no pinhole image holds a field of view near 180 degrees).

/// A perspective lens's distortion of normalized image coordinates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Distortion {
    /// An ideal pinhole.
    None,
    /// OpenCV's radial-tangential model with the rational radial factor: `k = [k1, .., k6]`,
    /// `p = [p1, p2]`.
    OpenCv { k: [f64; 6], p: [f64; 2] },
    /// The field-of-view model with its `omega` (radians).
    Fov { omega: f64 },
    /// A fisheye: the ideal equidistant camera ([`crate::Projection::Equidistant`]) followed by a
    /// distortion of its coordinates `e = theta (x, y) / r` (COLMAP's THIN_PRISM_FISHEYE form; with
    /// `p = s = 0` it is OPENCV_FISHEYE's `theta_d = theta (1 + k1 theta^2 + .. + k4 theta^8)`, and
    /// RADIAL_FISHEYE and SIMPLE_RADIAL_FISHEYE with fewer `k`): with `r^2 = |e|^2 = theta^2`,
    /// `e' = e (1 + k1 r^2 + k2 r^4 + k3 r^6 + k4 r^8) + tangential (p) + prism (s r^2)`.
    Fisheye {
        k: [f64; 4],
        p: [f64; 2],
        s: [f64; 2],
    },
}

impl Distortion {
    /// OpenCV's four-parameter model `k1, k2, p1, p2` (COLMAP's OPENCV; RADIAL and SIMPLE_RADIAL with
    /// zeros); [`Distortion::None`] when all are zero.
    pub fn opencv(k1: f64, k2: f64, p1: f64, p2: f64) -> Distortion {
        Distortion::OpenCv {
            k: [k1, k2, 0.0, 0.0, 0.0, 0.0],
            p: [p1, p2],
        }
        .simplified()
    }

    /// [`Distortion::None`] for a perspective model whose parameters make it the identity (a fisheye
    /// stays one).
    pub fn simplified(self) -> Distortion {
        if self.is_identity() && !self.is_fisheye() {
            Distortion::None
        } else {
            self
        }
    }

    /// Whether the model leaves every point where it is.
    pub fn is_identity(&self) -> bool {
        match *self {
            Distortion::None => true,
            Distortion::OpenCv { k, p } => k.iter().chain(&p).all(|&v| v == 0.0),
            Distortion::Fov { omega } => omega == 0.0,
            Distortion::Fisheye { k, p, s } => k.iter().chain(&p).chain(&s).all(|&v| v == 0.0),
        }
    }

    /// Whether the lens is a fisheye: its photos go to the equidistant camera, not to a pinhole (even
    /// with no distortion left to remove).
    pub fn is_fisheye(&self) -> bool {
        matches!(self, Distortion::Fisheye { .. })
    }

    /// [`Distortion::Fisheye`] with OPENCV_FISHEYE's `k1..k4` only.
    pub fn fisheye(k: [f64; 4]) -> Distortion {
        Distortion::Fisheye {
            k,
            p: [0.0; 2],
            s: [0.0; 2],
        }
    }

    /// The derivative of a fisheye's distorted radius along the ray at `theta` (radians):
    /// `d/dtheta theta (1 + k1 theta^2 + ..)`, 1 for the other models. Where it is not positive the
    /// lens folds back and the model describes no photo.
    pub fn radial_slope(&self, theta: f64) -> f64 {
        match *self {
            Distortion::Fisheye { k, .. } => {
                let t2 = theta * theta;
                1.0 + t2 * (3.0 * k[0] + t2 * (5.0 * k[1] + t2 * (7.0 * k[2] + t2 * 9.0 * k[3])))
            }
            _ => 1.0,
        }
    }

    /// The parameters, for checks and messages.
    pub fn params(&self) -> Vec<f64> {
        match *self {
            Distortion::None => Vec::new(),
            Distortion::OpenCv { k, p } => vec![k[0], k[1], p[0], p[1], k[2], k[3], k[4], k[5]],
            Distortion::Fov { omega } => vec![omega],
            Distortion::Fisheye { k, p, s } => [k.as_slice(), &p, &s].concat(),
        }
    }

    /// Why the parameters cannot describe a lens, if they cannot: not finite, or a FOV `omega` outside
    /// `(-pi, pi)` (its `tan(omega / 2)` is infinite at `pi`).
    pub fn check(&self) -> Result<(), String> {
        if self.params().iter().any(|v| !v.is_finite()) {
            return Err(format!(
                "distortion parameters are not finite: {:?}",
                self.params()
            ));
        }
        if let Distortion::Fov { omega } = *self {
            if omega.abs() >= std::f64::consts::PI {
                return Err(format!("FOV omega {omega} is not inside (-pi, pi) radians"));
            }
        }
        Ok(())
    }

    /// The distorted normalized coordinates of `(x, y)`: pinhole coordinates `X / Z, Y / Z` for the
    /// perspective models, equidistant ones `theta (X, Y) / r` for the fisheye. Not finite where the
    /// model is undefined (a rational model's denominator at zero).
    pub fn distort(&self, x: f64, y: f64) -> (f64, f64) {
        match *self {
            Distortion::None => (x, y),
            Distortion::OpenCv { k, p } => {
                let r2 = x * x + y * y;
                let num = 1.0 + r2 * (k[0] + r2 * (k[1] + r2 * k[2]));
                let den = 1.0 + r2 * (k[3] + r2 * (k[4] + r2 * k[5]));
                let s = num / den;
                let [p1, p2] = p;
                (
                    x * s + 2.0 * p1 * x * y + p2 * (r2 + 2.0 * x * x),
                    y * s + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * x * y,
                )
            }
            Distortion::Fov { omega } => {
                let f = fov_factor(omega, x * x + y * y);
                (x * f, y * f)
            }
            Distortion::Fisheye { k, p, s } => {
                let r2 = x * x + y * y;
                let radial = 1.0 + r2 * (k[0] + r2 * (k[1] + r2 * (k[2] + r2 * k[3])));
                let [p1, p2] = p;
                (
                    x * radial + 2.0 * p1 * x * y + p2 * (r2 + 2.0 * x * x) + s[0] * r2,
                    y * radial + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * x * y + s[1] * r2,
                )
            }
        }
    }
}

/// The FOV model's radial factor `atan(2 r tan(omega / 2)) / (r omega)`, with second-order series where
/// `omega^2` or `r^2` is under 1e-4 (COLMAP's thresholds; the closed form is 0 / 0 there). In `omega`
/// the series is `1 + omega^2 / 12 - omega^2 r^2 / 3`; COLMAP's `Distortion` has the signs of its
/// `Undistortion` series there, a difference under 1e-5 of the radius at these `omega`.
fn fov_factor(omega: f64, r2: f64) -> f64 {
    const EPS: f64 = 1e-4;
    let omega2 = omega * omega;
    if omega2 < EPS {
        1.0 + omega2 / 12.0 - omega2 * r2 / 3.0
    } else if r2 < EPS {
        let t = (0.5 * omega).tan();
        -2.0 * t * (4.0 * r2 * t * t - 3.0) / (3.0 * omega)
    } else {
        let r = r2.sqrt();
        (2.0 * r * (0.5 * omega).tan()).atan() / (r * omega)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opencv_reduces_to_the_four_parameter_form() {
        let (k1, k2, p1, p2) = (-0.12, 0.03, 0.001, -0.002);
        let d = Distortion::opencv(k1, k2, p1, p2);
        for (x, y) in [(0.3, -0.2), (-0.5, 0.4), (0.0, 0.1)] {
            let r2: f64 = x * x + y * y;
            let radial = 1.0 + k1 * r2 + k2 * r2 * r2;
            let want = (
                x * radial + 2.0 * p1 * x * y + p2 * (r2 + 2.0 * x * x),
                y * radial + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * x * y,
            );
            let got = d.distort(x, y);
            assert!((got.0 - want.0).abs() < 1e-15 && (got.1 - want.1).abs() < 1e-15);
        }
        assert_eq!(Distortion::opencv(0.0, 0.0, 0.0, 0.0), Distortion::None);
    }

    #[test]
    fn rational_denominator_divides_the_radial_factor() {
        let d = Distortion::OpenCv {
            k: [0.1, 0.0, 0.0, 0.2, 0.0, 0.0],
            p: [0.0; 2],
        };
        let (x, y) = (0.4, 0.3); // r^2 = 0.25
        let s = (1.0 + 0.1 * 0.25) / (1.0 + 0.2 * 0.25);
        let got = d.distort(x, y);
        assert!((got.0 - x * s).abs() < 1e-15 && (got.1 - y * s).abs() < 1e-15);
    }

    #[test]
    fn fisheye_is_kannala_brandt_in_theta() {
        // COLMAP's OPENCV_FISHEYE from a camera-space point, against the equidistant coordinates.
        let k = [0.05, -0.01, 0.002, -0.0005];
        let d = Distortion::fisheye(k);
        for (x, y) in [(0.3f64, -0.2f64), (1.5, 0.7), (-0.01, 0.02)] {
            let r = (x * x + y * y).sqrt();
            let theta = r.atan();
            let t2 = theta * theta;
            let theta_d = theta * (1.0 + t2 * (k[0] + t2 * (k[1] + t2 * (k[2] + t2 * k[3]))));
            let want = (x * theta_d / r, y * theta_d / r);
            let got = d.distort(theta * x / r, theta * y / r);
            assert!((got.0 - want.0).abs() < 1e-14 && (got.1 - want.1).abs() < 1e-14);
        }
        // No distortion is still a fisheye; the slope is the derivative of theta_d.
        assert!(Distortion::fisheye([0.0; 4]).simplified().is_fisheye());
        let h = 1e-6;
        let td = |t: f64| d.distort(t, 0.0).0;
        let fd = (td(1.2 + h) - td(1.2 - h)) / (2.0 * h);
        assert!((d.radial_slope(1.2) - fd).abs() < 1e-8);
    }

    #[test]
    fn fov_series_meet_the_closed_form() {
        // Each branch against the closed form just across its threshold (the series' error is
        // fourth order: under 1e-8 there).
        let closed = |omega: f64, r2: f64| {
            let r = r2.sqrt();
            (2.0 * r * (0.5 * omega).tan()).atan() / (r * omega)
        };
        for &(omega, r2) in &[(0.0099, 0.3), (0.9, 0.99e-4), (0.9, 0.3), (2.5, 1.0)] {
            let (a, b) = (fov_factor(omega, r2), closed(omega, r2));
            assert!((a - b).abs() < 1e-8, "omega {omega} r2 {r2}: {a} vs {b}");
        }
        // A wide lens pulls the image in: distorted radius below the pinhole one.
        let (x, _) = Distortion::Fov { omega: 1.5 }.distort(1.0, 0.0);
        assert!(x > 0.0 && x < 1.0);
        assert!(Distortion::Fov { omega: 3.2 }.check().is_err());
        assert!(Distortion::Fov { omega: 1.5 }.check().is_ok());
    }
}
