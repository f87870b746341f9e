//! Densification edits: clones copy, splits replace the parent by two shrunken children sampled from it,
//! pruning removes transparent and huge Gaussians, new entries have zero Adam moments, the cap holds.

use splat_core::{logit, Gaussians};
use splat_train::densify::{densify_and_prune, reset_opacity};
use splat_train::state::TrainState;
use splat_train::TrainConfig;

fn state() -> TrainState {
    let mut g = Gaussians::<f32>::new(1);
    let rest = [0.1f32; 9];
    // 0: small, high gradient -> clone. 1: large, high gradient -> split. 2: low gradient -> kept.
    // 3: transparent -> pruned. 4: never seen -> kept.
    g.push(
        [0.0, 0.0, 0.0],
        [0.001f32.ln(); 3],
        [1.0, 0.0, 0.0, 0.0],
        logit(0.5),
        [0.1, 0.2, 0.3],
        &rest,
    );
    g.push(
        [1.0, 0.0, 0.0],
        [0.5f32.ln(), 0.05f32.ln(), 0.05f32.ln()],
        [0.9, 0.1, 0.0, 0.0],
        logit(0.6),
        [0.4, 0.5, 0.6],
        &rest,
    );
    g.push(
        [2.0, 0.0, 0.0],
        [0.01f32.ln(); 3],
        [1.0, 0.0, 0.0, 0.0],
        logit(0.7),
        [0.0; 3],
        &rest,
    );
    g.push(
        [3.0, 0.0, 0.0],
        [0.01f32.ln(); 3],
        [1.0, 0.0, 0.0, 0.0],
        logit(0.001),
        [0.0; 3],
        &rest,
    );
    g.push(
        [4.0, 0.0, 0.0],
        [0.01f32.ln(); 3],
        [1.0, 0.0, 0.0, 0.0],
        logit(0.5),
        [0.0; 3],
        &rest,
    );
    let mut s = TrainState::new(g);
    s.grad_accum = vec![0.003, 0.004, 0.0001, 0.0, 0.0];
    s.grad_count = vec![10.0, 10.0, 10.0, 0.0, 0.0];
    for a in &mut s.adam {
        a.m.fill(1.0);
        a.v.fill(2.0);
        a.step = 7;
    }
    s
}

#[test]
fn clone_split_prune_and_moments() {
    let mut s = state();
    let cfg = TrainConfig::default();
    let extent = 5.0; // percent_dense * extent = 0.05: Gaussian 1 (max scale 0.5) splits, 0 clones
    let report = densify_and_prune(&mut s, &cfg, extent, 1000);
    assert_eq!((report.cloned, report.split, report.pruned), (1, 1, 1));
    let g = &s.gaussians;
    // Survivors 0, 2, 4, then the clone of 0, then the two children of 1.
    assert_eq!(g.len(), 6);
    assert_eq!(g.means[0], [0.0; 3]);
    assert_eq!(g.means[1], [2.0, 0.0, 0.0]);
    assert_eq!(g.means[2], [4.0, 0.0, 0.0]);
    assert_eq!(g.means[3], [0.0; 3]);
    for child in 4..6 {
        assert_eq!(g.log_scales[child][0], 0.5f32.ln() - 1.6f32.ln());
        assert_eq!(g.sh_dc[child], [0.4, 0.5, 0.6]);
        assert_eq!(g.opacity_logits[child], logit(0.6));
        // Sampled from the parent: within a few sigma along its long axis, close on the short ones.
        assert!((g.means[child][0] - 1.0).abs() < 2.5 && g.means[child][2].abs() < 0.25);
    }
    assert_ne!(g.means[4], g.means[5]);
    // Moments: kept for survivors, zero for the clone and the children; step counts unchanged.
    for a in &s.adam {
        let w = a.m.len() / 6;
        assert!(a.m[..3 * w].iter().all(|&v| v == 1.0));
        assert!(a.m[3 * w..].iter().all(|&v| v == 0.0) && a.v[3 * w..].iter().all(|&v| v == 0.0));
        assert_eq!(a.step, 7);
    }
    assert!(s.grad_accum.iter().all(|&v| v == 0.0) && s.grad_accum.len() == 6);
}

#[test]
fn world_size_pruning_after_the_first_reset_and_the_cap() {
    let cfg = TrainConfig::default();
    // With a small extent Gaussian 1 (0.5) exceeds 0.1 x extent: pruned only late, after splitting.
    let mut early = state();
    densify_and_prune(&mut early, &cfg, 2.0, 1000);
    let mut late = state();
    densify_and_prune(&mut late, &cfg, 2.0, 4000);
    assert!(late.gaussians.len() < early.gaussians.len());
    // Cap at 6: only one of the two candidates (the larger gradient, Gaussian 1) is densified.
    let mut capped = state();
    let cfg = TrainConfig {
        max_gaussians: Some(6),
        ..TrainConfig::default()
    };
    let r = densify_and_prune(&mut capped, &cfg, 5.0, 1000);
    assert_eq!((r.cloned, r.split), (0, 1));
}

#[test]
fn opacity_reset_caps_at_one_percent_and_zeroes_moments() {
    let mut s = state();
    reset_opacity(&mut s);
    for &l in &s.gaussians.opacity_logits {
        assert!(splat_core::sigmoid(l) <= 0.01 + 1e-7);
    }
    assert_eq!(s.gaussians.opacity_logits[3], logit(0.001));
    assert!(s.adam[3].m.iter().all(|&v| v == 0.0) && s.adam[3].v.iter().all(|&v| v == 0.0));
    assert!(s.adam[0].m.iter().all(|&v| v == 1.0));
}
