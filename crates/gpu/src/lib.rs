//! The wgpu backend: one WGSL compute shader per pipeline stage, run on any GPU wgpu reaches (Vulkan,
//! Metal, DX12) and, for tests, on Mesa's software Vulkan device (lavapipe).
//!
//! State of this crate (issue 7 is in progress): the device context with adapter selection and limits,
//! and the project + SH stage with parity tests against the CPU reference. Binning, rasterization, the
//! backward stages, the loss, Adam and densification follow; until they exist the backend is not offered
//! on the command line. See NOTES.md.

pub mod context;
pub mod project;

pub use context::{AdapterChoice, GpuContext, GpuError};
pub use project::GpuProject;
