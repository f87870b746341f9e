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

    /// [`Self::update_with_betas`] on a group of `width` values per Gaussian, leaving Gaussian `i`
    /// (parameters and both moments) untouched where `visible[i]` is 0: visible-only Adam. The step
    /// count advances as for a full update, so a Gaussian seen again resumes with the global bias
    /// correction, as gsplat's `SelectiveAdam`.
    pub fn update_visible(
        &mut self,
        params: &mut [f32],
        grads: &[f32],
        width: usize,
        lr: f64,
        betas: (f64, f64),
        visible: &[f32],
    ) {
        assert_eq!(params.len(), grads.len());
        assert_eq!(params.len(), self.m.len());
        assert_eq!(params.len(), visible.len() * width);
        let k = self.next_step(lr, betas);
        if width == 0 {
            return;
        }
        // Element-wise per Gaussian, so the split across threads cannot change a result.
        const GAUSSIANS: usize = 512;
        let chunk = GAUSSIANS * width;
        params
            .par_chunks_mut(chunk)
            .zip(grads.par_chunks(chunk))
            .zip(self.m.par_chunks_mut(chunk))
            .zip(self.v.par_chunks_mut(chunk))
            .zip(visible.par_chunks(GAUSSIANS))
            .for_each(|((((p, g), ms), vs), seen)| {
                for (j, _) in seen.iter().enumerate().filter(|(_, &s)| s != 0.0) {
                    let r = j * width..(j + 1) * width;
                    let rows = p[r.clone()].iter_mut().zip(&g[r.clone()]);
                    for ((p, g), (m, v)) in rows.zip(ms[r.clone()].iter_mut().zip(&mut vs[r])) {
                        k.apply(p, m, v, *g);
                    }
                }
            });
    }

    /// One Adam step on a group of `width` values per Gaussian whose gradient was not stored:
    /// `grad_of(i, out)` writes Gaussian `i`'s into `out` as the update reaches it. With
    /// [`ShGradSource`] this forms the SH gradients of a one-view step bit for bit as project backward
    /// would have stored them, so the result equals [`Self::update_with_betas`] on a stored gradient
    /// (or [`Self::update_visible`] with `visible`).
    pub fn update_formed(
        &mut self,
        params: &mut [f32],
        width: usize,
        lr: f64,
        betas: (f64, f64),
        visible: Option<&[f32]>,
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
                    let i = c * GAUSSIANS + j;
                    if visible.is_some_and(|seen| seen[i] == 0.0) {
                        continue;
                    }
                    grad_of(i, g);
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

    /// The plain twin of [`AdamState::update_visible`]: one Gaussian at a time, the constants formed
    /// here.
    fn reference_visible(s: &mut AdamState, p: &mut [f32], g: &[f32], width: usize, seen: &[f32]) {
        s.step += 1;
        let t = s.step as i32;
        let step_size = (0.01 / (1.0 - BETA1.powi(t))) as f32;
        let inv = (1.0 / (1.0 - BETA2.powi(t)).sqrt()) as f32;
        let (b1, b2) = (BETA1 as f32, BETA2 as f32);
        for i in (0..seen.len()).filter(|&i| seen[i] != 0.0) {
            for e in i * width..(i + 1) * width {
                s.m[e] = b1 * s.m[e] + (1.0 - b1) * g[e];
                s.v[e] = b2 * s.v[e] + (1.0 - b2) * g[e] * g[e];
                p[e] -= step_size * s.m[e] / (s.v[e].sqrt() * inv + EPS as f32);
            }
        }
    }

    #[test]
    fn visible_update_matches_its_twin_and_leaves_the_unseen() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for width in [1usize, 3, 4, 45] {
            let n = 1_300;
            let mut fast = AdamState::zeros(n * width);
            let mut p_fast: Vec<f32> = (0..n * width)
                .map(|_| rng.random_range(-1.0..1.0))
                .collect();
            let (mut twin, mut p_twin) = (fast.clone(), p_fast.clone());
            for _ in 0..3 {
                let g: Vec<f32> = (0..n * width)
                    .map(|_| rng.random_range(-1.0..1.0))
                    .collect();
                let seen: Vec<f32> = (0..n).map(|_| rng.random_bool(0.6) as u8 as f32).collect();
                let before = (p_fast.clone(), fast.m.clone());
                fast.update_visible(&mut p_fast, &g, width, 0.01, (BETA1, BETA2), &seen);
                reference_visible(&mut twin, &mut p_twin, &g, width, &seen);
                assert_eq!((&p_fast, &fast), (&p_twin, &twin), "width {width}");
                for i in (0..n).filter(|&i| seen[i] == 0.0) {
                    let r = i * width..(i + 1) * width;
                    assert_eq!(p_fast[r.clone()], before.0[r.clone()]);
                    assert_eq!(fast.m[r.clone()], before.1[r]);
                }
            }
            assert_eq!(fast.step, 3);
        }
    }
}
