//! The scalar type of the reference pipeline.
//!
//! Every reference stage is generic over [`Real`] so that the same code renders in `f32` (what users run)
//! and in `f64` (what the finite-difference gradient tests run). Fast paths are written for `f32` only.

use std::fmt::Debug;
use std::ops::{AddAssign, DivAssign, MulAssign, SubAssign};

/// A floating-point scalar: `f32` or `f64`.
pub trait Real:
    num_traits::Float
    + Default
    + Debug
    + Send
    + Sync
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
    + 'static
{
    /// Converts an `f64` constant (rounding to nearest for `f32`).
    fn c(x: f64) -> Self;
    /// Widens to `f64`.
    fn as_f64(self) -> f64;
    /// Narrows to `f32` (for sort keys and output).
    fn as_f32(self) -> f32;
}

impl Real for f32 {
    #[inline(always)]
    fn c(x: f64) -> Self {
        x as f32
    }
    #[inline(always)]
    fn as_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn as_f32(self) -> f32 {
        self
    }
}

impl Real for f64 {
    #[inline(always)]
    fn c(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn as_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn as_f32(self) -> f32 {
        self as f32
    }
}
