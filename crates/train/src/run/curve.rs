//! A run's quality against time (`metrics.json`'s `psnr_over_time`, the report's plot): with a test
//! split, rank 0 evaluates the test views at [`CURVE_POINTS`] evenly spaced steps of the run (the last
//! point is the final evaluation). The evaluations are kept out of the training clock: the run subtracts
//! their time ([`super::Running`]), so a curve's seconds are the seconds a run without it would have
//! taken to reach each step. Points of earlier sessions of a resumed run are kept beside the checkpoint
//! ([`CURVE_FILE`]).

use std::path::{Path, PathBuf};

use splat_io::dataset::View;
use splat_render::Backend;

use super::files::{read_json, IoWorker};
use crate::eval::{evaluate, means};
use crate::metrics::CurvePoint;
use crate::state::TrainState;

/// Points of the curve, the final evaluation included.
pub const CURVE_POINTS: u64 = 20;

/// The curve up to the latest checkpoint, for a resumed run.
pub const CURVE_FILE: &str = "checkpoints/psnr_over_time.json";

/// The steps before the last at which a run of `total` steps evaluates: `round(total k / CURVE_POINTS)`
/// for `k = 1 .. CURVE_POINTS - 1`, without repeats or zero.
pub fn curve_steps(total: u64) -> Vec<u64> {
    let mut steps: Vec<u64> = (1..CURVE_POINTS)
        .map(|k| (total * k + CURVE_POINTS / 2) / CURVE_POINTS)
        .filter(|&s| s > 0 && s < total)
        .collect();
    steps.dedup();
    steps
}

/// The curve of a run under way.
pub(super) struct QualityCurve {
    dir: PathBuf,
    due: Vec<u64>,
    pub points: Vec<CurvePoint>,
    backend: Box<dyn Backend + Send>,
}

impl QualityCurve {
    /// The curve of a run of `total` steps in `dir` that starts after `first_step`.
    /// `backend` renders the evaluations.
    pub fn new(dir: &Path, total: u64, first_step: u64, backend: Box<dyn Backend + Send>) -> Self {
        let earlier: Vec<CurvePoint> = read_json(&dir.join(CURVE_FILE)).unwrap_or_default();
        QualityCurve {
            dir: dir.to_path_buf(),
            due: curve_steps(total),
            points: earlier
                .into_iter()
                .filter(|p| p.step <= first_step)
                .collect(),
            backend,
        }
    }

    /// The steps at which [`QualityCurve::measure`] wants the state.
    pub fn steps(&self) -> &[u64] {
        &self.due
    }

    pub fn due(&self, step: u64) -> bool {
        self.due.binary_search(&step).is_ok()
    }

    /// Evaluates `state` (current) on `views` and adds the point; the curve so far is written beside
    /// the checkpoints in the background.
    pub fn measure(&mut self, state: &TrainState, eval: EvalInput<'_>, seconds: f64) {
        let gaussians = state.export_gaussians();
        let degree = state.active_sh_degree;
        let metrics = evaluate(
            self.backend.as_mut(),
            &gaussians,
            eval.views,
            None,
            eval.background,
            degree,
            |_, _| {},
        );
        let (psnr, ssim) = means(&metrics);
        self.add(CurvePoint {
            seconds,
            step: state.step,
            psnr,
            ssim,
            gaussians: gaussians.len(),
        });
        let (path, points) = (self.dir.join(CURVE_FILE), self.points.clone());
        eval.writer
            .submit(move || super::files::write_json(&path, &points).map_err(|e| e.to_string()));
    }

    /// Adds a point (the final evaluation's, or one just measured).
    pub fn add(&mut self, point: CurvePoint) {
        self.points.retain(|p| p.step < point.step);
        self.points.push(point);
    }
}

/// What an evaluation of the curve needs from the run.
pub(super) struct EvalInput<'e> {
    pub views: &'e [View],
    pub background: [f32; 3],
    pub writer: &'e IoWorker,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_even_fractions_before_the_end() {
        assert_eq!(curve_steps(7000).len(), 19);
        assert_eq!(curve_steps(7000)[0], 350);
        assert_eq!(*curve_steps(7000).last().unwrap(), 6650);
        assert_eq!(curve_steps(10), (1..10).collect::<Vec<_>>());
        assert_eq!(curve_steps(1), Vec::<u64>::new());
        let short = curve_steps(5);
        assert!(short.windows(2).all(|w| w[0] < w[1]) && short.iter().all(|&s| s < 5));
    }
}
