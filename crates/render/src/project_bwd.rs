//! The project backward stage: from gradients of the screen-space quantities to gradients of every
//! parameter (means, log-scales, quaternions, opacity logits, SH coefficients).
//!
//! Chain, for one visible Gaussian (symmetric matrices carry their gradient as a symmetric matrix `G` with
//! `dL = <G, dX>`):
//! - conic `Q = Sigma2D^-1`: `G_Sigma2D = -Q G_Q Q`;
//! - `Sigma2D = T Sigma T^T (+0.3 I)`: `G_Sigma = T^T G T`, `G_T = 2 G T Sigma`;
//! - `Sigma = M M^T`: `G_M = 2 G_Sigma M`; `M = R_q S`: `G_S = diag(R_q^T G_M)`, `G_Rq = G_M S`;
//! - `T = J R`: `G_J = G_T R^T`; `J` depends on the camera-space mean (through `x/z`, `y/z` only where they
//!   are inside the clamp range);
//! - the 2D mean `u = fx x / z + cx`; the colour through the view direction ([`crate::sh::color_backward`]);
//! - the equidistant fisheye replaces the last two for the mean (its `J` and pixel,
//!   [`crate::fisheye::project_backward`]);
//! - antialiased scenes (opacity `rho o`, [`crate::project::compensation`]): with `B = Sigma2D + 0.3 I`
//!   and its inverse the conic `Q`, `d rho^2 / d Sigma2D = (1 - rho^2) Q - 0.3 det(Q) I` (from
//!   `adj(Sigma2D) = adj(B) - 0.3 I` for 2 x 2 matrices), `d rho = d rho^2 / (2 rho)`; zero where `rho`
//!   sits at its floor.
//!
//! The camera's pose (with [`RenderSettings::pose_grads`], [`PoseGrads`]): the camera-space mean
//! `p = R m + t`, `T = J R` and the view direction from the centre `c = -R^T t` are what depend on it, so
//! per Gaussian `G_R += G_p m^T + J^T G_T + t G_d^T` and `G_t += G_p + R G_d`, where `G_d` is the mean's
//! gradient through the view direction (`G_c = -G_d`). `R` counts as nine free entries: the
//! optimizer's parametrization of the pose chains to these (`splat_train::pose`).

use splat_core::math::{mat3_t_vec, matmul, normalize_backward, quat_to_mat_backward, transpose};
use splat_core::{sigmoid, Camera, Gaussians, Real};

use crate::fisheye;
use crate::project::{compensation, geometry, CameraParams, Geometry, DILATION};
use crate::sh::{active_coeffs, color_backward};
use crate::types::{
    reset_grads, GaussianGradSlices, GaussianGrads, PoseGrads, Projected, ProjectedGrads,
    RenderSettings,
};

/// Floating-point operations per visible Gaussian: the forward geometry again (~210), conic and covariance
/// backward ~150, scale/rotation ~120, Jacobian and mean ~40, SH backward of degree 3 ~250.
pub const FLOPS_PER_GAUSSIAN: f64 = 770.0;

/// Writes into `out` (resized to the scene) the gradients of every parameter; returns the camera pose's
/// (zero unless `settings.pose_grads`).
pub fn project_backward<F: Real>(
    gaussians: &Gaussians<F>,
    camera: &Camera,
    settings: &RenderSettings,
    projected: &Projected<F>,
    grads: &ProjectedGrads<F>,
    out: &mut GaussianGrads<F>,
) -> PoseGrads {
    reset_grads(out, gaussians, settings);
    let cam = CameraParams::<F>::new(camera);
    let coeffs = active_coeffs(settings.sh_degree, gaussians.sh_degree);
    let inputs = BackwardInputs {
        gaussians,
        cam: &cam,
        coeffs,
        projected,
        grads,
        pose: settings.pose_grads,
    };
    project_backward_range(&inputs, GaussianGradSlices::new(out))
}

/// What [`project_backward_range`] reads.
pub struct BackwardInputs<'a, F> {
    pub gaussians: &'a Gaussians<F>,
    pub cam: &'a CameraParams<F>,
    /// Active SH coefficients.
    pub coeffs: usize,
    pub projected: &'a Projected<F>,
    pub grads: &'a ProjectedGrads<F>,
    /// Whether to sum the camera pose's gradient.
    pub pose: bool,
}

/// [`project_backward`] for the Gaussians `out.start .. out.start + out.len()`, into `out` (zeroed by the
/// caller), so that threads can take disjoint ranges; returns the range's share of the pose gradient
/// (summed in Gaussian order).
pub fn project_backward_range<F: Real>(
    inputs: &BackwardInputs<'_, F>,
    out: GaussianGradSlices<'_, F>,
) -> PoseGrads {
    let BackwardInputs {
        gaussians,
        cam,
        coeffs,
        projected,
        grads,
        pose,
    } = *inputs;
    let mut pose_grads = PoseGrads::default();
    let rest_len = out.rest_len;
    let two = F::c(2.0);
    for j in 0..out.len() {
        let i = out.start + j;
        if projected.radii[i] == 0 {
            continue;
        }
        let geo = geometry(
            gaussians.means[i],
            gaussians.log_scales[i],
            gaussians.rotations[i],
            cam,
        )
        .expect("a visible Gaussian has a geometry");

        // Conic -> 2D covariance.
        let q = projected.conics[i];
        let gq = grads.grad_conics[i];
        let qm = [[q[0], q[1]], [q[1], q[2]]];
        let gqm = [[gq[0], gq[1] / two], [gq[1] / two, gq[2]]];
        let mut g_cov2 = matmul(&matmul(&qm, &gqm), &qm).map(|r| r.map(|v| -v));

        // Opacity (times the compensation, whose own gradient goes to the 2D covariance).
        let o = sigmoid(gaussians.opacity_logits[i]);
        let g_opacity = grads.grad_opacities[i];
        let mut rho = F::one();
        if gaussians.antialiased {
            let [a, b, c] = geo.cov2d;
            let free;
            (rho, free) = compensation(geo.cov2d, a * c - b * b);
            if free {
                let v = g_opacity * o / (two * rho);
                let one_minus = F::one() - rho * rho;
                let eps_det = F::c(DILATION) * (q[0] * q[2] - q[1] * q[1]);
                g_cov2[0][0] += v * (one_minus * q[0] - eps_det);
                g_cov2[0][1] += v * one_minus * q[1];
                g_cov2[1][0] += v * one_minus * q[1];
                g_cov2[1][1] += v * (one_minus * q[2] - eps_det);
            }
        }
        out.opacity_logits[j] = g_opacity * rho * o * (F::one() - o);

        // 2D covariance -> 3D covariance and T.
        let t = geo.t;
        let g_sigma = matmul(&matmul(&transpose(&t), &g_cov2), &t);
        let g_t = matmul(&matmul(&g_cov2, &t), &geo.sigma).map(|r| r.map(|v| two * v));

        // 3D covariance -> scale and rotation.
        let g_m = matmul(&g_sigma, &geo.m).map(|r| r.map(|v| two * v));
        let mut g_rot = [[F::zero(); 3]; 3];
        for r in 0..3 {
            for c in 0..3 {
                g_rot[r][c] = g_m[r][c] * geo.scales[c];
                out.log_scales[j][c] += g_m[r][c] * geo.rot[r][c] * geo.scales[c];
            }
        }
        let g_quat_n = quat_to_mat_backward(geo.quat, &g_rot);
        out.rotations[j] = normalize_backward(geo.quat, geo.quat_norm, g_quat_n);

        // T = J R -> J -> camera-space mean; and the 2D mean.
        let g_j = matmul(&g_t, &transpose(&cam.rotation));
        let gp = if cam.fisheye {
            let rad = fisheye::radial(geo.p);
            let f = [cam.fx, cam.fy];
            fisheye::project_backward(geo.p, f, &rad, grads.grad_means2d[i], &g_j)
        } else {
            pinhole_backward(cam, &geo, grads.grad_means2d[i], &g_j)
        };
        let mut g_mean = mat3_t_vec(&cam.rotation, gp);

        // Colour (the SH coefficients' gradients only where the caller wants them stored).
        let mut unstored_dc = [F::zero(); 3];
        let g_dir_mean = color_backward(
            gaussians.means[i],
            gaussians.sh_dc[i],
            gaussians.sh_rest_of(i),
            coeffs,
            cam.center,
            grads.grad_colors[i],
            projected.color_clamped[i],
            out.sh_dc.get_mut(j).unwrap_or(&mut unstored_dc),
            &mut out.sh_rest[j * rest_len..(j + 1) * rest_len],
        );
        for k in 0..3 {
            g_mean[k] += g_dir_mean[k];
        }
        out.means[j] = g_mean;
        if pose {
            let terms = PoseTerms {
                mean: gaussians.means[i],
                gp,
                jac: &geo.j,
                g_t: &g_t,
                g_dir: g_dir_mean,
            };
            add_pose_terms(&mut pose_grads, cam, &terms);
        }
    }
    pose_grads
}

/// One Gaussian's share of the pose gradient: its mean, the camera-space mean's gradient, `J`, `G_T`
/// and the mean's gradient through the view direction.
struct PoseTerms<'a, F> {
    mean: [F; 3],
    gp: [F; 3],
    jac: &'a [[F; 3]; 2],
    g_t: &'a [[F; 3]; 2],
    g_dir: [F; 3],
}

/// `G_R += G_p m^T + J^T G_T + t G_d^T`, `G_t += G_p + R G_d` (in `f64`).
#[inline]
fn add_pose_terms<F: Real>(acc: &mut PoseGrads, cam: &CameraParams<F>, g: &PoseTerms<'_, F>) {
    for r in 0..3 {
        let (gp, t) = (g.gp[r].as_f64(), cam.translation[r].as_f64());
        for c in 0..3 {
            let jt = g.jac[0][r] * g.g_t[0][c] + g.jac[1][r] * g.g_t[1][c];
            acc.rotation[r][c] += gp * g.mean[c].as_f64() + jt.as_f64() + t * g.g_dir[c].as_f64();
        }
        let rd = cam.rotation[r][0] * g.g_dir[0]
            + cam.rotation[r][1] * g.g_dir[1]
            + cam.rotation[r][2] * g.g_dir[2];
        acc.translation[r] += gp + rd.as_f64();
    }
}

/// The pinhole's camera-space mean gradient from those of the 2D mean and of `J` (whose `x/z`, `y/z`
/// count only inside the clamp range).
#[inline]
fn pinhole_backward<F: Real>(
    cam: &CameraParams<F>,
    geo: &Geometry<F>,
    g_uv: [F; 2],
    g_j: &[[F; 3]; 2],
) -> [F; 3] {
    let [x, y, z] = geo.p;
    let z2 = z * z;
    let mut gp = [F::zero(); 3];
    gp[2] += g_j[0][0] * (-cam.fx / z2) + g_j[1][1] * (-cam.fy / z2);
    gp[2] += g_j[0][2] * cam.fx * geo.xz / z2 + g_j[1][2] * cam.fy * geo.yz / z2;
    let g_xz = g_j[0][2] * (-cam.fx / z);
    let g_yz = g_j[1][2] * (-cam.fy / z);
    if geo.x_in {
        gp[0] += g_xz / z;
        gp[2] -= g_xz * x / z2;
    }
    if geo.y_in {
        gp[1] += g_yz / z;
        gp[2] -= g_yz * y / z2;
    }

    // 2D mean.
    let [gu, gv] = g_uv;
    gp[0] += gu * cam.fx / z;
    gp[1] += gv * cam.fy / z;
    gp[2] -= (gu * cam.fx * x + gv * cam.fy * y) / z2;
    gp
}
