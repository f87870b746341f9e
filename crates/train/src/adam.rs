//! Adam with PyTorch's update rule, one state per parameter group, `eps = 1e-15` as in the original.
//!
//! `m = b1 m + (1 - b1) g`, `v = b2 v + (1 - b2) g^2`,
//! `p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)`, with `t` the group's step count.

use rayon::prelude::*;

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
        (beta1, beta2): (f64, f64),
    ) {
        assert_eq!(params.len(), grads.len());
        assert_eq!(params.len(), self.m.len());
        self.step += 1;
        let bias1 = 1.0 - beta1.powi(self.step as i32);
        let bias2 = 1.0 - beta2.powi(self.step as i32);
        let step_size = (lr / bias1) as f32;
        let inv_sqrt_bias2 = (1.0 / bias2.sqrt()) as f32;
        let (b1, b2, eps) = (beta1 as f32, beta2 as f32, EPS as f32);
        // Element-wise, so the split across threads cannot change a result.
        const CHUNK: usize = 16_384;
        params
            .par_chunks_mut(CHUNK)
            .zip(grads.par_chunks(CHUNK))
            .zip(self.m.par_chunks_mut(CHUNK))
            .zip(self.v.par_chunks_mut(CHUNK))
            .for_each(|(((p, g), ms), vs)| {
                for i in 0..p.len() {
                    let g = g[i];
                    let m = b1 * ms[i] + (1.0 - b1) * g;
                    let v = b2 * vs[i] + (1.0 - b2) * g * g;
                    ms[i] = m;
                    vs[i] = v;
                    p[i] -= step_size * m / (v.sqrt() * inv_sqrt_bias2 + eps);
                }
            });
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
