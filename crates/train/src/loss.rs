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
use splat_render::cpu::SimdLevel;

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

/// Output rows per band: the unit of parallel work and of cache reuse (each band blurs its rows plus a
/// halo of 5 above and below, so taller bands waste less on halos; 32 keeps a band's buffers in L2).
const BAND_ROWS: usize = 32;
/// Rows (and columns) the 11-tap window reaches on each side.
const HALO: usize = SSIM_WINDOW / 2;
/// Lanes of the inner loops: fixed-size arrays the compiler keeps in vector registers.
const LANES: usize = 16;
/// Rows of a band buffer: the band and its halos.
const BUF_ROWS: usize = BAND_ROWS + 2 * HALO;
/// Coefficient planes per channel: `g_mu`, `g_xx`, `g_xy`.
const COEFFS: usize = 3;

/// Reusable buffers for SSIM on images of one size: nothing is allocated once they have grown.
#[derive(Clone, Debug, Default)]
pub struct SsimScratch<F> {
    w: usize,
    h: usize,
    /// Row length of the band buffers: `w` rounded up to whole vectors.
    stride: usize,
    /// Per image row, the 3 x 3 coefficient rows (`channel * 3 + k`, `w` values each).
    coeffs: Vec<F>,
    bands: Vec<BandBuf<F>>,
    /// Per-row sums of the SSIM map over the channels, added in row order (thread-count independent).
    row_totals: Vec<f64>,
    /// Per-row sums of `|render - target|`.
    l1_rows: Vec<f64>,
    /// Per-row sums of `(clamp(render, 0, 1) - target)^2`, for the training PSNR.
    sq_rows: Vec<f64>,
    level: Option<SimdLevel>,
    /// With a mask: the render and the target with left-out pixels set to 0.
    masked: [Vec<F>; 2],
}

/// One band's buffers: horizontally blurred rows (5 quantities x `BUF_ROWS` x `stride`) and zero-padded
/// source rows (5 x (`stride` + 2 `HALO`)).
#[derive(Clone, Debug, Default)]
struct BandBuf<F> {
    rows: Vec<F>,
    padded: Vec<F>,
}

impl<F: Real> SsimScratch<F> {
    fn ensure(&mut self, w: usize, h: usize) {
        let stride = w.div_ceil(LANES) * LANES;
        let bands = h.div_ceil(BAND_ROWS);
        if (self.w, self.h) != (w, h) || self.bands.len() != bands {
            // New size: fresh buffers (the zero pads of `padded` are never written afterwards).
            self.w = w;
            self.h = h;
            self.stride = stride;
            self.coeffs = vec![F::zero(); h * 3 * COEFFS * w];
            self.bands = (0..bands)
                .map(|_| BandBuf {
                    rows: vec![F::zero(); 5 * BUF_ROWS * stride],
                    padded: vec![F::zero(); 5 * (stride + 2 * HALO)],
                })
                .collect();
            self.row_totals = vec![0.0; h];
            self.l1_rows = vec![0.0; h];
            self.sq_rows = vec![0.0; h];
        }
        if self.level.is_none() {
            self.level = Some(SimdLevel::from_env().unwrap_or_else(SimdLevel::detect));
        }
    }
}

/// 11-tap horizontal blur of a zero-padded row (`padded[HALO + x]` is column `x`) into `out`, a whole
/// number of vectors long. Sums run over the taps in order, as a plain convolution would.
#[inline(always)]
fn blur_row<F: Real>(padded: &[F], out: &mut [F], taps: &[F; SSIM_WINDOW]) {
    for (c, o) in out.chunks_exact_mut(LANES).enumerate() {
        let x0 = c * LANES;
        let mut acc = [F::zero(); LANES];
        for (k, &t) in taps.iter().enumerate() {
            let s: &[F; LANES] = padded[x0 + k..x0 + k + LANES]
                .try_into()
                .expect("padded row");
            for l in 0..LANES {
                acc[l] += t * s[l];
            }
        }
        o.copy_from_slice(&acc);
    }
}

/// What every band reads.
struct Frame<'a, F> {
    a: &'a [F],
    b: &'a [F],
    w: usize,
    h: usize,
    stride: usize,
    taps: [F; SSIM_WINDOW],
    /// Per-pixel weight of the SSIM map (a mask); none: every pixel 1.
    weight: Option<&'a [F]>,
}

/// Fills band rows `0 .. rows + 2 HALO` of `buf.rows` for quantities `0..n`: the horizontal blur of image
/// rows `y0 - HALO ..` (zero outside the image), each row's sources written into the padded rows by
/// `fill(y, padded)`.
#[inline(always)]
fn blur_band_rows<F: Real>(
    fr: &Frame<F>,
    y0: usize,
    rows: usize,
    n: usize,
    buf: &mut BandBuf<F>,
    mut fill: impl FnMut(usize, &mut [F]),
) {
    let (stride, pw) = (fr.stride, fr.stride + 2 * HALO);
    for r in 0..rows + 2 * HALO {
        let y = (y0 + r).wrapping_sub(HALO);
        if y >= fr.h {
            for q in 0..n {
                buf.rows[(q * BUF_ROWS + r) * stride..][..stride].fill(F::zero());
            }
            continue;
        }
        fill(y, &mut buf.padded[..n * pw]);
        for q in 0..n {
            blur_row(
                &buf.padded[q * pw..(q + 1) * pw],
                &mut buf.rows[(q * BUF_ROWS + r) * stride..][..stride],
                &fr.taps,
            );
        }
    }
}

/// Vertical 11-tap blur of `N` quantities at output row `j` of the band, columns `x0 .. x0 + LANES`.
#[inline(always)]
fn blur_column<F: Real, const N: usize>(
    rows: &[F],
    stride: usize,
    j: usize,
    x0: usize,
    taps: &[F; SSIM_WINDOW],
) -> [[F; LANES]; N] {
    let mut m = [[F::zero(); LANES]; N];
    for (k, &t) in taps.iter().enumerate() {
        for (q, mq) in m.iter_mut().enumerate() {
            let s: &[F; LANES] = rows[(q * BUF_ROWS + j + k) * stride + x0..][..LANES]
                .try_into()
                .expect("band row");
            for l in 0..LANES {
                mq[l] += t * s[l];
            }
        }
    }
    m
}

/// Forward of one band (image rows `y0 .. y0 + totals.len()`): the SSIM map's row sums into `totals`
/// and, with `want_grad`, its coefficients into `coeffs` (the band's rows).
#[inline(always)]
fn band_forward<F: Real>(
    fr: &Frame<F>,
    y0: usize,
    buf: &mut BandBuf<F>,
    totals: &mut [f64],
    coeffs: &mut [F],
    want_grad: bool,
) {
    let (w, stride) = (fr.w, fr.stride);
    let rows = totals.len();
    let (c1, c2) = (F::c(SSIM_C1), F::c(SSIM_C2));
    let two = F::c(2.0);
    totals.fill(0.0);
    for ch in 0..3 {
        blur_band_rows(fr, y0, rows, 5, buf, |y, pad| {
            let pw = stride + 2 * HALO;
            let (px, rest) = pad.split_at_mut(pw);
            let (py, rest) = rest.split_at_mut(pw);
            let (pxx, rest) = rest.split_at_mut(pw);
            let (pyy, pxy) = rest.split_at_mut(pw);
            for x in 0..w {
                let i = (y * w + x) * 3 + ch;
                let (u, v) = (fr.a[i], fr.b[i]);
                px[HALO + x] = u;
                py[HALO + x] = v;
                pxx[HALO + x] = u * u;
                pyy[HALO + x] = v * v;
                pxy[HALO + x] = u * v;
            }
        });
        for (j, total) in totals.iter_mut().enumerate() {
            let mut lane_sums = [0.0f64; LANES];
            for x0 in (0..w).step_by(LANES) {
                let [mx, my, exx, eyy, exy] =
                    blur_column::<F, 5>(&buf.rows, stride, j, x0, &fr.taps);
                let mut map = [F::zero(); LANES];
                let mut g = [[F::zero(); LANES]; COEFFS];
                for l in 0..LANES {
                    let (mx, my) = (mx[l], my[l]);
                    let sxx = exx[l] - mx * mx;
                    let syy = eyy[l] - my * my;
                    let sxy = exy[l] - mx * my;
                    let a1 = two * mx * my + c1;
                    let a2 = two * sxy + c2;
                    let b1 = mx * mx + my * my + c1;
                    let b2 = sxx + syy + c2;
                    // One division: 1/b1 = b2 inv and 1/b2 = b1 inv.
                    let inv = F::one() / (b1 * b2);
                    let s = a1 * a2 * inv;
                    map[l] = s;
                    let ds_dmx = two * my * a2 * inv - two * mx * s * (b2 * inv);
                    let ds_dsxx = -s * (b1 * inv);
                    let ds_dsxy = two * a1 * inv;
                    g[0][l] = ds_dmx - two * mx * ds_dsxx - my * ds_dsxy;
                    g[1][l] = ds_dsxx;
                    g[2][l] = ds_dsxy;
                }
                let n = LANES.min(w - x0);
                if let Some(wt) = fr.weight {
                    let wt = &wt[(y0 + j) * w + x0..][..n];
                    for l in 0..n {
                        map[l] *= wt[l];
                        for gq in g.iter_mut() {
                            gq[l] *= wt[l];
                        }
                    }
                }
                for l in 0..n {
                    lane_sums[l] += map[l].as_f64();
                }
                if want_grad {
                    for (q, gq) in g.iter().enumerate() {
                        coeffs[(j * 3 * COEFFS + ch * COEFFS + q) * w + x0..][..n]
                            .copy_from_slice(&gq[..n]);
                    }
                }
            }
            *total += lane_sums.iter().sum::<f64>();
        }
    }
}

/// Backward of one band: blurs the coefficients and adds `k * dSSIM/da` into the band's rows of `grad`.
#[inline(always)]
fn band_backward<F: Real>(
    fr: &Frame<F>,
    y0: usize,
    buf: &mut BandBuf<F>,
    coeffs: &[F],
    k: F,
    grad: &mut [F],
) {
    let (w, stride) = (fr.w, fr.stride);
    let rows = grad.len() / (3 * w);
    let two = F::c(2.0);
    for ch in 0..3 {
        blur_band_rows(fr, y0, rows, COEFFS, buf, |y, pad| {
            let pw = stride + 2 * HALO;
            for q in 0..COEFFS {
                pad[q * pw + HALO..][..w]
                    .copy_from_slice(&coeffs[(y * 3 * COEFFS + ch * COEFFS + q) * w..][..w]);
            }
        });
        for j in 0..rows {
            let y = y0 + j;
            for x0 in (0..w).step_by(LANES) {
                let [gmu, gxx, gxy] = blur_column::<F, COEFFS>(&buf.rows, stride, j, x0, &fr.taps);
                for l in 0..LANES.min(w - x0) {
                    let i = (y * w + x0 + l) * 3 + ch;
                    let d = gmu[l] + two * fr.a[i] * gxx[l] + fr.b[i] * gxy[l];
                    grad[(j * w + x0 + l) * 3 + ch] += k * d;
                }
            }
        }
    }
}

macro_rules! band_kernels {
    ($fwd:ident, $bwd:ident, $features:literal) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        #[allow(unsafe_code)]
        unsafe fn $fwd<F: Real>(
            fr: &Frame<F>,
            y0: usize,
            buf: &mut BandBuf<F>,
            totals: &mut [f64],
            coeffs: &mut [F],
            want_grad: bool,
        ) {
            band_forward(fr, y0, buf, totals, coeffs, want_grad)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        #[allow(unsafe_code)]
        unsafe fn $bwd<F: Real>(
            fr: &Frame<F>,
            y0: usize,
            buf: &mut BandBuf<F>,
            coeffs: &[F],
            k: F,
            grad: &mut [F],
        ) {
            band_backward(fr, y0, buf, coeffs, k, grad)
        }
    };
}

band_kernels!(band_forward_avx2, band_backward_avx2, "avx2,fma");
band_kernels!(
    band_forward_avx512,
    band_backward_avx512,
    "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma"
);

/// `band_forward` compiled for `level` (the scalar and portable levels use the baseline build).
#[allow(unsafe_code)]
fn band_forward_at<F: Real>(
    level: SimdLevel,
    fr: &Frame<F>,
    y0: usize,
    buf: &mut BandBuf<F>,
    totals: &mut [f64],
    coeffs: &mut [F],
    want_grad: bool,
) {
    match level {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `SimdLevel` only names levels whose features were detected on this CPU.
        SimdLevel::Avx512 => unsafe { band_forward_avx512(fr, y0, buf, totals, coeffs, want_grad) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        SimdLevel::Avx2 => unsafe { band_forward_avx2(fr, y0, buf, totals, coeffs, want_grad) },
        _ => band_forward(fr, y0, buf, totals, coeffs, want_grad),
    }
}

/// `band_backward` compiled for `level`.
#[allow(unsafe_code)]
fn band_backward_at<F: Real>(
    level: SimdLevel,
    fr: &Frame<F>,
    y0: usize,
    buf: &mut BandBuf<F>,
    coeffs: &[F],
    k: F,
    grad: &mut [F],
) {
    match level {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: see `band_forward_at`.
        SimdLevel::Avx512 => unsafe { band_backward_avx512(fr, y0, buf, coeffs, k, grad) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: see `band_forward_at`.
        SimdLevel::Avx2 => unsafe { band_backward_avx2(fr, y0, buf, coeffs, k, grad) },
        _ => band_backward(fr, y0, buf, coeffs, k, grad),
    }
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
    loss_grad_and_psnr(render, target, w, h, lambda, scratch, grad).0
}

/// [`loss_and_grad`] and the PSNR of `render` against `target` (as [`psnr`] computes it, summed per row
/// in the same pass: the training loop's PSNR costs no pass of its own).
pub fn loss_grad_and_psnr<F: Real>(
    render: &[F],
    target: &[F],
    w: usize,
    h: usize,
    lambda: f64,
    scratch: &mut SsimScratch<F>,
    grad: &mut Vec<F>,
) -> (LossValue, f64) {
    loss_grad_and_psnr_masked(render, target, None, w, h, lambda, scratch, grad)
}

/// [`loss_grad_and_psnr`] over the pixels a mask keeps (`mask`: `w x h` weights, 1 kept and 0 left
/// out). As gsplat: both images have the left-out pixels set to 0, L1 and the PSNR are means over the
/// kept values, and SSIM is the mean of the map over the kept pixels; the gradient at a left-out pixel
/// is 0 (so nothing there reaches the Gaussians or their densification statistics). A mask that keeps
/// nothing gives a zero loss and gradient.
#[allow(clippy::too_many_arguments)]
pub fn loss_grad_and_psnr_masked<F: Real>(
    render: &[F],
    target: &[F],
    mask: Option<&[F]>,
    w: usize,
    h: usize,
    lambda: f64,
    scratch: &mut SsimScratch<F>,
    grad: &mut Vec<F>,
) -> (LossValue, f64) {
    let Some(mask) = mask else {
        return loss_unmasked(render, target, w, h, lambda, scratch, grad, None);
    };
    assert_eq!(mask.len(), w * h, "mask size");
    let mut masked = std::mem::take(&mut scratch.masked);
    for (m, src) in masked.iter_mut().zip([render, target]) {
        m.clear();
        m.extend(
            src.iter()
                .zip(mask.iter().flat_map(|&k| [k; 3]))
                .map(|(&v, k)| v * k),
        );
    }
    let out = loss_unmasked(
        &masked[0],
        &masked[1],
        w,
        h,
        lambda,
        scratch,
        grad,
        Some(mask),
    );
    scratch.masked = masked;
    for (g, &k) in grad.chunks_exact_mut(3).zip(mask) {
        for v in g {
            *v *= k;
        }
    }
    out
}

/// The loss and PSNR; with `weight`, means over its kept pixels (the images already zeroed there).
#[allow(clippy::too_many_arguments)]
fn loss_unmasked<F: Real>(
    render: &[F],
    target: &[F],
    w: usize,
    h: usize,
    lambda: f64,
    scratch: &mut SsimScratch<F>,
    grad: &mut Vec<F>,
    weight: Option<&[F]>,
) -> (LossValue, f64) {
    let values = 3.0 * weight.map_or((w * h) as f64, |m| m.iter().map(|v| v.as_f64()).sum());
    let n = w * h * 3;
    assert_eq!(render.len(), n);
    assert_eq!(target.len(), n);
    // Every element is written below: no clearing pass (only a new size fills).
    grad.resize(n, F::zero());
    scratch.ensure(w, h);
    let inv_n = F::one() / F::c(values.max(1.0));
    let l1_weight = F::c(1.0 - lambda);
    let row = (w * 3).max(1);
    grad.par_chunks_mut(row)
        .zip(render.par_chunks(row))
        .zip(target.par_chunks(row))
        .zip(scratch.l1_rows.par_iter_mut())
        .zip(scratch.sq_rows.par_iter_mut())
        .for_each(|((((g, r), t), l1_total), sq_total)| {
            // The sign as selects, not branches (a render's residuals change sign at random: the
            // branches mispredicted half the time), and the sums in 8 interleaved partial sums (one
            // running sum is a chain of dependent adds that cannot be vectorized).
            let mut l1_sums = [0.0f64; 8];
            let mut sq_sums = [0.0f64; 8];
            for (((g, r), t), k) in g.iter_mut().zip(r).zip(t).zip((0..8).cycle()) {
                let d = *r - *t;
                l1_sums[k] += d.abs().as_f64();
                let pos = if d > F::zero() { F::one() } else { F::zero() };
                let neg = if d < F::zero() { F::one() } else { F::zero() };
                *g = l1_weight * (pos - neg) * inv_n;
                // `clamp(0, 1)` as selects (a NaN stays NaN, as with `f32::clamp`).
                let low = if *r < F::zero() { F::zero() } else { *r };
                let clamped = if low > F::one() { F::one() } else { low };
                let e = clamped.as_f64() - t.as_f64();
                sq_sums[k] += e * e;
            }
            *l1_total = l1_sums.iter().sum();
            *sq_total = sq_sums.iter().sum();
        });
    let l1 = scratch.l1_rows.iter().sum::<f64>() / values.max(1.0);
    let mse = scratch.sq_rows.iter().sum::<f64>() / values.max(1.0);
    let g = Some((grad, F::c(-lambda)));
    let ssim = ssim_weighted(render, target, w, h, weight, scratch, g);
    let value = LossValue {
        loss: (1.0 - lambda) * l1 + lambda * (1.0 - ssim),
        l1,
        ssim,
    };
    (value, psnr_of_mse(mse))
}

/// Mean SSIM of `a` against `b`; with `grad = Some((g, scale))`, adds `scale * dSSIM/da` into `g`.
///
/// Two parallel passes over bands of `BAND_ROWS` rows. Forward: per channel, the five products are
/// blurred horizontally (the band plus its halo rows, in the band's buffer), then vertically into
/// registers, where the map and its three coefficients are formed; the coefficients go to per-row planes.
/// Backward (it needs the neighbouring bands' coefficients, hence a second pass): the coefficients are
/// blurred the same way and combined into the gradient. Every value is summed in the same order whatever
/// the thread count.
pub fn ssim_with_grad<F: Real>(
    a: &[F],
    b: &[F],
    w: usize,
    h: usize,
    s: &mut SsimScratch<F>,
    grad: Option<(&mut Vec<F>, F)>,
) -> f64 {
    ssim_weighted(a, b, w, h, None, s, grad)
}

/// [`ssim_with_grad`] with the SSIM map weighted per pixel by `weight` (`w x h` values, a mask's 0
/// and 1): the weighted mean of the map, and its gradient.
pub fn ssim_weighted<F: Real>(
    a: &[F],
    b: &[F],
    w: usize,
    h: usize,
    weight: Option<&[F]>,
    s: &mut SsimScratch<F>,
    grad: Option<(&mut Vec<F>, F)>,
) -> f64 {
    assert_eq!(a.len(), w * h * 3, "image size");
    assert_eq!(b.len(), w * h * 3, "image size");
    s.ensure(w, h);
    if w == 0 || h == 0 {
        return 0.0;
    }
    let level = s.level.unwrap_or(SimdLevel::Scalar);
    let fr = Frame {
        a,
        b,
        w,
        h,
        stride: s.stride,
        taps: gaussian_taps::<F>(),
        weight,
    };
    // The map's pixels that count, times the channels.
    let count = 3.0 * weight.map_or((w * h) as f64, |m| m.iter().map(|v| v.as_f64()).sum());
    if count == 0.0 {
        // Nothing counts: no SSIM term and no gradient from it.
        return 1.0;
    }
    let want_grad = grad.is_some();
    let coeff_rows = BAND_ROWS * 3 * COEFFS * w;
    s.bands
        .par_iter_mut()
        .zip(s.row_totals.par_chunks_mut(BAND_ROWS))
        .zip(s.coeffs.par_chunks_mut(coeff_rows))
        .enumerate()
        .for_each(|(band, ((buf, totals), coeffs))| {
            band_forward_at(level, &fr, band * BAND_ROWS, buf, totals, coeffs, want_grad);
        });
    let total = s.row_totals.iter().sum::<f64>();
    if let Some((g, scale)) = grad {
        assert_eq!(g.len(), w * h * 3, "gradient size");
        let k = scale / F::c(count);
        let coeffs = &s.coeffs;
        s.bands
            .par_iter_mut()
            .zip(g.par_chunks_mut(BAND_ROWS * w * 3))
            .enumerate()
            .for_each(|(band, (buf, g))| {
                band_backward_at(level, &fr, band * BAND_ROWS, buf, coeffs, k, g);
            });
    }
    total / count
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
    psnr_of_mse(mse)
}

/// PSNR in dB of a mean squared error (values in [0, 1]).
fn psnr_of_mse(mse: f64) -> f64 {
    if mse <= 0.0 {
        f64::INFINITY
    } else {
        -10.0 * mse.log10()
    }
}
