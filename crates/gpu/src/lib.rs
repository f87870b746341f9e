//! The wgpu backend: one WGSL compute shader per pipeline stage, run on any GPU wgpu reaches (Vulkan,
//! Metal, DX12) and, for tests, on Mesa's software Vulkan device (lavapipe).
//!
//! State of this crate (issue 7 is in progress): the device context with adapter selection and limits,
//! the project + SH stage, the bin stage (count, prefix sum, radix sort, ranges) and the rasterize
//! forward, with parity tests against the CPU reference. The
//! backward stages, the loss, Adam and densification follow; until they exist the backend is not offered
//! on the command line. See NOTES.md.

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
pub mod scan;

pub use adam::GpuAdam;
pub use backend::GpuBackend;
pub use bin::GpuBin;
pub use context::{AdapterChoice, GpuContext, GpuError};
pub use densify::GpuDensifyStats;
pub use loss::GpuLoss;
pub use project::GpuProject;
pub use project_bwd::GpuProjectBackward;
pub use rasterize::GpuRasterize;
