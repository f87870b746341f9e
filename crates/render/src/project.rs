//! The project stage: from 3D Gaussians to screen-space ellipses (EWA splatting).
//!
//! For each Gaussian:
//! - `p = R mean + t` (camera space); culled when `p.z <= 0.2` (the near plane).
//! - `Sigma = M M^T` with `M = R_q diag(exp(log_scale))`, `R_q` from the normalized quaternion.
//! - `Sigma2D = T Sigma T^T + 0.3 I` with `T = J R` and `J` the Jacobian of the perspective map at `p`, built
//!   from `x/z` and `y/z` clamped to `1.3 tan(half fov)` (so Gaussians far outside the view do not explode).
//!   The `0.3` px dilation is the original low-pass filter.
//! - The equidistant fisheye ([`splat_core::Projection::Equidistant`], [`crate::fisheye`]) takes its own
//!   pixel and Jacobian (exact, no clamp); it culls by distance (`|p| <= 0.2`) and by the angle from the
//!   axis (beyond 1.3 times the image corner's, at most [`MAX_FISHEYE_THETA`]), and sorts by distance.
//! - conic = `Sigma2D^-1`; culled when `det(Sigma2D) <= 0` (degenerate) or anything is not finite.
//! - radius = `ceil(3 sqrt(lambda_max))`, `lambda_max = mid + sqrt(max(0.1, mid^2 - det))`; the Gaussian is
//!   listed in the tiles its square `[u +- r] x [v +- r]` touches and culled when that is none.
//! - opacity = `sigmoid(logit)`; colour from [`crate::sh`].
//! - Antialiased scenes ([`Gaussians::antialiased`], Mip-Splatting's 2D filter as gsplat's `antialiased`
//!   mode): the opacity is multiplied by `rho = sqrt(det(Sigma2D) / det(Sigma2D + 0.3 I))` (at least
//!   0.005), so that the dilation widens a small splat without adding energy: a Gaussian far below a
//!   pixel fades instead of turning into a 0.3 px^2 blob of full opacity. The rasterizer's 1/255 cut
//!   then applies to `rho o`.

use splat_core::math::{cast3, cast_mat3, mat3_vec, matmul, quat_to_mat, transpose, Mat3, Vec3};
use splat_core::{sigmoid, Camera, Gaussians, Projection, Real, TileGrid, TileRect};

use crate::fisheye;

use crate::sh::{active_coeffs, color};
use crate::types::{Projected, ProjectedSlices, RenderSettings};

/// Floating-point operations per Gaussian: quaternion to matrix 25, `M = R S` 9, `Sigma = M M^T` 45,
/// camera transform 18, Jacobian 8, `T = J R` 30, `T Sigma T^T` 54, inverse and radius 20, SH of degree 3
/// (direction 12, basis 40, 3 x 16 multiply-adds 96) ~150.
pub const FLOPS_PER_GAUSSIAN: f64 = 360.0;

/// Gaussians with camera-space depth at or below this are culled.
pub const NEAR_PLANE: f64 = 0.2;
/// Added to the diagonal of the 2D covariance (pixels squared).
pub const DILATION: f64 = 0.3;
/// The floor of the antialiasing compensation `rho` (squared in [`compensation`]).
pub const MIN_COMPENSATION: f64 = 0.005;
/// `x/z`, `y/z` are clamped to this many times `tan(half fov)` before building the Jacobian; a fisheye
/// culls Gaussians further from the axis than this many times the image corner's angle.
pub const FOV_CLAMP: f64 = 1.3;
/// The fisheye's cull angle is at most this (radians, 0.9 pi): near `pi` the projection folds the whole
/// backward hemisphere onto the image circle.
pub const MAX_FISHEYE_THETA: f64 = 0.9 * std::f64::consts::PI;

/// The camera converted to the stage's scalar type.
#[derive(Clone, Copy, Debug)]
pub struct CameraParams<F> {
    pub rotation: Mat3<F>,
    pub translation: Vec3<F>,
    pub center: Vec3<F>,
    pub fx: F,
    pub fy: F,
    pub cx: F,
    pub cy: F,
    pub lim_x: F,
    pub lim_y: F,
    /// The equidistant fisheye ([`crate::fisheye`]) instead of the pinhole.
    pub fisheye: bool,
    /// Fisheye: Gaussians further than this from the optical axis (radians) are culled.
    pub max_theta: F,
}

impl<F: Real> CameraParams<F> {
    pub fn new(cam: &Camera) -> Self {
        let (tx, ty) = cam.tan_half_fov();
        CameraParams {
            rotation: cast_mat3(&cam.rotation),
            translation: cast3(cam.translation),
            center: cast3(cam.center()),
            fx: F::c(cam.fx),
            fy: F::c(cam.fy),
            cx: F::c(cam.cx),
            cy: F::c(cam.cy),
            lim_x: F::c(FOV_CLAMP * tx),
            lim_y: F::c(FOV_CLAMP * ty),
            fisheye: cam.projection == Projection::Equidistant,
            max_theta: F::c((FOV_CLAMP * tx.hypot(ty)).min(MAX_FISHEYE_THETA)),
        }
    }
}

/// Intermediate values of one Gaussian's projection, shared by the forward and the backward.
#[derive(Clone, Copy, Debug)]
pub struct Geometry<F> {
    /// Camera-space mean.
    pub p: Vec3<F>,
    /// Normalized quaternion and the norm it had.
    pub quat: [F; 4],
    pub quat_norm: F,
    pub rot: Mat3<F>,
    pub scales: Vec3<F>,
    /// `M = R_q S`.
    pub m: Mat3<F>,
    pub sigma: Mat3<F>,
    /// `x/z` and `y/z` after clamping, and whether each was inside the clamp range.
    pub xz: F,
    pub yz: F,
    pub x_in: bool,
    pub y_in: bool,
    /// The 2D mean.
    pub uv: [F; 2],
    /// Depth for sorting: `z`, or the distance for the fisheye.
    pub depth: F,
    /// The projection's Jacobian `J` at `p` (2 x 3) and `T = J R`.
    pub j: [[F; 3]; 2],
    pub t: [[F; 3]; 2],
    /// Dilated 2D covariance `(a, b, c)`.
    pub cov2d: [F; 3],
}

/// Computes the projection geometry; `None` when the Gaussian is behind the near plane.
#[inline]
pub fn geometry<F: Real>(
    mean: Vec3<F>,
    log_scale: Vec3<F>,
    rotation: [F; 4],
    cam: &CameraParams<F>,
) -> Option<Geometry<F>> {
    let pr = mat3_vec(&cam.rotation, mean);
    let p = [
        pr[0] + cam.translation[0],
        pr[1] + cam.translation[1],
        pr[2] + cam.translation[2],
    ];
    let fisheye = if cam.fisheye {
        // The distance, not z, is what the near plane bounds for a camera that sees sideways.
        let dist = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
        let theta = (p[0] * p[0] + p[1] * p[1]).sqrt().atan2(p[2]);
        if !(dist > F::c(NEAR_PLANE) && theta <= cam.max_theta) {
            return None;
        }
        Some((dist, fisheye::radial(p)))
    } else {
        // Also rejects NaN depths.
        if !(p[2] > F::c(NEAR_PLANE)) {
            return None;
        }
        None
    };
    let quat_norm = rotation.iter().fold(F::zero(), |s, &v| s + v * v).sqrt();
    let quat = rotation.map(|v| v / quat_norm);
    let rot = quat_to_mat(quat);
    let scales = log_scale.map(|v| v.exp());
    let m: Mat3<F> = std::array::from_fn(|i| std::array::from_fn(|j| rot[i][j] * scales[j]));
    let sigma = matmul(&m, &transpose(&m));

    let z = p[2];
    let (rx, ry) = (p[0] / z, p[1] / z);
    let x_in = rx >= -cam.lim_x && rx <= cam.lim_x;
    let y_in = ry >= -cam.lim_y && ry <= cam.lim_y;
    let xz = rx.max(-cam.lim_x).min(cam.lim_x);
    let yz = ry.max(-cam.lim_y).min(cam.lim_y);
    let (uv, depth, j) = match &fisheye {
        Some((dist, rad)) => {
            let (uv, j) = fisheye::project(p, [cam.fx, cam.fy], [cam.cx, cam.cy], rad);
            (uv, *dist, j)
        }
        None => {
            let uv = [cam.fx * p[0] / z + cam.cx, cam.fy * p[1] / z + cam.cy];
            let j = [
                [cam.fx / z, F::zero(), -cam.fx * xz / z],
                [F::zero(), cam.fy / z, -cam.fy * yz / z],
            ];
            (uv, z, j)
        }
    };
    let t = matmul(&j, &cam.rotation);
    let cov = matmul(&matmul(&t, &sigma), &transpose(&t));
    let dil = F::c(DILATION);
    Some(Geometry {
        p,
        quat,
        quat_norm,
        rot,
        scales,
        m,
        sigma,
        xz,
        yz,
        x_in,
        y_in,
        uv,
        depth,
        j,
        t,
        cov2d: [cov[0][0] + dil, cov[0][1], cov[1][1] + dil],
    })
}

/// The antialiasing compensation `rho = sqrt(det(Sigma2D) / det(Sigma2D + 0.3 I))` of a dilated 2D
/// covariance `(a, b, c)` with determinant `det`, floored at [`MIN_COMPENSATION`]; and whether it is
/// above the floor (where it depends on the covariance).
#[inline]
pub fn compensation<F: Real>(cov2d: [F; 3], det: F) -> (F, bool) {
    let dil = F::c(DILATION);
    let det_orig = (cov2d[0] - dil) * (cov2d[2] - dil) - cov2d[1] * cov2d[1];
    let rho2 = det_orig / det;
    let floor = F::c(MIN_COMPENSATION * MIN_COMPENSATION);
    if rho2 > floor {
        (rho2.sqrt(), true)
    } else {
        (F::c(MIN_COMPENSATION), false)
    }
}

/// Half-widths of the box outside which a Gaussian of 2D covariance `(a, b, c)` and `opacity` has alpha
/// below `alpha_min`: `alpha >= alpha_min` needs `d^T Q d <= t2 = 2 ln(opacity / alpha_min)` (`Q` the
/// conic, the covariance's inverse), an ellipse whose bounding box has half-widths `sqrt(t2 a)` and
/// `sqrt(t2 c)`. Widened by 1% + 0.01 px so that f32 rounding in any backend's per-pixel test can never
/// make a Gaussian visible outside it; -inf when the opacity is under `alpha_min` (visible nowhere),
/// infinite with `alpha_min = 0` (nothing is culled). In f64, as the CPU rasterizer's own per-tile cull
/// (`cpu::rasterize::visible_extent`, the same box from the conic).
pub fn visible_box<F: Real>(cov2d: [F; 3], opacity: F, alpha_min: f64) -> [f64; 2] {
    if alpha_min <= 0.0 {
        return [f64::INFINITY; 2];
    }
    let o = opacity.as_f64();
    if !(o >= alpha_min) {
        return [f64::NEG_INFINITY; 2];
    }
    let t2 = 2.0 * (o / alpha_min).ln();
    [cov2d[0], cov2d[2]].map(|d| (t2 * d.as_f64()).sqrt() * 1.01 + 0.01)
}

/// The 3-sigma radius of a 2D covariance `(a, b, c)` with determinant `det`.
#[inline]
pub fn radius_of<F: Real>(cov2d: [F; 3], det: F) -> F {
    let mid = F::c(0.5) * (cov2d[0] + cov2d[2]);
    let lambda = mid + (mid * mid - det).max(F::c(0.1)).sqrt();
    (F::c(3.0) * lambda.sqrt()).ceil()
}

/// Writes into `out` (resized to the scene) the projection of every Gaussian.
pub fn project<F: Real>(
    gaussians: &Gaussians<F>,
    camera: &Camera,
    settings: &RenderSettings,
    out: &mut Projected<F>,
) {
    out.resize(gaussians.len());
    out.alpha_min = settings.cutoffs.alpha_min;
    let ctx = ProjectContext::new(gaussians, camera, settings);
    project_range(gaussians, &ctx, out.slices_mut());
}

/// What every Gaussian's projection shares: the camera in the stage's type, the tile grid, the number of
/// SH coefficients in use.
#[derive(Clone, Copy, Debug)]
pub struct ProjectContext<F> {
    pub cam: CameraParams<F>,
    pub grid: TileGrid,
    pub coeffs: usize,
    /// The blending rule's `alpha_min`: tiles the Gaussian cannot reach at it are left out of its rect.
    pub alpha_min: f64,
}

impl<F: Real> ProjectContext<F> {
    pub fn new(gaussians: &Gaussians<F>, camera: &Camera, settings: &RenderSettings) -> Self {
        ProjectContext {
            cam: CameraParams::<F>::new(camera),
            grid: TileGrid::new(camera.width, camera.height),
            coeffs: active_coeffs(settings.sh_degree, gaussians.sh_degree),
            alpha_min: settings.cutoffs.alpha_min,
        }
    }
}

/// Projects the Gaussians `out.start .. out.start + out.len()` into `out` (a range of a [`Projected`],
/// so that threads can take disjoint ranges).
pub fn project_range<F: Real>(
    gaussians: &Gaussians<F>,
    ctx: &ProjectContext<F>,
    out: ProjectedSlices<'_, F>,
) {
    let (cam, grid, coeffs) = (&ctx.cam, &ctx.grid, ctx.coeffs);
    for j in 0..out.len() {
        let i = out.start + j;
        out.radii[j] = 0;
        out.tile_rects[j] = TileRect::default();
        let Some(geo) = geometry(
            gaussians.means[i],
            gaussians.log_scales[i],
            gaussians.rotations[i],
            cam,
        ) else {
            continue;
        };
        let [a, b, c] = geo.cov2d;
        let det = a * c - b * b;
        if !(det > F::zero()) {
            continue;
        }
        let conic = [c / det, -b / det, a / det];
        let radius = radius_of(geo.cov2d, det);
        let [u, v] = geo.uv;
        let finite = [u, v, radius, conic[0], conic[1], conic[2]]
            .iter()
            .all(|x| x.is_finite());
        if !finite {
            continue;
        }
        let rect = TileRect::around(u.as_f64(), v.as_f64(), radius.as_f64(), grid);
        if rect.is_empty() {
            continue;
        }
        let opacity = sigmoid(gaussians.opacity_logits[i]);
        let opacity = if gaussians.antialiased {
            opacity * compensation(geo.cov2d, det).0
        } else {
            opacity
        };
        let (rgb, clamped) = color(
            gaussians.means[i],
            gaussians.sh_dc[i],
            gaussians.sh_rest_of(i),
            coeffs,
            cam.center,
        );
        out.means2d[j] = [u, v];
        out.conics[j] = conic;
        out.depths[j] = geo.depth;
        out.radii[j] = radius.as_f64().min(u32::MAX as f64).max(1.0) as u32;
        // Only the tiles the alpha >= alpha_min ellipse can reach (it may be none: the Gaussian stays
        // visible, with no intersections).
        let reach = visible_box(geo.cov2d, opacity, ctx.alpha_min);
        out.tile_rects[j] = rect.intersect(&TileRect::reaching_centres(
            u.as_f64(),
            v.as_f64(),
            reach[0],
            reach[1],
            grid,
        ));
        out.opacities[j] = opacity;
        out.colors[j] = rgb;
        out.color_clamped[j] = clamped;
    }
}
