//! The schedule of one iteration: what iteration `it` does, decided before it runs from the
//! configuration alone. The host step ([`super::step`]) and the resident blocks ([`super::blocks`])
//! both follow it, so the two paths cannot disagree on when to densify, reset or update.

use crate::config::{Strategy, TrainConfig};

/// What iteration `it` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StepPlan {
    /// The iteration (1-based, as the original).
    pub it: u64,
    /// The last iteration. The original saves its output at iteration N before that iteration's
    /// densification, so the last iteration neither densifies, resets opacities nor updates (a reset
    /// there would leave every Gaussian at 1% opacity in the result).
    pub last: bool,
    /// Densification statistics are gathered (the default strategy, before `densify_until`).
    pub stats: bool,
    /// Clone, split and prune after the statistics.
    pub densify: bool,
    /// Opacities are reset (every `opacity_reset_interval`, and at `densify_from` on white
    /// backgrounds).
    pub reset_opacity: bool,
    /// MCMC: the regularizers and the position noise (every iteration but the last).
    pub mcmc: bool,
    /// MCMC: relocation and growth.
    pub refine: bool,
}

impl StepPlan {
    pub fn new(cfg: &TrainConfig, it: u64, white_background: bool) -> Self {
        let last = it >= cfg.iterations;
        let mcmc = cfg.strategy == Strategy::Mcmc && !last;
        let on_interval = it > cfg.densify_from
            && cfg.densify_interval > 0
            && it.is_multiple_of(cfg.densify_interval);
        let stats = cfg.strategy == Strategy::Default && it < cfg.densify_until && !last;
        let reset_due = (cfg.opacity_reset_interval > 0
            && it.is_multiple_of(cfg.opacity_reset_interval))
            || (white_background && it == cfg.densify_from);
        StepPlan {
            it,
            last,
            stats,
            densify: stats && on_interval,
            reset_opacity: stats && reset_due,
            mcmc,
            refine: mcmc && on_interval && it < cfg.densify_until,
        }
    }

    /// Adam runs: neither the last iteration nor a densifying one (the original's densification
    /// replaces the parameter tensors, which then have no gradient).
    pub fn updates(&self) -> bool {
        !self.last && !self.densify
    }
}

/// The SH degree iteration `it` renders with, given the degree before it.
pub(crate) fn degree_at(cfg: &TrainConfig, it: u64, before: usize) -> usize {
    if cfg.sh_degree_interval > 0
        && it.is_multiple_of(cfg.sh_degree_interval)
        && before < cfg.sh_degree
    {
        before + 1
    } else {
        before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_original_schedule() {
        let cfg = TrainConfig {
            iterations: 30_000,
            ..TrainConfig::default()
        };
        let at = |it| StepPlan::new(&cfg, it, false);
        assert!(at(100).stats && !at(100).densify && at(100).updates());
        assert!(at(600).densify && !at(600).updates());
        assert!(!at(500).densify, "densification starts after densify_from");
        assert!(at(3000).reset_opacity && at(3000).densify);
        assert!(!at(15_000).stats && !at(15_000).densify);
        assert!(at(30_000).last && !at(30_000).updates() && !at(30_000).stats);
        assert!(
            StepPlan::new(&cfg, 500, true).reset_opacity,
            "white backgrounds reset at densify_from"
        );
        assert_eq!(degree_at(&cfg, 1000, 0), 1);
        assert_eq!(degree_at(&cfg, 999, 0), 0);
        assert_eq!(degree_at(&cfg, 4000, 3), 3);
    }

    #[test]
    fn mcmc_refines_and_gathers_no_statistics() {
        let cfg = TrainConfig {
            iterations: 30_000,
            strategy: Strategy::Mcmc,
            ..TrainConfig::default()
        };
        let p = StepPlan::new(&cfg, 600, false);
        assert!(p.mcmc && p.refine && !p.stats && !p.densify && p.updates());
        let last = StepPlan::new(&cfg, 30_000, false);
        assert!(!last.mcmc && !last.refine);
    }
}
