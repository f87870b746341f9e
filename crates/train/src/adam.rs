//! Adam with PyTorch's update rule, one state per parameter group, `eps = 1e-15` as in the original.
//!
//! `m = b1 m + (1 - b1) g`, `v = b2 v + (1 - b2) g^2`,
//! `p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)`, with `t` the group's step count.

use rayon::prelude::*;
use splat_render::sh::{sh_dc_grad, sh_rest_grad};

pub const BETA1: f64 = 0.9;
pub const BETA2: f64 = 0.999;
pub const EPS: f64 = 1e-15;

/// Floating-point operations per parameter of one update (moments 6, square root, divide, step 4).
pub const FLOPS_PER_PARAM: f64 = 12.0;

/// Moments of one parameter group (flattened like the parameters) and its step count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AdamState {
    pub m: Vec<f32>,
    pub v: Vec<f32>,
    pub step: u64,
}

impl AdamState {
    pub fn zeros(len: usize) -> Self {
        AdamState {
            m: vec![0.0; len],
            v: vec![0.0; len],
            step: 0,
        }
    }

    /// One Adam step on `params` with gradient `grads`.
    pub fn update(&mut self, params: &mut [f32], grads: &[f32], lr: f64) {
        self.update_with_betas(params, grads, lr, (BETA1, BETA2));
    }

    /// One Adam step with the momenta `betas` (batched training scales them).
    pub fn update_with_betas(
        &mut self,
        params: &mut [f32],
        grads: &[f32],
        lr: f64,
        betas: (f64, f64),
    ) {
        assert_eq!(params.len(), grads.len());
        assert_eq!(params.len(), self.m.len());
        let k = self.next_step(lr, betas);
        // Element-wise, so the split across threads cannot change a result.
        const CHUNK: usize = 16_384;
        params
            .par_chunks_mut(CHUNK)
            .zip(grads.par_chunks(CHUNK))
            .zip(self.m.par_chunks_mut(CHUNK))
            .zip(self.v.par_chunks_mut(CHUNK))
            .for_each(|(((p, g), ms), vs)| {
                for i in 0..p.len() {
                    k.apply(&mut p[i], &mut ms[i], &mut vs[i], g[i]);
                }
            });
    }

    /// One Adam step on a group of `width` values per Gaussian whose gradient was not stored:
    /// `grad_of(i, out)` writes Gaussian `i`'s into `out` as the update reaches it. With
    /// [`ShGradSource`] this forms the SH gradients of a one-view step bit for bit as project backward
    /// would have stored them, so the result equals [`Self::update_with_betas`] on a stored gradient.
    pub fn update_formed(
        &mut self,
        params: &mut [f32],
        width: usize,
        lr: f64,
        betas: (f64, f64),
        grad_of: &(dyn Fn(usize, &mut [f32]) + Sync),
    ) {
        assert_eq!(params.len(), self.m.len());
        assert!(width <= MAX_WIDTH, "{width} values per Gaussian");
        let k = self.next_step(lr, betas);
        if width == 0 {
            return;
        }
        // Element-wise per Gaussian, so the split across threads cannot change a result.
        const GAUSSIANS: usize = 512;
        let chunk = GAUSSIANS * width;
        params
            .par_chunks_mut(chunk)
            .zip(self.m.par_chunks_mut(chunk))
            .zip(self.v.par_chunks_mut(chunk))
            .enumerate()
            .for_each(|(c, ((p, ms), vs))| {
                let mut g = [0.0f32; MAX_WIDTH];
                let g = &mut g[..width];
                for (j, ((p, ms), vs)) in p
                    .chunks_exact_mut(width)
                    .zip(ms.chunks_exact_mut(width))
                    .zip(vs.chunks_exact_mut(width))
                    .enumerate()
                {
                    grad_of(c * GAUSSIANS + j, g);
                    for e in 0..width {
                        k.apply(&mut p[e], &mut ms[e], &mut vs[e], g[e]);
                    }
                }
            });
    }

    /// Advances the step count and returns that step's constants.
    fn next_step(&mut self, lr: f64, (beta1, beta2): (f64, f64)) -> StepConstants {
        self.step += 1;
        let bias1 = 1.0 - beta1.powi(self.step as i32);
        let bias2 = 1.0 - beta2.powi(self.step as i32);
        StepConstants {
            step_size: (lr / bias1) as f32,
            inv_sqrt_bias2: (1.0 / bias2.sqrt()) as f32,
            b1: beta1 as f32,
            b2: beta2 as f32,
            eps: EPS as f32,
        }
    }
}

/// Most values per Gaussian [`AdamState::update_formed`] takes (SH rest at degree 3 is 45).
const MAX_WIDTH: usize = 48;

/// What the SH gradients of a one-view step are formed from: the means the step rendered with and the
/// camera centre (the view direction), the active coefficient count, and the projection's visibility,
/// clamp flags and colour gradients.
pub struct ShGradSource<'a> {
    pub means: &'a [[f32; 3]],
    pub center: [f32; 3],
    pub coeffs: usize,
    pub radii: &'a [u32],
    pub clamped: &'a [[bool; 3]],
    pub grad_colors: &'a [[f32; 3]],
}

impl ShGradSource<'_> {
    /// Gaussian `i`'s SH-DC gradient into `out` (3 values).
    pub fn dc(&self, i: usize, out: &mut [f32]) {
        out.copy_from_slice(&sh_dc_grad(
            self.radii[i] > 0,
            self.grad_colors[i],
            self.clamped[i],
        ));
    }

    /// Gaussian `i`'s SH-rest gradient into `out` (the scene's SH-rest length).
    pub fn rest(&self, i: usize, out: &mut [f32]) {
        sh_rest_grad(
            self.means[i],
            self.center,
            self.coeffs,
            self.radii[i] > 0,
            self.grad_colors[i],
            self.clamped[i],
            out,
        );
    }
}

#[derive(Clone, Copy)]
struct StepConstants {
    step_size: f32,
    inv_sqrt_bias2: f32,
    b1: f32,
    b2: f32,
    eps: f32,
}

impl StepConstants {
    #[inline(always)]
    fn apply(&self, p: &mut f32, m: &mut f32, v: &mut f32, g: f32) {
        let mm = self.b1 * *m + (1.0 - self.b1) * g;
        let vv = self.b2 * *v + (1.0 - self.b2) * g * g;
        *m = mm;
        *v = vv;
        *p -= self.step_size * mm / (vv.sqrt() * self.inv_sqrt_bias2 + self.eps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_step_moves_by_lr_in_the_gradient_sign() {
        let mut s = AdamState::zeros(3);
        let mut p = [1.0f32, 1.0, 1.0];
        s.update(&mut p, &[0.5, -2.0, 0.0], 0.1);
        assert!((p[0] - 0.9).abs() < 1e-6 && (p[1] - 1.1).abs() < 1e-6 && p[2] == 1.0);
        assert_eq!(s.step, 1);
    }

    #[test]
    fn matches_a_hand_computed_second_step() {
        let mut s = AdamState::zeros(1);
        let mut p = [0.0f32];
        s.update(&mut p, &[1.0], 0.01);
        s.update(&mut p, &[0.5], 0.01);
        let m = 0.9 * 0.1 + 0.1 * 0.5;
        let v: f64 = 0.999 * 0.001 + 0.001 * 0.25;
        let expected = -0.01 - 0.01 / (1.0 - 0.81) * m / (v.sqrt() / (1.0f64 - 0.998001).sqrt());
        assert!(
            (p[0] as f64 - expected).abs() < 1e-6,
            "{} vs {expected}",
            p[0]
        );
    }
}
