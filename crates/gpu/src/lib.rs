//! The wgpu backend: one WGSL compute shader per pipeline stage, run on any GPU wgpu reaches (Vulkan,
//! Metal, DX12) and, for tests, on Mesa's software Vulkan device (lavapipe).
//!
//! State (issue 7 is in progress): the device context with adapter selection and limits; every render
//! stage forward and backward (project + SH, bin: count, prefix sum, radix sort, ranges; rasterize) behind
//! the stage interface as [`GpuBackend`], which `--backend gpu|auto` uses; kernels for the loss, Adam and
//! the densification statistics. Each has a parity test against the CPU. Not yet: densification edits
//! on the device and the resident trainer (blocks of steps per submission). See NOTES.md.

pub mod adam;
pub mod backend;
pub mod bin;
pub mod context;
pub mod densify;
pub mod kernel;
pub mod loss;
pub mod project;
pub mod project_bwd;
pub mod rasterize;
pub mod resident;
pub mod scan;
pub mod shaders;

pub use adam::GpuAdam;
pub use backend::GpuBackend;
pub use bin::GpuBin;
pub use context::{AdapterChoice, GpuContext, GpuError};
pub use densify::GpuDensifyStats;
pub use loss::GpuLoss;
pub use project::GpuProject;
pub use project_bwd::GpuProjectBackward;
pub use rasterize::{BackwardSums, GpuRasterize};
pub use resident::GpuResident;
