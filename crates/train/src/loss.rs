//! The training loss `(1 - 0.2) L1 + 0.2 (1 - SSIM)` and its analytic gradient, plus PSNR.
//!
//! SSIM uses an 11 x 11 Gaussian window (sigma 1.5), computed as two separable 11-tap passes with zero
//! padding (what the original's `conv2d(padding=5)` does), per channel, `C1 = 0.01^2`, `C2 = 0.03^2`, and the
//! mean of the SSIM map over pixels and channels.
//!
//! Backward: with `A1 = 2 mx my + C1`, `A2 = 2 sxy + C2`, `B1 = mx^2 + my^2 + C1`, `B2 = sxx + syy + C2` and
//! `S = A1 A2 / (B1 B2)` per pixel, the map depends on `x` only through the filtered quantities
//! `mx = G*x`, `E[x^2] = G*x^2` and `E[xy] = G*(x y)`. Their coefficients are
//! `g_mu = dS/dmx - 2 mx dS/dsxx - my dS/dsxy`, `g_xx = dS/dsxx = -S / B2`, `g_xy = dS/dsxy = 2 A1 / (B1 B2)`
//! with `dS/dmx = 2 my A2 / (B1 B2) - 2 mx S / B1`; the window is symmetric, so
//! `dSSIM/dx = (G*g_mu + 2 x G*g_xx + y G*g_xy) / N`.

use rayon::prelude::*;
use splat_core::Real;

pub const SSIM_WINDOW: usize = 11;
pub const SSIM_SIGMA: f64 = 1.5;
pub const SSIM_C1: f64 = 0.01 * 0.01;
pub const SSIM_C2: f64 = 0.03 * 0.03;
/// Weight of the D-SSIM term.
pub const LAMBDA_DSSIM: f64 = 0.2;

/// Floating-point operations per image value (pixel and channel) of loss and gradient: 8 separable blurs
/// (5 forward, 3 backward) of 2 x 11 taps x 2 = 352, the SSIM map and its derivative ~40, L1 ~4.
pub const FLOPS_PER_VALUE: f64 = 396.0;

/// The normalized 1-D Gaussian taps.
pub fn gaussian_taps<F: Real>() -> [F; SSIM_WINDOW] {
    let half = (SSIM_WINDOW / 2) as f64;
    let w: [f64; SSIM_WINDOW] = std::array::from_fn(|i| {
        (-((i as f64 - half).powi(2)) / (2.0 * SSIM_SIGMA * SSIM_SIGMA)).exp()
    });
    let s: f64 = w.iter().sum();
    std::array::from_fn(|i| F::c(w[i] / s))
}

/// Reusable planar buffers for SSIM on images of one size.
#[derive(Clone, Debug, Default)]
pub struct SsimScratch<F> {
    w: usize,
    h: usize,
    planes: Vec<Vec<F>>,
    tmp: Vec<F>,
    out: Vec<F>,
    /// Per-row sums of the SSIM map, added in row order (thread-count independent).
    row_totals: Vec<f64>,
}

const X: usize = 0;
const Y: usize = 1;
const MX: usize = 2;
const MY: usize = 3;
const EXX: usize = 4;
const EYY: usize = 5;
const EXY: usize = 6;
const G_MU: usize = 7;
const G_XX: usize = 8;
const G_XY: usize = 9;
const NUM_PLANES: usize = 10;

impl<F: Real> SsimScratch<F> {
    fn ensure(&mut self, w: usize, h: usize) {
        self.w = w;
        self.h = h;
        self.planes.resize(NUM_PLANES, Vec::new());
        for p in &mut self.planes {
            p.resize(w * h, F::zero());
        }
        self.tmp.resize(w * h, F::zero());
        self.out.resize(w * h, F::zero());
        self.row_totals.resize(h, 0.0);
    }
}

/// Rows per parallel task: enough work per task to amortize the scheduling.
fn rows_per_task(w: usize) -> usize {
    (16_384 / w.max(1)).max(1)
}

/// Separable Gaussian filter of plane `src` into plane `dst` (zero padding), rows in parallel. Each
/// output value is the same sum in the same order whatever the number of threads.
fn blur<F: Real>(
    src: &[F],
    dst: &mut [F],
    tmp: &mut [F],
    w: usize,
    h: usize,
    taps: &[F; SSIM_WINDOW],
) {
    let r = SSIM_WINDOW / 2;
    let chunk = rows_per_task(w) * w;
    // Horizontal: taps outer so the inner loop runs along x; out-of-image taps contribute nothing.
    tmp.par_chunks_mut(chunk)
        .zip(src.par_chunks(chunk))
        .for_each(|(outs, ins)| {
            for (out, inp) in outs.chunks_exact_mut(w).zip(ins.chunks_exact(w)) {
                out.fill(F::zero());
                for (k, &t) in taps.iter().enumerate() {
                    // Source column x + k - r must lie in [0, w).
                    let x0 = r.saturating_sub(k);
                    let x1 = (w + r).saturating_sub(k).min(w);
                    if x0 >= x1 {
                        continue;
                    }
                    let s0 = x0 + k - r;
                    for (o, &v) in out[x0..x1].iter_mut().zip(&inp[s0..s0 + (x1 - x0)]) {
                        *o += t * v;
                    }
                }
            }
        });
    // Vertical: whole rows at a time.
    let tmp = &*tmp;
    dst.par_chunks_mut(chunk).enumerate().for_each(|(c, outs)| {
        for (j, out) in outs.chunks_exact_mut(w).enumerate() {
            let y = c * (chunk / w) + j;
            out.fill(F::zero());
            for (k, &t) in taps.iter().enumerate() {
                let sy = y as isize + k as isize - r as isize;
                if sy < 0 || sy >= h as isize {
                    continue;
                }
                let inp = &tmp[sy as usize * w..(sy as usize + 1) * w];
                for (o, &v) in out.iter_mut().zip(inp) {
                    *o += t * v;
                }
            }
        }
    });
}

/// Loss value and its parts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LossValue {
    pub loss: f64,
    pub l1: f64,
    pub ssim: f64,
}

/// Computes the loss of `render` against `target` (row-major RGB, `w x h`) and writes `dL/drender` into
/// `grad`. `lambda` is the D-SSIM weight (0.2 for the original).
pub fn loss_and_grad<F: Real>(
    render: &[F],
    target: &[F],
    w: usize,
    h: usize,
    lambda: f64,
    scratch: &mut SsimScratch<F>,
    grad: &mut Vec<F>,
) -> LossValue {
    let n = w * h * 3;
    assert_eq!(render.len(), n);
    assert_eq!(target.len(), n);
    grad.clear();
    grad.resize(n, F::zero());
    let inv_n = F::one() / F::c(n as f64);
    let l1_weight = F::c(1.0 - lambda);
    let mut l1 = 0.0f64;
    for i in 0..n {
        let d = render[i] - target[i];
        l1 += d.abs().as_f64();
        let s = if d > F::zero() {
            F::one()
        } else if d < F::zero() {
            -F::one()
        } else {
            F::zero()
        };
        grad[i] = l1_weight * s * inv_n;
    }
    l1 /= n as f64;

    let ssim = ssim_with_grad(render, target, w, h, scratch, Some((grad, F::c(-lambda))));
    LossValue {
        loss: (1.0 - lambda) * l1 + lambda * (1.0 - ssim),
        l1,
        ssim,
    }
}

/// Mean SSIM of `a` against `b`; with `grad = Some((g, scale))`, adds `scale * dSSIM/da` into `g`.
pub fn ssim_with_grad<F: Real>(
    a: &[F],
    b: &[F],
    w: usize,
    h: usize,
    s: &mut SsimScratch<F>,
    grad: Option<(&mut Vec<F>, F)>,
) -> f64 {
    s.ensure(w, h);
    let taps = gaussian_taps::<F>();
    let (c1, c2) = (F::c(SSIM_C1), F::c(SSIM_C2));
    let n_total = F::c((w * h * 3) as f64);
    let mut total = 0.0f64;
    let mut grad = grad;
    let want_grad = grad.is_some();
    let rows = rows_per_task(w);
    for ch in 0..3 {
        let SsimScratch {
            planes,
            tmp,
            out,
            row_totals,
            ..
        } = s;
        {
            let [px, py, _, _, pxx, pyy, pxy, ..] = &mut planes[..] else {
                unreachable!("NUM_PLANES planes")
            };
            px.par_chunks_mut(rows * w)
                .zip(py.par_chunks_mut(rows * w))
                .zip(pxx.par_chunks_mut(rows * w))
                .zip(pyy.par_chunks_mut(rows * w))
                .zip(pxy.par_chunks_mut(rows * w))
                .enumerate()
                .for_each(|(c, ((((x, y), xx), yy), xy))| {
                    let base = c * rows * w;
                    for i in 0..x.len() {
                        let (u, v) = (a[(base + i) * 3 + ch], b[(base + i) * 3 + ch]);
                        x[i] = u;
                        y[i] = v;
                        xx[i] = u * u;
                        yy[i] = v * v;
                        xy[i] = u * v;
                    }
                });
        }
        for (src, dst) in [(X, MX), (Y, MY), (EXX, EXX), (EYY, EYY), (EXY, EXY)] {
            blur(&planes[src], out, tmp, w, h, &taps);
            std::mem::swap(&mut planes[dst], out);
        }
        {
            let [_, _, mxp, myp, exx, eyy, exy, gmu, gxx, gxy] = &mut planes[..] else {
                unreachable!("NUM_PLANES planes")
            };
            row_totals
                .par_chunks_mut(rows)
                .zip(gmu.par_chunks_mut(rows * w))
                .zip(gxx.par_chunks_mut(rows * w))
                .zip(gxy.par_chunks_mut(rows * w))
                .enumerate()
                .for_each(|(c, (((totals, gmu), gxx), gxy))| {
                    let base = c * rows * w;
                    for (j, t) in totals.iter_mut().enumerate() {
                        let mut row_total = 0.0f64;
                        for x in 0..w {
                            let l = j * w + x;
                            let i = base + l;
                            let (mx, my) = (mxp[i], myp[i]);
                            let sxx = exx[i] - mx * mx;
                            let syy = eyy[i] - my * my;
                            let sxy = exy[i] - mx * my;
                            let a1 = F::c(2.0) * mx * my + c1;
                            let a2 = F::c(2.0) * sxy + c2;
                            let b1 = mx * mx + my * my + c1;
                            let b2 = sxx + syy + c2;
                            let map = a1 * a2 / (b1 * b2);
                            row_total += map.as_f64();
                            if want_grad {
                                let ds_dmx =
                                    F::c(2.0) * my * a2 / (b1 * b2) - F::c(2.0) * mx * map / b1;
                                let ds_dsxx = -map / b2;
                                let ds_dsxy = F::c(2.0) * a1 / (b1 * b2);
                                gmu[l] = ds_dmx - F::c(2.0) * mx * ds_dsxx - my * ds_dsxy;
                                gxx[l] = ds_dsxx;
                                gxy[l] = ds_dsxy;
                            }
                        }
                        *t = row_total;
                    }
                });
        }
        total += row_totals.iter().sum::<f64>();
        if let Some((g, scale)) = grad.as_mut() {
            for p in [G_MU, G_XX, G_XY] {
                blur(&planes[p], out, tmp, w, h, &taps);
                std::mem::swap(&mut planes[p], out);
            }
            let k = *scale / n_total;
            let (px, py) = (&planes[X], &planes[Y]);
            let (gmu, gxx, gxy) = (&planes[G_MU], &planes[G_XX], &planes[G_XY]);
            g.par_chunks_mut(rows * w * 3)
                .enumerate()
                .for_each(|(c, gs)| {
                    let base = c * rows * w;
                    for (l, px3) in gs.chunks_exact_mut(3).enumerate() {
                        let i = base + l;
                        let d = gmu[i] + F::c(2.0) * px[i] * gxx[i] + py[i] * gxy[i];
                        px3[ch] += k * d;
                    }
                });
        }
    }
    total / (w * h * 3) as f64
}

/// Mean SSIM (no gradient).
pub fn ssim<F: Real>(a: &[F], b: &[F], w: usize, h: usize) -> f64 {
    let mut s = SsimScratch::default();
    ssim_with_grad(a, b, w, h, &mut s, None)
}

/// PSNR in dB of `a` against `b` with values in [0, 1] (`a` clamped to [0, 1] first).
pub fn psnr(a: &[f32], b: &[f32]) -> f64 {
    let mse = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| {
            let d = x.clamp(0.0, 1.0) as f64 - y as f64;
            d * d
        })
        .sum::<f64>()
        / a.len().max(1) as f64;
    if mse <= 0.0 {
        f64::INFINITY
    } else {
        -10.0 * mse.log10()
    }
}
