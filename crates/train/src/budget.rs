//! `--time-budget`: the number of steps whose predicted training time fits a budget on this machine.
//!
//! The prediction comes from a calibration: a throwaway trainer on the run's own views and initial
//! points times [`CALIBRATION_STEPS`] steps at each resolution the schedule uses (after
//! [`CALIBRATION_WARMUP`] untimed ones; on a GPU, one resident block of them after one untimed block,
//! as the run will train), at the highest SH degree. A step's cost then grows with the
//! Gaussian count as `(n / n0)^COUNT_EXPONENT`: the step costs its Gaussian-pixel pairs, and as the
//! count grows each Gaussian covers fewer pixels (BENCHMARKS.md, issue 22: cup's MCMC runs at 3.7x and
//! 11x the initial count took 2.5x and 5.4x the initial step time, exponents 0.70 and 0.70). The count
//! of each step follows MCMC's schedule exactly ([`grown_count`] at each refine step of the plan);
//! for the default strategy, whose count depends on the gradients, it is taken to grow linearly to
//! [`DEFAULT_GROWTH`] times the start by the end of densification (fern's 7,000-step run: 10 k to 330 k).
//!
//! The plan is the largest step count within the preset's whose prediction fits [`PLAN_FRACTION`] of
//! what is left of the budget after the calibration; the run also stops at the budget whatever the
//! prediction said ([`crate::run::TrainRun::deadline`]), and reports how much of the plan it ran.

use std::time::Instant;

use splat_io::dataset::Points;
use splat_render::Backend;

use crate::config::{ResolutionLevel, Strategy, TrainConfig};
use crate::mcmc::grown_count;
use crate::resident::ResidentEngine;
use crate::trainer::{StepPlan, TrainData, Trainer};

/// Untimed steps before each level's timing.
pub const CALIBRATION_WARMUP: u64 = 3;
/// Timed steps per level.
pub const CALIBRATION_STEPS: u64 = 8;
/// Exponent of the Gaussian count in a step's cost.
pub const COUNT_EXPONENT: f64 = 0.7;
/// The default strategy's count at the end of densification, as a multiple of the start.
pub const DEFAULT_GROWTH: f64 = 30.0;
/// The plan fills this fraction of the budget (the prediction's margin).
pub const PLAN_FRACTION: f64 = 0.9;
/// Fewer steps than this make no useful splat (fern's `fast` curve is at 22 dB by step 500).
pub const MIN_STEPS: u64 = 500;

/// Seconds per step at each training downscale factor, measured with `initial` Gaussians.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    pub seconds_per_step: Vec<(u32, f64)>,
    pub initial: usize,
    /// What the calibration took.
    pub seconds: f64,
    /// Timed in resident blocks (the GPU's), as the run trains.
    pub resident: bool,
}

impl Calibration {
    fn step_seconds(&self, factor: u32) -> f64 {
        (self.seconds_per_step.iter())
            .find(|(f, _)| *f == factor)
            .or(self.seconds_per_step.last())
            .map_or(0.0, |(_, s)| *s)
    }
}

/// Times steps of `cfg` at each of its resolutions on a throwaway trainer, in resident blocks on
/// `resident` when the run will use one (a block of [`CALIBRATION_STEPS`] steps per level, after one of
/// warm-up), else step by step on `backend`.
pub fn calibrate<'a>(
    cfg: &TrainConfig,
    data: TrainData<'a>,
    points: &Points,
    backend: Box<dyn Backend + Send + 'a>,
    resident: Option<Box<dyn ResidentEngine + 'a>>,
) -> Calibration {
    let start = Instant::now();
    let mut factors: Vec<u32> = cfg
        .resolution_schedule
        .iter()
        .map(|l| l.downscale)
        .collect();
    factors.push(1);
    factors.sort_unstable();
    factors.dedup();
    let probe = TrainConfig {
        iterations: u64::MAX,
        densify_from: u64::MAX,
        densify_until: 0,
        batch: 1,
        ..cfg.clone()
    };
    let mut trainer = Trainer::new(probe, data, points, backend);
    trainer.state.active_sh_degree = cfg.sh_degree;
    let blocks = resident.is_some_and(|engine| trainer.with_resident(engine).is_ok());
    // Blocks end at multiples of the timed steps, so a level's timing is whole blocks.
    trainer.set_sync_every(CALIBRATION_STEPS);
    let warmup = if blocks {
        CALIBRATION_STEPS
    } else {
        CALIBRATION_WARMUP
    };
    let initial = trainer.state.len();
    let mut seconds_per_step = Vec::new();
    for &f in &factors {
        trainer.cfg.resolution_schedule = vec![ResolutionLevel {
            from: 0,
            downscale: f,
        }];
        for _ in 0..warmup {
            let _ = trainer.step();
        }
        while !trainer.block_done() {
            let _ = trainer.step();
        }
        let t = Instant::now();
        for _ in 0..CALIBRATION_STEPS {
            let _ = trainer.step();
        }
        let s = t.elapsed().as_secs_f64() / CALIBRATION_STEPS as f64;
        seconds_per_step.push((f, s));
    }
    Calibration {
        seconds_per_step,
        initial,
        seconds: start.elapsed().as_secs_f64(),
        resident: blocks,
    }
}

/// The predicted training seconds of `cfg` (with `cfg.batch` views a step).
pub fn predicted_seconds(cfg: &TrainConfig, cal: &Calibration) -> f64 {
    let cfg = cfg.per_step();
    let n0 = cal.initial.max(1);
    let cap = cfg.gaussian_cap().unwrap_or(usize::MAX);
    let mut n = n0.min(cap);
    let mut total = 0.0;
    for it in 1..=cfg.iterations {
        n = match cfg.strategy {
            Strategy::Mcmc if StepPlan::new(&cfg, it, false).refine => grown_count(&cfg.mcmc, n),
            Strategy::Mcmc => n,
            Strategy::Default => {
                let t = (it.min(cfg.densify_until) as f64) / cfg.densify_until.max(1) as f64;
                ((n0 as f64 * (1.0 + (DEFAULT_GROWTH - 1.0) * t)) as usize).min(cap)
            }
        };
        let views = cfg.batch.max(1) as f64;
        let step = cal.step_seconds(cfg.downscale_at(it)) * views;
        total += step * (n as f64 / n0 as f64).powf(COUNT_EXPONENT);
    }
    total
}

/// The most steps, up to `max_steps`, whose configuration (`config_for(steps)`) is predicted to fit
/// `seconds`; with its prediction. Searched over 1% steps of `max_steps`, then refined.
pub fn plan_steps(
    max_steps: u64,
    seconds: f64,
    cal: &Calibration,
    config_for: &dyn Fn(u64) -> TrainConfig,
) -> (u64, f64) {
    let fits = |n: u64| {
        let p = predicted_seconds(&config_for(n), cal);
        (p <= seconds, p)
    };
    if let (true, p) = fits(max_steps) {
        return (max_steps, p);
    }
    // The prediction grows with the steps: bisect for the last that fits.
    let (mut lo, mut hi) = (0u64, max_steps);
    while hi - lo > 1.max(max_steps / 200) {
        let mid = lo + (hi - lo) / 2;
        if fits(mid.max(1)).0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let n = lo.max(1);
    (n, fits(n).1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preset::Preset;

    fn cal() -> Calibration {
        Calibration {
            seconds_per_step: vec![(1, 0.02), (2, 0.006), (4, 0.002)],
            initial: 10_000,
            seconds: 0.5,
            resident: false,
        }
    }

    #[test]
    fn mcmc_prediction_follows_its_count() {
        let mut cfg = Preset::Balanced.config(Some(1_000));
        cfg.resolution_schedule.clear();
        cfg.mcmc.cap_max = 10_000;
        // No growth past the start: every step costs the calibrated full-size step.
        let flat = predicted_seconds(&cfg, &cal());
        assert!((flat - 1_000.0 * 0.02).abs() < 1e-9, "{flat}");
        cfg.mcmc.cap_max = 40_000;
        let grown = predicted_seconds(&cfg, &cal());
        assert!(
            grown > flat && grown < flat * 40f64.powf(COUNT_EXPONENT),
            "{grown}"
        );
    }

    #[test]
    fn coarse_levels_are_cheaper() {
        let mut cfg = Preset::Fast.config(Some(1_000));
        cfg.mcmc.cap_max = 10_000;
        let p = predicted_seconds(&cfg, &cal());
        // 200 steps at 1/4, 200 at 1/2, 600 at full size.
        let want = 199.0 * 0.002 + 200.0 * 0.006 + 601.0 * 0.02;
        assert!((p - want).abs() < 1e-9, "{p} {want}");
    }

    #[test]
    fn plan_is_the_most_steps_that_fit() {
        let config_for = |n| {
            let mut c = Preset::Balanced.config(Some(n));
            c.mcmc.cap_max = 30_000;
            c.mcmc.growth = 0.1;
            c
        };
        let (n, p) = plan_steps(5_000, 20.0, &cal(), &config_for);
        assert!(p <= 20.0 && n < 5_000 && n > 100, "{n} {p}");
        assert!(predicted_seconds(&config_for(n + 50), &cal()) > 20.0);
        assert_eq!(plan_steps(5_000, 1e9, &cal(), &config_for).0, 5_000);
    }
}
