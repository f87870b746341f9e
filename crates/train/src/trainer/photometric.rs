//! The photometric part of a view's pass: the render through the image's colour model
//! ([`crate::appearance`], when the run has one), the loss against the photo over the pixels its
//! mask keeps, and `dL/drender` back through the model into `grad_image` (the model's own gradient
//! into `appearance_grads`). The model's update and regularizer run with the optimizer.

use super::Trainer;
use crate::appearance::{AppearanceKind, AppearanceState};
use crate::loss::{loss_grad_and_psnr_masked, LossValue};

impl<'a> Trainer<'a> {
    /// Loss and training PSNR of view `vi`'s render (`w x h`); `grad_image` gets `dL/drender`.
    pub(super) fn photometric(&mut self, vi: usize, w: usize, h: usize) -> (LossValue, f64) {
        let view = &self.scaled.of(self.views)[vi];
        let mask = match &view.mask {
            Some(m) => {
                m.weights(&mut self.mask_weights);
                Some(&self.mask_weights[..])
            }
            None => None,
        };
        let lambda = self.cfg.lambda_dssim;
        let render = &self.buffers.raster.image;
        let kind = self.cfg.appearance;
        let Some(model) = self
            .state
            .appearance
            .as_ref()
            .filter(|_| kind != AppearanceKind::None)
        else {
            let (ssim, grad) = (&mut self.ssim, &mut self.grad_image);
            return loss_grad_and_psnr_masked(render, &self.target, mask, w, h, lambda, ssim, grad);
        };
        let params = model.of_image(vi);
        self.appearance.apply(kind, params, render, w, h);
        let corrected = &self.appearance.corrected;
        let (ssim, grad) = (&mut self.ssim, &mut self.grad_image);
        let out =
            loss_grad_and_psnr_masked(corrected, &self.target, mask, w, h, lambda, ssim, grad);
        let n = kind.per_image();
        let grads = &mut self.appearance_grads[vi * n..(vi + 1) * n];
        self.appearance
            .backward(kind, params, render, &self.grad_image, w, h, grads);
        std::mem::swap(&mut self.grad_image, &mut self.appearance.grad_render);
        out
    }

    /// Gives the state the run's appearance models: kept from a checkpoint of the same kind and image
    /// count, otherwise every image at the identity (none without `--appearance`).
    pub(super) fn with_appearance(mut self) -> Self {
        let kind = self.cfg.appearance;
        let images = self.views.len();
        let fits = |a: &AppearanceState| a.kind == kind && a.images == images;
        if kind == AppearanceKind::None {
            self.state.appearance = None;
        } else if !self.state.appearance.as_ref().is_some_and(fits) {
            self.state.appearance = Some(AppearanceState::new(kind, images));
        }
        self.appearance_grads = vec![0.0; images * kind.per_image()];
        self
    }

    /// Zeroes the models' gradients at the start of a step.
    pub(super) fn clear_appearance_grads(&mut self) {
        self.appearance_grads.fill(0.0);
    }

    /// Whether the models' gradients are finite.
    pub(super) fn appearance_grads_finite(&self) -> bool {
        self.appearance_grads
            .iter()
            .fold(0.0f32, |a, &b| a + b * 0.0)
            .is_finite()
    }

    /// The models' regularizer and Adam step at iteration `it` (every image's, as gsplat and the
    /// original update theirs).
    pub(super) fn optimize_appearance(&mut self, it: u64) {
        let Some(model) = self.state.appearance.as_mut() else {
            return;
        };
        let kind = model.kind;
        self.appearance
            .regularize(model, &mut self.appearance_grads);
        let lr = kind.learning_rate(it, self.cfg.iterations, self.cfg.batch);
        let betas = (crate::adam::BETA1, crate::adam::BETA2);
        let grads = &self.appearance_grads;
        model
            .adam
            .update_with_betas(&mut model.params, grads, lr, betas);
        self.appearance.center(model);
    }
}
