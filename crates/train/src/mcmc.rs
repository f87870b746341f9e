//! 3DGS-MCMC densification (Kheradmand et al. 2024, "3D Gaussian Splatting as Markov Chain Monte
//! Carlo"), as gsplat's `MCMCStrategy` does it. The Gaussians are samples of a distribution the loss
//! shapes; there is no cloning, splitting, pruning or opacity reset. Instead:
//!
//! - Every refine step (after that step's Adam update), *relocate* the dead ones (opacity at or
//!   below `min_opacity`): each takes the parameters of an alive Gaussian drawn with probability
//!   proportional to opacity, and a source drawn `N - 1` times (so `N` Gaussians share its place)
//!   gets opacity `o' = 1 - (1 - o)^(1/N)` and scales times `o / D(o', N)`, with
//!   `D = sum_{i=1..N} sum_{k=0..i-1} C(i-1, k) (-1)^k o'^(k+1) / sqrt(k+1)`, so that the `N`
//!   copies render about as the one did (the paper's eq. 9). The sources' Adam moments are zeroed.
//! - Then *add* `min(cap, floor((1 + growth) N)) - N` Gaussians the same way, sources drawn from all
//!   with probability proportional to opacity, the copies appended with zero moments.
//! - Every step, *noise* the positions: `mu += Sigma eps gate(o) lr_means noise_lr` with
//!   `eps ~ N(0, I)`, `Sigma` the full 3D covariance and `gate(o) = sigmoid(-k (o - t))`, so that
//!   nearly transparent Gaussians wander and opaque ones stay.
//! - The loss adds `opacity_reg mean(o) + scale_reg mean(s)` (over every Gaussian; scales over the
//!   three axes), which pushes unneeded Gaussians towards death and relocation.
//!
//! The random draws are stateless functions of the seed, the step and an index ([`crate::random`]),
//! so a resumed run draws what an uninterrupted one would.

use splat_core::math::quat_to_mat;
use splat_core::{logit, sigmoid, Gaussians, Real};
use splat_io::dataset::Points;

use crate::config::McmcConfig;
use crate::state::{group_width, TrainState, GROUPS};

/// Largest number of Gaussians sharing one source in a relocation (gsplat's binomial table size).
pub const MAX_SHARES: usize = 51;

/// Key words of the random draws (the `c` of [`crate::random::hash`]; splits use 0..12).
const KEY_NOISE: u32 = 100;
const KEY_RELOCATE: u32 = 300;
const KEY_ADD: u32 = 301;
const KEY_INIT: u32 = 302;

/// What one refine step did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RefineReport {
    pub relocated: usize,
    pub added: usize,
}

/// `C(n, k)` for `n, k < MAX_SHARES`, exact in f64 (the largest, C(50, 25), is below 2^53).
fn binomials() -> Vec<[f64; MAX_SHARES]> {
    let mut t = vec![[0.0f64; MAX_SHARES]; MAX_SHARES];
    for n in 0..MAX_SHARES {
        t[n][0] = 1.0;
        for k in 1..=n {
            t[n][k] = t[n - 1][k - 1] + if k < n { t[n - 1][k] } else { 0.0 };
        }
    }
    t
}

/// The opacity and scale factor of a source shared by `shares` Gaussians (1..=[`MAX_SHARES`]): `o'`
/// (unclamped) and `o / D(o', shares)`.
pub fn shared_opacity_and_scale(
    opacity: f64,
    shares: usize,
    binoms: &[[f64; MAX_SHARES]],
) -> (f64, f64) {
    let n = shares.clamp(1, MAX_SHARES);
    let new_o = 1.0 - (1.0 - opacity).powf(1.0 / n as f64);
    let mut denom = 0.0;
    for i in 1..=n {
        for k in 0..i {
            let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
            denom += binoms[i - 1][k] * sign / ((k + 1) as f64).sqrt() * new_o.powi(k as i32 + 1);
        }
    }
    (new_o, opacity / denom)
}

/// `count` sources drawn with replacement from `candidates`, with probability proportional to their
/// opacity; `key` separates the draws of different purposes.
fn draw_by_opacity(
    g: &Gaussians<f32>,
    candidates: &[usize],
    count: usize,
    seed: u64,
    step: u64,
    key: u32,
) -> Vec<usize> {
    let mut cdf = Vec::with_capacity(candidates.len());
    let mut total = 0.0f64;
    for &i in candidates {
        total += sigmoid(g.opacity_logits[i]) as f64;
        cdf.push(total);
    }
    if !(total > 0.0) {
        return Vec::new();
    }
    (0..count)
        .map(|d| {
            let u = crate::random::unit(crate::random::hash(seed, step as u32, d as u32, key));
            let at = cdf.partition_point(|&c| c <= u as f64 * total);
            candidates[at.min(candidates.len() - 1)]
        })
        .collect()
}

/// Gives every distinct source in `sources` the opacity and scales of its share
/// ([`shared_opacity_and_scale`], the count of its draws plus one); the opacity is clamped to
/// `[min_opacity, 1 - eps]` after the scale factor is formed (as gsplat).
fn share_sources(g: &mut Gaussians<f32>, sources: &[usize], min_opacity: f64) {
    let binoms = binomials();
    let mut draws = std::collections::BTreeMap::<usize, usize>::new();
    for &j in sources {
        *draws.entry(j).or_default() += 1;
    }
    for (&j, &times) in &draws {
        let o = sigmoid(g.opacity_logits[j]) as f64;
        let (new_o, factor) = shared_opacity_and_scale(o, times + 1, &binoms);
        let new_o = new_o.clamp(min_opacity, 1.0 - f32::EPSILON as f64);
        g.opacity_logits[j] = logit(new_o as f32);
        let ln_factor = factor.ln() as f32;
        for s in &mut g.log_scales[j] {
            *s += ln_factor;
        }
    }
}

/// Copies Gaussian `src`'s parameters over `dst`'s.
fn copy_params(g: &mut Gaussians<f32>, src: usize, dst: usize) {
    g.means[dst] = g.means[src];
    g.log_scales[dst] = g.log_scales[src];
    g.rotations[dst] = g.rotations[src];
    g.opacity_logits[dst] = g.opacity_logits[src];
    g.sh_dc[dst] = g.sh_dc[src];
    let w = g.sh_rest_len();
    g.sh_rest.copy_within(src * w..(src + 1) * w, dst * w);
}

/// Zeroes every group's Adam moments of Gaussian `i`.
fn zero_moments(state: &mut TrainState, i: usize) {
    for gi in 0..GROUPS.len() {
        let w = group_width(&state.gaussians, gi);
        state.adam[gi].m[i * w..(i + 1) * w].fill(0.0);
        state.adam[gi].v[i * w..(i + 1) * w].fill(0.0);
    }
}

/// Moves the dead Gaussians onto alive ones; returns how many moved.
pub fn relocate_dead(state: &mut TrainState, cfg: &McmcConfig, seed: u64, step: u64) -> usize {
    let g = &state.gaussians;
    let floor = cfg.min_opacity as f32;
    let (dead, alive): (Vec<usize>, Vec<usize>) =
        (0..g.len()).partition(|&i| sigmoid(g.opacity_logits[i]) <= floor);
    if dead.is_empty() || alive.is_empty() {
        return 0;
    }
    let sources = draw_by_opacity(g, &alive, dead.len(), seed, step, KEY_RELOCATE);
    if sources.is_empty() {
        return 0;
    }
    share_sources(&mut state.gaussians, &sources, cfg.min_opacity);
    for (&d, &j) in dead.iter().zip(&sources) {
        copy_params(&mut state.gaussians, j, d);
    }
    for &j in &sources {
        zero_moments(state, j);
    }
    dead.len()
}

/// The count a refine step grows `n` Gaussians to: `min(cap, floor((1 + growth) n))`.
pub fn grown_count(cfg: &McmcConfig, n: usize) -> usize {
    cfg.cap_max.min(((1.0 + cfg.growth) * n as f64) as usize)
}

/// Appends copies of Gaussians drawn by opacity until there are [`grown_count`] of them; returns how
/// many were added.
pub fn add_new(state: &mut TrainState, cfg: &McmcConfig, seed: u64, step: u64) -> usize {
    let n = state.len();
    let target = grown_count(cfg, n);
    let count = target.saturating_sub(n);
    if count == 0 {
        return 0;
    }
    let all: Vec<usize> = (0..n).collect();
    let sources = draw_by_opacity(&state.gaussians, &all, count, seed, step, KEY_ADD);
    if sources.is_empty() {
        return 0;
    }
    share_sources(&mut state.gaussians, &sources, cfg.min_opacity);
    let g = &mut state.gaussians;
    let w = g.sh_rest_len();
    for &j in &sources {
        g.means.push(g.means[j]);
        g.log_scales.push(g.log_scales[j]);
        g.rotations.push(g.rotations[j]);
        g.opacity_logits.push(g.opacity_logits[j]);
        g.sh_dc.push(g.sh_dc[j]);
        g.sh_rest.extend_from_within(j * w..(j + 1) * w);
    }
    let total = g.len();
    for gi in 0..GROUPS.len() {
        let w = group_width(&state.gaussians, gi);
        state.adam[gi].m.resize(total * w, 0.0);
        state.adam[gi].v.resize(total * w, 0.0);
    }
    sources.len()
}

/// A refine step: relocation, then growth; the densification statistics are resized and zeroed.
pub fn refine(state: &mut TrainState, cfg: &McmcConfig, seed: u64, step: u64) -> RefineReport {
    let relocated = relocate_dead(state, cfg, seed, step);
    let added = add_new(state, cfg, seed, step);
    crate::densify::reset_stats(state, state.len());
    RefineReport { relocated, added }
}

/// The noise gate `sigmoid(-k (o - t))` of opacity `o`.
fn noise_gate(cfg: &McmcConfig, opacity: f32) -> f32 {
    let x = -(cfg.noise_gate_sharpness * (opacity as f64 - cfg.noise_gate_opacity));
    (1.0 / (1.0 + (-x).exp())) as f32
}

/// `mu += Sigma (eps gate(o)) position_lr noise_lr` for every Gaussian, `eps` drawn from the step.
pub fn inject_noise(
    g: &mut Gaussians<f32>,
    cfg: &McmcConfig,
    position_lr: f64,
    seed: u64,
    step: u64,
) {
    let scaler = (position_lr * cfg.noise_lr) as f32;
    for i in 0..g.len() {
        let gate = noise_gate(cfg, sigmoid(g.opacity_logits[i]));
        if gate == 0.0 {
            continue;
        }
        let q = g.rotations[i];
        let norm = q.iter().map(|v| v * v).sum::<f32>().sqrt();
        if !(norm > 0.0) {
            continue;
        }
        let r = quat_to_mat(q.map(|v| v / norm));
        let s2 = g.log_scales[i].map(|s| (2.0 * s).exp());
        let eps: [f32; 3] = std::array::from_fn(|k| {
            crate::random::normal(seed, step as u32, i as u32, KEY_NOISE + k as u32) * gate * scaler
        });
        // Sigma eps = R diag(s^2) R^T eps.
        let local: [f32; 3] = std::array::from_fn(|k| {
            s2[k] * (r[0][k] * eps[0] + r[1][k] * eps[1] + r[2][k] * eps[2])
        });
        for (a, m) in g.means[i].iter_mut().enumerate() {
            *m += r[a][0] * local[0] + r[a][1] * local[1] + r[a][2] * local[2];
        }
    }
}

/// The regularizer `opacity_reg mean(sigmoid(l)) + scale_reg mean(exp(s))`; its gradient is added to
/// `grads` (opacity logits and log-scales) times `weight` (the number of views the step's gradients
/// sum). Returns the value (once, unweighted).
pub fn add_regularizer<F: Real>(
    g: &Gaussians<F>,
    opacity_reg: f64,
    scale_reg: f64,
    weight: f64,
    grads: &mut Gaussians<F>,
) -> f64 {
    let n = g.len();
    if n == 0 {
        return 0.0;
    }
    let wo = F::c(opacity_reg / n as f64);
    let ws = F::c(scale_reg / (3 * n) as f64);
    let weight = F::c(weight);
    let (mut sum_o, mut sum_s) = (0.0f64, 0.0f64);
    for i in 0..n {
        let o = sigmoid(g.opacity_logits[i]);
        sum_o += o.as_f64();
        grads.opacity_logits[i] += weight * wo * o * (F::one() - o);
        for k in 0..3 {
            let s = g.log_scales[i][k].exp();
            sum_s += s.as_f64();
            grads.log_scales[i][k] += weight * ws * s;
        }
    }
    opacity_reg * sum_o / n as f64 + scale_reg * sum_s / (3 * n) as f64
}

/// At most `cap` of the initial points: a uniform random subset (in their original order, the same for
/// the same seed) when there are more, so that `--cap-max` bounds the count from the first step (gsplat
/// keeps every initial point and only stops growing; a random initialization of 100,000 points would
/// then run a cap below that at 100,000). `None` when all fit.
pub fn subsample_to_cap(points: &Points, cap: usize, seed: u64) -> Option<Points> {
    let n = points.positions.len();
    if n <= cap {
        return None;
    }
    // Partial Fisher-Yates over the indices: the first `cap` are a uniform subset.
    let mut order: Vec<u32> = (0..n as u32).collect();
    for i in 0..cap {
        let r = crate::random::hash(seed, i as u32, 0, KEY_INIT) as u64;
        let j = i + ((r * (n - i) as u64) >> 32) as usize;
        order.swap(i, j);
    }
    let mut keep = order[..cap].to_vec();
    keep.sort_unstable();
    let positions = keep.iter().map(|&i| points.positions[i as usize]).collect();
    let colors = keep.iter().map(|&i| points.colors[i as usize]).collect();
    Some(Points { positions, colors })
}

/// The MCMC starting point from the original's initial Gaussians: opacity `init_opacity`, scales
/// times `init_scale`.
pub fn initialize(g: &mut Gaussians<f32>, cfg: &McmcConfig) {
    let l = logit(cfg.init_opacity as f32);
    g.opacity_logits.fill(l);
    let ln = (cfg.init_scale as f32).ln();
    for s in g.log_scales.as_flattened_mut() {
        *s += ln;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adam::AdamState;

    fn scene(n: usize, seed: u64) -> Gaussians<f32> {
        let mut g = Gaussians::new(1);
        let rest = vec![0.25f32; g.sh_rest_len()];
        for i in 0..n {
            let u = |k: u32| crate::random::unit(crate::random::hash(seed, i as u32, k, 7));
            g.push(
                [u(0) * 2.0 - 1.0, u(1) * 2.0 - 1.0, u(2) * 2.0 - 1.0],
                [u(3) - 3.0, u(4) - 3.0, u(5) - 2.5],
                [1.0, u(6) - 0.5, u(7) - 0.5, u(8) - 0.5],
                6.0 * u(9) - 4.0,
                [u(10), u(11), u(12)],
                &rest,
            );
        }
        g
    }

    fn state(n: usize) -> TrainState {
        let mut s = TrainState::new(scene(n, 3));
        for (gi, a) in s.adam.iter_mut().enumerate() {
            *a = AdamState {
                m: (0..a.m.len()).map(|k| (k + gi) as f32 + 1.0).collect(),
                v: (0..a.v.len()).map(|k| (k * gi) as f32 + 2.0).collect(),
                step: 7,
            };
        }
        s
    }

    #[test]
    fn one_share_keeps_the_gaussian_and_two_match_the_closed_form() {
        let b = binomials();
        assert_eq!(b[50][25], 126_410_606_437_752.0);
        for o in [0.01, 0.3, 0.9] {
            let (o1, f1) = shared_opacity_and_scale(o, 1, &b);
            assert!((o1 - o).abs() < 1e-15 && (f1 - 1.0).abs() < 1e-12);
            // N = 2: o' = 1 - sqrt(1 - o), D = o' + (o' - o'^2 / sqrt 2).
            let (o2, f2) = shared_opacity_and_scale(o, 2, &b);
            let p = 1.0 - (1.0 - o).sqrt();
            assert!((o2 - p).abs() < 1e-15);
            assert!((f2 - o / (2.0 * p - p * p / 2f64.sqrt())).abs() < 1e-12);
            // Stacked at one point, the N copies are as opaque as the source was.
            for n in [3, 10, 51] {
                let (on, fn_) = shared_opacity_and_scale(o, n, &b);
                assert!((1.0 - (1.0 - on).powi(n as i32) - o).abs() < 1e-12);
                assert!(fn_.is_finite() && fn_ > 0.0, "{o} {n}: {fn_}");
            }
        }
    }

    #[test]
    fn relocation_moves_every_dead_gaussian_onto_an_alive_one() {
        let mut s = state(400);
        let cfg = McmcConfig::default();
        for i in (0..400).step_by(5) {
            s.gaussians.opacity_logits[i] = -9.0; // dead: sigmoid(-9) = 1.2e-4
        }
        let before = s.clone();
        let moved = relocate_dead(&mut s, &cfg, 1, 600);
        assert_eq!(moved, 80);
        assert_eq!(s.len(), 400);
        let g = &s.gaussians;
        for i in 0..400 {
            let o = sigmoid(g.opacity_logits[i]);
            assert!(o >= cfg.min_opacity as f32, "{i} still dead: {o}");
        }
        // A dead slot holds a copy of a source whose position it took; the source's moments are zero
        // and its opacity and scales changed; untouched ones keep everything.
        let mut sources = 0;
        for i in 0..400 {
            let was_dead = i % 5 == 0;
            let moved_here = g.means[i] != before.gaussians.means[i];
            assert_eq!(was_dead, moved_here, "{i}");
            if was_dead {
                let j = (0..400)
                    .find(|&j| j % 5 != 0 && g.means[j] == g.means[i])
                    .expect("a source");
                assert_eq!(g.log_scales[i], g.log_scales[j]);
                assert_eq!(g.opacity_logits[i], g.opacity_logits[j]);
                assert_eq!(g.sh_rest_of(i), g.sh_rest_of(j));
                assert_eq!(s.adam[0].m[3 * j], 0.0);
                assert!(g.opacity_logits[j] < before.gaussians.opacity_logits[j]);
                sources += 1;
            }
        }
        assert_eq!(sources, 80);
        let untouched = (0..400)
            .filter(|&j| j % 5 != 0 && s.adam[4].v[3 * j] != 0.0)
            .inspect(|&j| assert_eq!(g.log_scales[j], before.gaussians.log_scales[j]))
            .count();
        assert!(untouched > 200, "{untouched}");
        // The same draw again gives the same bits; another seed does not.
        let mut again = before.clone();
        relocate_dead(&mut again, &cfg, 1, 600);
        assert_eq!(again.gaussians.means, g.means);
        let mut other = before.clone();
        relocate_dead(&mut other, &cfg, 2, 600);
        assert_ne!(other.gaussians.means, g.means);
    }

    #[test]
    fn growth_is_five_percent_with_fresh_moments_up_to_the_cap() {
        let mut s = state(300);
        let cfg = McmcConfig {
            cap_max: 330,
            ..McmcConfig::default()
        };
        assert_eq!(add_new(&mut s, &cfg, 0, 700), 15);
        assert_eq!(s.len(), 315);
        for (gi, a) in s.adam.iter().enumerate() {
            let w = group_width(&s.gaussians, gi);
            assert_eq!(a.m.len(), 315 * w);
            assert!(a.m[300 * w..]
                .iter()
                .chain(&a.v[300 * w..])
                .all(|&v| v == 0.0));
            assert!(
                a.m[..300 * w].iter().all(|&v| v != 0.0),
                "sources keep moments"
            );
        }
        for i in 300..315 {
            let j = (0..300).find(|&j| s.gaussians.means[j] == s.gaussians.means[i]);
            let j = j.expect("a copy of an old one");
            assert_eq!(s.gaussians.opacity_logits[i], s.gaussians.opacity_logits[j]);
        }
        assert_eq!(add_new(&mut s, &cfg, 0, 800), 15);
        assert_eq!(add_new(&mut s, &cfg, 0, 900), 0);
        assert_eq!(s.len(), 330);
        let r = refine(&mut s, &cfg, 0, 1000);
        assert_eq!((r.added, s.grad_accum.len()), (0, 330));
    }

    #[test]
    fn noise_follows_the_covariance_and_spares_opaque_gaussians() {
        let n = 40_000;
        let mut g = Gaussians::<f32>::new(0);
        let q = [0.8f32, 0.2, -0.5, 0.3];
        let log_s = [-1.0f32, -1.5, -0.7];
        for i in 0..n {
            let opaque = i % 2 == 1;
            g.push(
                [0.0; 3],
                log_s,
                q,
                if opaque { 3.0 } else { -8.0 },
                [0.0; 3],
                &[],
            );
        }
        let cfg = McmcConfig::default();
        let (lr, seed) = (1e-6, 9);
        inject_noise(&mut g, &cfg, lr, seed, 42);
        let scaler = lr * cfg.noise_lr;
        // Displacements of the transparent half have covariance Sigma^2 scaler^2 gate^2.
        let gate = 1.0 / (1.0 + (100.0 * (sigmoid(-8.0f64) - 0.005)).exp());
        let norm = q.iter().map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
        let r = quat_to_mat(q.map(|v| (v as f64 / norm) as f32));
        let sigma = |a: usize, b: usize| -> f64 {
            (0..3)
                .map(|k| r[a][k] as f64 * r[b][k] as f64 * (2.0 * log_s[k] as f64).exp())
                .sum()
        };
        let mut cov = [[0.0f64; 3]; 3];
        for i in (0..n).step_by(2) {
            let d = g.means[i].map(|v| v as f64 / (scaler * gate));
            for a in 0..3 {
                for b in 0..3 {
                    cov[a][b] += d[a] * d[b] / (n / 2) as f64;
                }
            }
        }
        for a in 0..3 {
            for b in 0..3 {
                let want: f64 = (0..3).map(|k| sigma(a, k) * sigma(k, b)).sum();
                let tol = 0.03 * (sigma(a, a) * sigma(b, b)).abs().sqrt() * 1.5;
                assert!(
                    (cov[a][b] - want).abs() < tol,
                    "{a}{b}: {} vs {want}",
                    cov[a][b]
                );
            }
        }
        // sigmoid(3) = 0.95: the gate is e^-94.5, nothing moves measurably.
        let moved = (1..n)
            .step_by(2)
            .map(|i| g.means[i].iter().fold(0.0f32, |a, v| a.max(v.abs())))
            .fold(0.0f32, f32::max);
        assert!(moved < 1e-30, "{moved}");
    }

    fn zeros_like(g: &Gaussians<f64>) -> Gaussians<f64> {
        let mut z = g.clone();
        z.opacity_logits.fill(0.0);
        z.log_scales.fill([0.0; 3]);
        z
    }

    #[test]
    fn regularizer_gradient_matches_finite_differences() {
        let g32 = scene(25, 5);
        let g: Gaussians<f64> = g32.cast();
        let (ro, rs, weight) = (0.01, 0.02, 3.0);
        let mut grads = zeros_like(&g);
        let value = add_regularizer(&g, ro, rs, weight, &mut grads);
        let f = |g: &Gaussians<f64>| add_regularizer(g, ro, rs, 1.0, &mut zeros_like(g));
        assert!((value - f(&g)).abs() < 1e-15);
        let h = 1e-6;
        for i in 0..g.len() {
            let mut p = g.clone();
            p.opacity_logits[i] += h;
            let mut m = g.clone();
            m.opacity_logits[i] -= h;
            let fd = weight * (f(&p) - f(&m)) / (2.0 * h);
            assert!(
                (fd - grads.opacity_logits[i]).abs() < 1e-9 * (1.0 + fd.abs()),
                "o{i}"
            );
            for k in 0..3 {
                let mut p = g.clone();
                p.log_scales[i][k] += h;
                let mut m = g.clone();
                m.log_scales[i][k] -= h;
                let fd = weight * (f(&p) - f(&m)) / (2.0 * h);
                let an = grads.log_scales[i][k];
                assert!(
                    (fd - an).abs() < 1e-9 * (1.0 + fd.abs()),
                    "s{i}.{k}: {fd} vs {an}"
                );
            }
        }
    }

    #[test]
    fn initial_points_above_the_cap_are_a_seeded_uniform_subset() {
        let n = 1000;
        let points = Points {
            positions: (0..n).map(|i| [i as f64, 0.0, 0.0]).collect(),
            colors: (0..n).map(|i| [(i % 256) as u8, 0, 0]).collect(),
        };
        assert!(subsample_to_cap(&points, n, 3).is_none());
        assert!(subsample_to_cap(&points, n + 1, 3).is_none());
        let a = subsample_to_cap(&points, 300, 3).unwrap();
        assert_eq!(a.positions.len(), 300);
        assert_eq!(a.colors.len(), 300);
        // Distinct, in the original order, colours kept with their positions.
        let idx: Vec<usize> = a.positions.iter().map(|p| p[0] as usize).collect();
        assert!(idx.windows(2).all(|w| w[0] < w[1]));
        for (p, c) in a.positions.iter().zip(&a.colors) {
            assert_eq!(c[0], (p[0] as usize % 256) as u8);
        }
        // Spread over the whole range (a prefix would fail), the same for the same seed only.
        let in_last_half = idx.iter().filter(|&&i| i >= n / 2).count();
        assert!((110..=190).contains(&in_last_half), "{in_last_half}");
        assert_eq!(
            subsample_to_cap(&points, 300, 3).unwrap().positions,
            a.positions
        );
        assert_ne!(
            subsample_to_cap(&points, 300, 4).unwrap().positions,
            a.positions
        );
    }
}
