//! The wgpu backend: one WGSL compute shader per pipeline stage, run on any GPU wgpu reaches (Vulkan,
//! Metal, DX12) and, for tests, on Mesa's software Vulkan device (lavapipe).
//!
//! Two ways to train: [`GpuBackend`] runs each stage of the stage interface on the GPU (uploads and
//! read-backs per call; the host runs the loss, Adam and densification), and [`GpuResident`] keeps the
//! whole training state, the images and the cameras on the device and runs blocks of steps per submission
//! (loss, Adam, densification edits there too). Every kernel has a parity test against the CPU. See
//! NOTES.md.

pub mod adam;
pub mod backend;
pub mod bin;
pub mod context;
pub mod densify;
pub mod kernel;
pub mod loss;
pub mod peak;
pub mod project;
pub mod project_bwd;
pub mod project_bwd_adam;
pub mod rasterize;
pub mod resident;
pub mod scan;
pub mod shaders;
pub mod sort;
pub mod timing;

pub use adam::GpuAdam;
pub use backend::GpuBackend;
pub use bin::{BinInputs, GpuBin};
pub use context::{AdapterChoice, GpuContext, GpuError};
pub use densify::GpuDensifyStats;
pub use loss::GpuLoss;
pub use project::GpuProject;
pub use project_bwd::GpuProjectBackward;
pub use project_bwd_adam::{AdamStep, GpuProjectBackwardAdam};
pub use rasterize::{BackwardSums, GpuRasterize, WaveShape};
pub use resident::GpuResident;
pub use sort::GpuSort;
