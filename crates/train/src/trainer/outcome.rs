//! What a training step returns: its losses, what it changed, the wall time of each stage; and the
//! error that ends a run whose steps keep failing.

use std::time::Duration;

use crate::densify::DensifyReport;
use crate::mcmc::RefineReport;

/// What one step did.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepStats {
    pub step: u64,
    pub loss: f64,
    pub l1: f64,
    pub ssim: f64,
    /// Of the training view just rendered.
    pub psnr: f64,
    pub num_gaussians: usize,
    pub densified: Option<DensifyReport>,
    /// What an MCMC refine step did.
    pub refined: Option<RefineReport>,
    pub opacity_reset: bool,
    /// The loss or a gradient was not finite: nothing was applied.
    pub skipped: bool,
    /// Wall time of each stage of this step.
    pub times: StageTimes,
}

/// Wall time per stage of one training step, in the order they run.
#[derive(Clone, Copy, Debug, Default)]
pub struct StageTimes {
    pub project: Duration,
    pub bin: Duration,
    pub rasterize_forward: Duration,
    pub loss: Duration,
    pub rasterize_backward: Duration,
    pub project_backward: Duration,
    pub densify: Duration,
    pub adam: Duration,
}

impl StageTimes {
    pub const NAMES: [&'static str; 8] = [
        "project",
        "bin",
        "rasterize_forward",
        "loss",
        "rasterize_backward",
        "project_backward",
        "densify",
        "adam",
    ];

    pub fn as_array(&self) -> [Duration; 8] {
        [
            self.project,
            self.bin,
            self.rasterize_forward,
            self.loss,
            self.rasterize_backward,
            self.project_backward,
            self.densify,
            self.adam,
        ]
    }

    pub(super) fn add_render(&mut self, timings: &[(&'static str, Duration)]) {
        for &(name, d) in timings {
            match name {
                "project" => self.project += d,
                "bin" => self.bin += d,
                "rasterize_forward" => self.rasterize_forward += d,
                "rasterize_backward" => self.rasterize_backward += d,
                "project_backward" => self.project_backward += d,
                _ => {}
            }
        }
    }
}

/// Consecutive non-finite steps after which training stops.
pub const MAX_CONSECUTIVE_SKIPS: u32 = 20;

/// Training cannot go on.
#[derive(Debug, thiserror::Error)]
#[error("training diverged: {consecutive} consecutive steps up to step {step} had a non-finite loss or gradient ({total} skipped in all)")]
pub struct Diverged {
    pub step: u64,
    pub consecutive: u32,
    pub total: u64,
}
