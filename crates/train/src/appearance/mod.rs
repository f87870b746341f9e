//! Per-image appearance: a colour model per training photo, trained with the scene, that absorbs what
//! changes from photo to photo (auto-exposure, white balance) so the Gaussians do not paint it into the
//! scene as haze and floaters (`--appearance`, `../shared/docs/real-captures.md`).
//!
//! The model maps the rendered image (after the background) to the photo's colours before the loss:
//! - `affine`: one 3 x 4 colour matrix per image, `out = A rgb + b` (the original 3DGS repository's
//!   exposure compensation), Adam with its learning rate 0.01 decaying to 0.001 over the run;
//! - `bilateral-grid`: a 16 x 16 x 8 grid of such matrices per image over (x, y, luminance)
//!   ([`bilagrid`]), gsplat's `--use_bilateral_grid`: Adam at 2e-3 x sqrt(batch), warm-up from 0.01x
//!   over 1,000 steps then exponential decay to 0.01x at the end, and 10 x total variation.
//!
//! Both are updated for every image on every step (dense Adam over all images, as the original and
//! gsplat do). Test views have no model of their own: they are rendered and scored without one, and the
//! colour-corrected PSNR ([`crate::eval`]) says how much of the error is colour alone. Exported scenes
//! carry no model (a viewer shows the scene's own colours); checkpoints do.
//!
//! [`apply`] and [`backward`] are the plain whole-image twins (generic, so the gradient tests run in
//! f64); [`Appearance`] runs the same row functions over bands of rows in parallel for training.

pub mod bilagrid;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use splat_core::Real;

use crate::adam::AdamState;

/// Which colour model each training image gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AppearanceKind {
    #[default]
    None,
    Affine,
    BilateralGrid,
}

impl AppearanceKind {
    pub fn name(self) -> &'static str {
        match self {
            AppearanceKind::None => "none",
            AppearanceKind::Affine => "affine",
            AppearanceKind::BilateralGrid => "bilateral-grid",
        }
    }

    /// Parameters per image.
    pub fn per_image(self) -> usize {
        match self {
            AppearanceKind::None => 0,
            AppearanceKind::Affine => 12,
            AppearanceKind::BilateralGrid => bilagrid::PER_IMAGE,
        }
    }

    /// The code in a checkpoint.
    pub fn code(self) -> u32 {
        self as u32
    }

    pub fn from_code(c: u32) -> Option<Self> {
        [Self::None, Self::Affine, Self::BilateralGrid]
            .get(c as usize)
            .copied()
    }

    /// The learning rate of step `it` (1-based) of a run of `iterations` steps with `batch` views a step.
    pub fn learning_rate(self, it: u64, iterations: u64, batch: usize) -> f64 {
        match self {
            AppearanceKind::None => 0.0,
            AppearanceKind::Affine => crate::schedule::exp_decay(0.01, 0.001, it, iterations),
            AppearanceKind::BilateralGrid => {
                // gsplat: LinearLR(start 0.01, 1,000 steps) chained with ExponentialLR(0.01^(1/steps)),
                // both read after `it - 1` scheduler steps.
                let t = it.saturating_sub(1) as f64;
                let warm = 0.01 + 0.99 * (t / 1000.0).min(1.0);
                let decay = 0.01f64.powf(t / iterations.max(1) as f64);
                2e-3 * (batch.max(1) as f64).sqrt() * warm * decay
            }
        }
    }
}

/// The models of every training image, with their optimizer state: part of [`crate::TrainState`].
#[derive(Clone, Debug, PartialEq)]
pub struct AppearanceState {
    pub kind: AppearanceKind,
    pub images: usize,
    /// Image after image, [`AppearanceKind::per_image`] values each.
    pub params: Vec<f32>,
    pub adam: AdamState,
}

impl AppearanceState {
    /// Every image at the identity.
    pub fn new(kind: AppearanceKind, images: usize) -> Self {
        let mut params = vec![0.0f32; images * kind.per_image()];
        identity(kind, &mut params);
        AppearanceState {
            kind,
            images,
            adam: AdamState::zeros(params.len()),
            params,
        }
    }

    /// Image `i`'s parameters.
    pub fn of_image(&self, i: usize) -> &[f32] {
        let n = self.kind.per_image();
        &self.params[i * n..(i + 1) * n]
    }
}

/// Sets `params` (any number of images) to the identity.
pub fn identity<F: Real>(kind: AppearanceKind, params: &mut [F]) {
    match kind {
        AppearanceKind::None => {}
        AppearanceKind::Affine => affine_identity(params),
        AppearanceKind::BilateralGrid => bilagrid::identity(params),
    }
}

fn affine_identity<F: Real>(params: &mut [F]) {
    for (i, v) in params.iter_mut().enumerate() {
        *v = if matches!(i % 12, 0 | 5 | 10) {
            F::one()
        } else {
            F::zero()
        };
    }
}

/// `A (rgb, 1)` for a row-major 3 x 4 matrix `a`.
pub(crate) fn apply_matrix<F: Real>(a: &[F], rgb: [F; 3]) -> [F; 3] {
    std::array::from_fn(|r| {
        a[r * 4] * rgb[0] + a[r * 4 + 1] * rgb[1] + a[r * 4 + 2] * rgb[2] + a[r * 4 + 3]
    })
}

/// `A[:, :3]^T go`: the gradient of [`apply_matrix`] with respect to `rgb`.
pub(crate) fn matrix_transpose_times<F: Real>(a: &[F], go: &[F]) -> [F; 3] {
    std::array::from_fn(|c| a[c] * go[0] + a[4 + c] * go[1] + a[8 + c] * go[2])
}

/// `out = A rgb + b` for rows of pixels.
fn affine_apply<F: Real>(a: &[F], render: &[F], out: &mut [F]) {
    for (px, o) in render.chunks_exact(3).zip(out.chunks_exact_mut(3)) {
        o.copy_from_slice(&apply_matrix(a, [px[0], px[1], px[2]]));
    }
}

/// Backward of [`affine_apply`]: `grad_render = A^T go`, `grad_a += sum go (rgb, 1)^T`.
fn affine_backward<F: Real>(
    a: &[F],
    render: &[F],
    go: &[F],
    grad_render: &mut [F],
    grad_a: &mut [F],
) {
    let rows = render.chunks_exact(3).zip(go.chunks_exact(3));
    for ((px, g), gr) in rows.zip(grad_render.chunks_exact_mut(3)) {
        gr.copy_from_slice(&matrix_transpose_times(a, g));
        for r in 0..3 {
            grad_a[r * 4] += g[r] * px[0];
            grad_a[r * 4 + 1] += g[r] * px[1];
            grad_a[r * 4 + 2] += g[r] * px[2];
            grad_a[r * 4 + 3] += g[r];
        }
    }
}

/// Applies one image's model (`params`) to rows `y0 ..` of a `w x h` render.
fn apply_rows<F: Real>(
    kind: AppearanceKind,
    params: &[F],
    render: &[F],
    w: usize,
    h: usize,
    y0: usize,
    out: &mut [F],
) {
    match kind {
        AppearanceKind::None => out.copy_from_slice(render),
        AppearanceKind::Affine => affine_apply(params, render, out),
        AppearanceKind::BilateralGrid => bilagrid::apply_rows(params, render, w, h, y0, out),
    }
}

#[allow(clippy::too_many_arguments)]
fn backward_rows<F: Real>(
    kind: AppearanceKind,
    params: &[F],
    render: &[F],
    grad_out: &[F],
    w: usize,
    h: usize,
    y0: usize,
    grad_render: &mut [F],
    grad_params: &mut [F],
) {
    match kind {
        AppearanceKind::None => grad_render.copy_from_slice(grad_out),
        AppearanceKind::Affine => {
            affine_backward(params, render, grad_out, grad_render, grad_params)
        }
        AppearanceKind::BilateralGrid => {
            bilagrid::backward_rows(params, render, grad_out, w, h, y0, grad_render, grad_params)
        }
    }
}

/// The whole-image twin: one image's model applied to a `w x h` render, in one pass.
pub fn apply<F: Real>(
    kind: AppearanceKind,
    params: &[F],
    render: &[F],
    w: usize,
    h: usize,
    out: &mut [F],
) {
    apply_rows(kind, params, render, w, h, 0, out);
}

/// The whole-image twin of the backward: `dL/drender` into `grad_render`, `dL/dparams` added into
/// `grad_params`.
#[allow(clippy::too_many_arguments)]
pub fn backward<F: Real>(
    kind: AppearanceKind,
    params: &[F],
    render: &[F],
    grad_out: &[F],
    w: usize,
    h: usize,
    grad_render: &mut [F],
    grad_params: &mut [F],
) {
    backward_rows(
        kind,
        params,
        render,
        grad_out,
        w,
        h,
        0,
        grad_render,
        grad_params,
    );
}

/// The regularizer's loss over every image's parameters, its gradient added into `grad`.
pub fn regularizer<F: Real>(
    kind: AppearanceKind,
    params: &[F],
    images: usize,
    grad: &mut [F],
) -> f64 {
    match kind {
        AppearanceKind::BilateralGrid => bilagrid::total_variation(params, images, grad),
        _ => 0.0,
    }
}

/// Rows per band of the parallel passes (fixed, so results do not depend on the thread count).
const BAND_ROWS: usize = 16;

/// The training side: the model of a step's view applied and differentiated over bands of rows in
/// parallel, with buffers kept between steps.
#[derive(Default)]
pub struct Appearance {
    /// The corrected render of the last view.
    pub corrected: Vec<f32>,
    /// `dL/drender` of the last view.
    pub grad_render: Vec<f32>,
    /// Per band, its part of the parameter gradient (summed in band order).
    partial: Vec<f32>,
    /// The models' mean and the identity, per parameter ([`Appearance::center`]).
    mean: Vec<f64>,
    identity: Vec<f64>,
    /// Per grid, its total-variation sums.
    tv_sums: Vec<[f64; 3]>,
}

impl Appearance {
    /// `self.corrected` = image `params`' model applied to `render`.
    pub fn apply(
        &mut self,
        kind: AppearanceKind,
        params: &[f32],
        render: &[f32],
        w: usize,
        h: usize,
    ) {
        self.corrected.resize(render.len(), 0.0);
        let row = (w * 3).max(1);
        let band = BAND_ROWS * row;
        self.corrected
            .par_chunks_mut(band)
            .zip(render.par_chunks(band))
            .enumerate()
            .for_each(|(b, (out, r))| apply_rows(kind, params, r, w, h, b * BAND_ROWS, out));
    }

    /// `self.grad_render` = `dL/drender` from `grad_out` (`dL/dcorrected`); image `params`' gradient
    /// added into `grad_params`.
    #[allow(clippy::too_many_arguments)]
    pub fn backward(
        &mut self,
        kind: AppearanceKind,
        params: &[f32],
        render: &[f32],
        grad_out: &[f32],
        w: usize,
        h: usize,
        grad_params: &mut [f32],
    ) {
        let n = kind.per_image();
        let row = (w * 3).max(1);
        let band = BAND_ROWS * row;
        let bands = render.len().div_ceil(band);
        self.grad_render.resize(render.len(), 0.0);
        self.partial.clear();
        self.partial.resize(bands * n.max(1), 0.0);
        self.grad_render
            .par_chunks_mut(band)
            .zip(render.par_chunks(band))
            .zip(grad_out.par_chunks(band))
            .zip(self.partial.par_chunks_mut(n.max(1)))
            .enumerate()
            .for_each(|(b, (((gr, r), go), part))| {
                backward_rows(kind, params, r, go, w, h, b * BAND_ROWS, gr, &mut part[..n]);
            });
        for part in self.partial.chunks_exact(n.max(1)) {
            for (g, p) in grad_params.iter_mut().zip(part) {
                *g += *p;
            }
        }
    }

    /// [`regularizer`] with buffers kept between steps.
    pub fn regularize(&mut self, model: &AppearanceState, grad: &mut [f32]) -> f64 {
        match model.kind {
            AppearanceKind::BilateralGrid => {
                bilagrid::total_variation_with(&model.params, model.images, grad, &mut self.tv_sums)
            }
            _ => 0.0,
        }
    }

    /// Keeps the mean of the models over the images at the identity, by moving every image's model by
    /// the same amount after each update. A colour map applied to the scene and undone in every
    /// image's model renders every photo the same, so the loss cannot tell where the scene's colours
    /// sit between the photos; left free they drift (a green cast on the demo's exposure capture:
    /// test PSNR 16.1 dB where the geometry was right; 24.6 dB held). Held, the scene has the colours
    /// of the average photo, which test views, exports and viewers show.
    pub fn center(&mut self, model: &mut AppearanceState) {
        let n = model.kind.per_image();
        if model.images == 0 || n == 0 {
            return;
        }
        self.mean.clear();
        self.mean.resize(n, 0.0);
        // Per parameter, the sum over the images in image order (whatever the split into chunks).
        const CHUNK: usize = 1024;
        let params = &model.params;
        self.mean
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, sums)| {
                for image in params.chunks_exact(n) {
                    let part = &image[c * CHUNK..c * CHUNK + sums.len()];
                    for (m, &p) in sums.iter_mut().zip(part) {
                        *m += p as f64;
                    }
                }
            });
        self.identity.resize(n, 0.0);
        identity(model.kind, &mut self.identity);
        let images = model.images as f64;
        for (m, i) in self.mean.iter_mut().zip(&self.identity) {
            *m = *m / images - i;
        }
        let shift = &self.mean;
        model.params.par_chunks_mut(n).for_each(|image| {
            for (p, s) in image.iter_mut().zip(shift) {
                *p -= *s as f32;
            }
        });
    }
}
