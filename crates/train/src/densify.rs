//! Adaptive density control, as the original: statistics of the view-space positional gradient, then every
//! `densify_interval` steps clone (small Gaussians), split (large ones) and prune; and the periodic opacity
//! reset. Parameters, Adam moments and statistics are edited together; new Gaussians start with zero
//! moments.
//!
//! The statistic is the norm of the gradient of the loss with respect to the projected 2D mean, expressed in
//! normalized device coordinates (`grad_px * width / 2`, `grad_py * height / 2`): the original computes the
//! gradient with respect to NDC, and its 0.0002 threshold is in those units. With `--absgrad` (AbsGS,
//! Ye et al. 2024) the gradient summed over pixels is replaced by the sum of its per-pixel absolute
//! values, component-wise: gradients of opposite sign in different pixels no longer cancel, so large
//! Gaussians over fine detail get split; the threshold is then 0.0008 (gsplat's recommendation).

use splat_core::math::{mat3_vec, quat_to_mat};
use splat_core::{logit, sigmoid, Gaussians};
use splat_render::{Projected, ProjectedGrads};

use crate::adam::AdamState;
use crate::config::TrainConfig;
use crate::state::{group_params, group_width, TrainState, GROUPS};

/// Adds one view's densification statistics into per-step buffers: per visible Gaussian, the norm of
/// its 2D-mean gradient in NDC units (the pixel gradient times W/2, H/2, as the original measures it),
/// a count of 1, and its radius into the running maximum. With `absgrad` the gradient is AbsGS's: per
/// component, the sum over pixels of the absolute per-pixel gradients
/// ([`ProjectedGrads::abs_grad_means2d`], which the render must have produced).
#[allow(clippy::too_many_arguments)]
pub fn view_stats(
    projected: &Projected<f32>,
    grads: &ProjectedGrads<f32>,
    absgrad: bool,
    width: u32,
    height: u32,
    norms: &mut [f32],
    counts: &mut [f32],
    radii: &mut [f32],
) {
    let (hw, hh) = (0.5 * width as f32, 0.5 * height as f32);
    let source = if absgrad {
        assert_eq!(
            grads.abs_grad_means2d.len(),
            norms.len(),
            "absgrad statistics requested but the backend did not produce them"
        );
        &grads.abs_grad_means2d
    } else {
        &grads.grad_means2d
    };
    for i in 0..norms.len() {
        let r = projected.radii[i];
        if r == 0 {
            continue;
        }
        let [gx, gy] = source[i];
        norms[i] += ((gx * hw).powi(2) + (gy * hh).powi(2)).sqrt();
        counts[i] += 1.0;
        radii[i] = radii[i].max(r as f32);
    }
}

/// One step's densification statistics per Gaussian, summed over its views (and ranks): the 2D-mean
/// gradient norms in NDC units, how many views saw each Gaussian, and its largest radius. The buffers
/// keep their capacity from step to step.
#[derive(Clone, Debug, Default)]
pub struct StepStatistics {
    pub norms: Vec<f32>,
    pub counts: Vec<f32>,
    pub radii: Vec<f32>,
}

impl StepStatistics {
    /// Zeroes the statistics of `n` Gaussians.
    pub fn clear(&mut self, n: usize) {
        for v in [&mut self.norms, &mut self.counts, &mut self.radii] {
            v.clear();
            v.resize(n, 0.0);
        }
    }

    /// Adds the view of `size` (width, height) just rendered ([`view_stats`]).
    pub fn add_view(
        &mut self,
        projected: &Projected<f32>,
        grads: &ProjectedGrads<f32>,
        absgrad: bool,
        size: (u32, u32),
    ) {
        let (w, h) = size;
        view_stats(
            projected,
            grads,
            absgrad,
            w,
            h,
            &mut self.norms,
            &mut self.counts,
            &mut self.radii,
        );
    }

    /// Adds the step's statistics to the running ones of `state` ([`apply_stats`]).
    pub fn apply(&self, state: &mut TrainState) {
        apply_stats(state, &self.norms, &self.counts, &self.radii);
    }
}

/// Adds a step's statistics (summed over its views and ranks) to the running ones.
pub fn apply_stats(state: &mut TrainState, norms: &[f32], counts: &[f32], radii: &[f32]) {
    for i in 0..state.len() {
        state.grad_accum[i] += norms[i];
        state.grad_count[i] += counts[i];
        state.max_radii[i] = state.max_radii[i].max(radii[i]);
    }
}

/// What one densification did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DensifyReport {
    pub cloned: usize,
    pub split: usize,
    pub pruned: usize,
}

fn max_scale(g: &Gaussians<f32>, i: usize) -> f32 {
    g.log_scales[i]
        .iter()
        .cloned()
        .fold(f32::NEG_INFINITY, f32::max)
        .exp()
}

/// Where a Gaussian of the edited set comes from.
#[derive(Clone, Copy)]
enum Source {
    Old(usize),
    /// A copy of an old Gaussian (a clone): its parameters, fresh moments.
    Clone(usize),
    /// Index into the new Gaussians (split children).
    New(usize),
}

/// The standard normal sample of split `child` (0 or 1) of Gaussian `parent` along `axis` at iteration
/// `step` ([`crate::random`]: the GPU draws the same).
pub fn split_normal(seed: u64, step: u64, parent: u32, child: u32, axis: u32) -> f32 {
    crate::random::normal(seed, step as u32, parent, 3 * child + axis)
}

/// Clone, split and prune at iteration `step`.
pub fn densify_and_prune(
    state: &mut TrainState,
    cfg: &TrainConfig,
    extent: f64,
    step: u64,
) -> DensifyReport {
    let n = state.len();
    let g = &state.gaussians;
    let threshold = cfg.densify_grad_threshold as f32;
    let dense = (cfg.percent_dense * extent) as f32;
    let avg: Vec<f32> = (0..n)
        .map(|i| {
            let c = state.grad_count[i];
            if c > 0.0 {
                state.grad_accum[i] / c
            } else {
                0.0
            }
        })
        .collect();
    let mut candidates: Vec<usize> = (0..n).filter(|&i| avg[i] >= threshold).collect();
    if let Some(cap) = cfg.max_gaussians {
        // Each clone or split adds one Gaussian; keep the ones with the largest gradients.
        let budget = cap.saturating_sub(n);
        if candidates.len() > budget {
            candidates.sort_by(|&a, &b| avg[b].total_cmp(&avg[a]).then(a.cmp(&b)));
            candidates.truncate(budget);
            candidates.sort_unstable();
        }
    }
    let mut is_clone = vec![false; n];
    let mut is_split = vec![false; n];
    for &i in &candidates {
        if max_scale(g, i) <= dense {
            is_clone[i] = true;
        } else {
            is_split[i] = true;
        }
    }

    // Split children: 2 per parent, positions sampled from the parent, scales / 1.6.
    let mut children = Gaussians::<f32>::new(g.sh_degree);
    let shrink = (1.6f32).ln();
    for i in (0..n).filter(|&i| is_split[i]) {
        let q = g.rotations[i];
        let norm = q.iter().map(|v| v * v).sum::<f32>().sqrt();
        let rot = quat_to_mat(q.map(|v| v / norm));
        let scale = g.log_scales[i].map(f32::exp);
        for child in 0..2u32 {
            let z: [f32; 3] = std::array::from_fn(|k| {
                split_normal(cfg.seed, step, i as u32, child, k as u32) * scale[k]
            });
            let off = mat3_vec(&rot, z);
            let m = g.means[i];
            children.push(
                [m[0] + off[0], m[1] + off[1], m[2] + off[2]],
                g.log_scales[i].map(|s| s - shrink),
                q,
                g.opacity_logits[i],
                g.sh_dc[i],
                g.sh_rest_of(i),
            );
        }
    }

    // Children drawn, the set not yet edited.
    crate::testhook::pause_point("densify", step);

    // The edited set, before pruning: survivors, clones, children (the original's order).
    let mut rows: Vec<(Source, f32)> = Vec::with_capacity(n + candidates.len() * 2);
    for i in (0..n).filter(|&i| !is_split[i]) {
        rows.push((Source::Old(i), state.max_radii[i]));
    }
    for i in (0..n).filter(|&i| is_clone[i]) {
        rows.push((Source::Clone(i), state.max_radii[i]));
    }
    for k in 0..children.len() {
        rows.push((Source::New(k), 0.0));
    }
    let before_prune = rows.len();
    let late = step > cfg.opacity_reset_interval;
    let big_world = (cfg.prune_world_scale * extent) as f32;
    rows.retain(|&(src, radius)| {
        let (gs, i) = match src {
            Source::Old(i) | Source::Clone(i) => (&state.gaussians, i),
            Source::New(k) => (&children, k),
        };
        let opacity = sigmoid(gs.opacity_logits[i]);
        let mut prune = opacity < cfg.min_opacity as f32;
        if late {
            prune |= cfg.prune_world_scale > 0.0 && max_scale(gs, i) > big_world;
            if let Some(r) = cfg.prune_screen_radius {
                prune |= radius > r as f32;
            }
        }
        !prune
    });
    let report = DensifyReport {
        cloned: is_clone.iter().filter(|&&c| c).count(),
        split: is_split.iter().filter(|&&s| s).count(),
        pruned: before_prune - rows.len(),
    };
    rebuild(state, &rows, &children);
    report
}

/// Replaces parameters and moments by the rows' sources; resets the statistics.
fn rebuild(state: &mut TrainState, rows: &[(Source, f32)], children: &Gaussians<f32>) {
    let old = &state.gaussians;
    let mut g = Gaussians::<f32>::new(old.sh_degree);
    g.antialiased = old.antialiased;
    for &(src, _) in rows {
        let (gs, i) = match src {
            Source::Old(i) | Source::Clone(i) => (old, i),
            Source::New(k) => (children, k),
        };
        g.push(
            gs.means[i],
            gs.log_scales[i],
            gs.rotations[i],
            gs.opacity_logits[i],
            gs.sh_dc[i],
            gs.sh_rest_of(i),
        );
    }
    let mut adam = Vec::with_capacity(GROUPS.len());
    for (gi, st) in state.adam.iter().enumerate() {
        let w = group_width(old, gi);
        let mut m = Vec::with_capacity(rows.len() * w);
        let mut v = Vec::with_capacity(rows.len() * w);
        for &(src, _) in rows {
            match src {
                Source::Old(i) => {
                    m.extend_from_slice(&st.m[i * w..(i + 1) * w]);
                    v.extend_from_slice(&st.v[i * w..(i + 1) * w]);
                }
                Source::Clone(_) | Source::New(_) => {
                    m.extend(std::iter::repeat_n(0.0, w));
                    v.extend(std::iter::repeat_n(0.0, w));
                }
            }
        }
        adam.push(AdamState {
            m,
            v,
            step: st.step,
        });
    }
    let n = g.len();
    state.gaussians = g;
    state.adam = adam;
    reset_stats(state, n);
}

/// Zeroes the densification statistics for `n` Gaussians.
pub fn reset_stats(state: &mut TrainState, n: usize) {
    for v in [
        &mut state.grad_accum,
        &mut state.grad_count,
        &mut state.max_radii,
    ] {
        v.clear();
        v.resize(n, 0.0);
    }
}

/// `opacity = min(opacity, 0.01)` (under the 3D filter: the effective opacity), with the opacity
/// moments zeroed.
pub fn reset_opacity(state: &mut TrainState) {
    if state.filter_3d.is_empty() {
        let cap = logit(0.01f32);
        for l in group_params(&mut state.gaussians, 3) {
            *l = l.min(cap);
        }
    } else {
        crate::mip::reset_opacity(&mut state.gaussians, &state.filter_3d);
    }
    let st = &mut state.adam[3];
    st.m.fill(0.0);
    st.v.fill(0.0);
}
