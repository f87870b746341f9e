//! `metrics.json`: what a finished run measured. Written by [`crate::run`], shown by [`crate::report`].

use serde::{Deserialize, Serialize};

use crate::eval::ViewMetrics;

/// The evaluation of a finished run and how it ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Means over the evaluated views.
    pub psnr: f64,
    pub ssim: f64,
    /// Mean colour-corrected PSNR ([`crate::eval`]); absent in files written before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc_psnr: Option<f64>,
    pub num_gaussians: usize,
    pub iterations: u64,
    pub train_seconds: f64,
    pub its_per_second: f64,
    /// `test` (held-out views) or `train` (no test split: metrics on the training views).
    pub split: String,
    pub backend: String,
    /// Steps skipped because the loss or a gradient was not finite (this process).
    pub skipped_steps: u64,
    pub views: Vec<ViewMetrics>,
    /// Test quality at fixed fractions of the run (runs with a test split; the last point is the
    /// final evaluation). Absent in files written before it was measured.
    #[serde(default)]
    pub psnr_over_time: Vec<CurvePoint>,
    /// The plan of a `--time-budget` run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_budget: Option<TimeBudget>,
    /// The test views scored again from poses refined with the scene frozen (`--test-pose-steps`),
    /// reported beside the metrics at the given poses above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_time_poses: Option<TestTimePoses>,
}

/// Metrics of the test views at test-time refined poses ([`crate::eval_pose`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestTimePoses {
    pub steps: u64,
    pub psnr: f64,
    pub ssim: f64,
    pub cc_psnr: Option<f64>,
    /// Each view's pose change: the angle (degrees) and the centre's move (world units).
    pub rotation_deg: Vec<f64>,
    pub position: Vec<f64>,
}

/// How a `--time-budget` run was planned ([`crate::budget`]); the steps it ran are
/// [`Metrics::iterations`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimeBudget {
    /// The budget for training (loading and the final evaluation not counted).
    pub seconds: f64,
    /// The calibration's part of it.
    pub calibration_seconds: f64,
    /// The steps planned, and their predicted training seconds.
    pub planned_steps: u64,
    pub predicted_seconds: f64,
}

/// One point of a run's quality-against-time curve: the test views' mean PSNR and SSIM after `step`
/// steps, `seconds` of training into the run (the evaluations themselves not counted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub seconds: f64,
    pub step: u64,
    pub psnr: f64,
    pub ssim: f64,
    pub gaussians: usize,
}
