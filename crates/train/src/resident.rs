//! Training steps run where the state lives: a [`ResidentEngine`] keeps the parameters, Adam moments,
//! densification statistics, training images and cameras on its device and runs a *block* of steps per
//! call, drawing each step's view itself ([`crate::views`]). The [`crate::Trainer`] plans the blocks:
//! every step between host events (densification, opacity resets, checkpoints) is resident; an event step
//! runs on the host after [`ResidentEngine::store`] and the state goes back with [`ResidentEngine::load`].
//!
//! A block applies exactly the host trainer's arithmetic, so a resident run and a host run with the same
//! seed see the same views and differ only by the devices' rounding.

use crate::state::TrainState;

/// One step of a block, as the host planned it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlannedStep {
    /// The iteration (1-based).
    pub step: u64,
    /// Index of this step's view among all views drawn by the run ([`crate::views::view_for_draw`]).
    pub draw: u64,
    /// SH degree used by this step's render.
    pub sh_degree: usize,
    /// Add this step's densification statistics.
    pub stats: bool,
    /// Apply Adam (every group) with this position learning rate; `None`: no update (the last iteration).
    pub position_lr: Option<f64>,
}

/// The constants of a block's steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockConstants {
    pub seed: u64,
    pub lambda_dssim: f64,
    /// Learning rates of the groups after `means`, in [`crate::state::GROUPS`] order (index 0 unused).
    pub lrs: [f64; 6],
    pub betas: (f64, f64),
    pub background: [f32; 3],
}

/// What one resident step did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepOutcome {
    pub step: u64,
    pub loss: f64,
    pub l1: f64,
    pub ssim: f64,
    pub psnr: f64,
    /// A loss or gradient was not finite: nothing was applied.
    pub skipped: bool,
}

/// A device that runs blocks of training steps on a state it holds.
pub trait ResidentEngine: Send {
    fn name(&self) -> &str;
    /// Whether blocks can run for this configuration (e.g. every training view the same size); when not,
    /// the reason, and the trainer runs every step on the host.
    fn unsupported(&self) -> Option<String>;
    /// Makes the device's state `state` (parameters, moments with their step counts, statistics).
    fn load(&mut self, state: &TrainState) -> Result<(), String>;
    /// Runs `steps` in order and appends one outcome per step. A step with a non-finite loss or gradient
    /// changes nothing and is reported skipped; the block goes on after it.
    fn run_block(
        &mut self,
        constants: &BlockConstants,
        steps: &[PlannedStep],
        out: &mut Vec<StepOutcome>,
    ) -> Result<(), String>;
    /// Copies the device's state into `state` (its Gaussian count may differ from the last load's only
    /// through this engine's own work, which is none: blocks do not densify).
    fn store(&mut self, state: &mut TrainState) -> Result<(), String>;
}
