//! Training of 3D Gaussian splats with the original 3DGS algorithm and defaults, or 3DGS-MCMC.
//!
//! [`loss`] (L1 + D-SSIM with analytic backward), [`adam`] (per-group Adam, eps 1e-15), [`schedule`]
//! (position learning-rate decay), [`init`] (Gaussians from points), [`densify`] (adaptive density
//! control editing parameters and optimizer moments together), [`mcmc`] (relocation, growth to a cap,
//! position noise, regularizers), [`trainer`] (the loop, one view per step),
//! [`checkpoint`] (exact resume), [`eval`] (PSNR / SSIM on held-out views).

pub mod adam;
pub mod appearance;
pub mod bench;
pub mod budget;
pub mod config;
pub mod densify;
pub mod init;
pub mod loss;
pub mod mcmc;
pub mod memory;
pub mod metrics;
pub mod mip;
pub mod parallel;
pub mod pose;
pub mod preset;
pub mod random;
pub mod report;
pub mod resident;
pub mod resolution;
pub mod schedule;
pub mod state;
pub mod testhook;
pub mod trainer;
pub mod views;

pub use config::TrainConfig;
pub use state::TrainState;
pub use trainer::{Diverged, StageTimes, StepStats, TrainData, Trainer};
pub mod checkpoint;
pub mod eval;
pub mod eval_pose;
pub mod fidelity;
pub mod run;
