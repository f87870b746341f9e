//! What a training run will hold in memory, estimated before it starts, and what the machine has.
//!
//! Per Gaussian (SH degree d, K = (d + 1)^2 coefficients, P = 11 + 3K parameters, 59 at degree 3):
//! the parameters and two Adam moments (3P floats), the gradients of the 11 geometry and opacity
//! parameters (one-view steps leave the 3K SH gradients to Adam, which forms them from the colour
//! gradients), the densification statistics (3 floats), the projected values, their gradients and
//! the rasterizer's cull records (~150 bytes) and ~2 tile intersections of 40 bytes: 994 bytes at
//! degree 3 (1,018 measured at 1 M Gaussians, BENCHMARKS.md). Batched or multi-rank steps hold full
//! gradients (and their sum), which this estimate leaves out.
//! Transiently, a checkpoint holds a copy of the parameters and moments plus their serialized bytes
//! (6P floats more), and densification builds the edited set beside the old one; the peak counts
//! the larger of the two. Per pixel of the largest view: the rendered image, target, image gradient,
//! the SSIM maps and the rasterizer's per-pixel state (~25 floats).

use splat_core::gaussians::sh_coeffs_for_degree;

/// Bytes the projected values, their gradients, the cull records and the tile intersections (the
/// backward's 36-byte gradient record and the 4-byte id, ~2 per Gaussian) take per Gaussian.
const PROJECTED_BYTES: u64 = 150 + 2 * 40;
/// Floats per pixel held by the step.
const FLOATS_PER_PIXEL: u64 = 25;

pub fn params_per_gaussian(sh_degree: usize) -> u64 {
    11 + 3 * sh_coeffs_for_degree(sh_degree) as u64
}

/// Bytes per Gaussian in the steady state of a step.
pub fn steady_bytes_per_gaussian(sh_degree: usize) -> u64 {
    (3 * params_per_gaussian(sh_degree) + 11) * 4 + 3 * 4 + PROJECTED_BYTES
}

/// Bytes per Gaussian at the peak (a checkpoint or a densification in flight).
pub fn peak_bytes_per_gaussian(sh_degree: usize) -> u64 {
    steady_bytes_per_gaussian(sh_degree) + 6 * params_per_gaussian(sh_degree) * 4
}

/// The Gaussian count assumed when `--max-gaussians` is not given: a real scene after 30k steps of
/// the original schedule has 1 to 6 million (the paper's Mip-NeRF 360 average is about 3 M).
pub const DEFAULT_GAUSSIAN_BUDGET: usize = 3_000_000;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemoryEstimate {
    pub image_bytes: u64,
    pub gaussian_budget: usize,
    pub gaussian_bytes: u64,
    pub pixel_bytes: u64,
}

impl MemoryEstimate {
    pub fn new(
        image_bytes: u64,
        gaussian_budget: usize,
        sh_degree: usize,
        max_pixels: u64,
    ) -> Self {
        MemoryEstimate {
            image_bytes,
            gaussian_budget,
            gaussian_bytes: gaussian_budget as u64 * peak_bytes_per_gaussian(sh_degree),
            pixel_bytes: max_pixels * FLOATS_PER_PIXEL * 4,
        }
    }

    pub fn total(&self) -> u64 {
        self.image_bytes + self.gaussian_bytes + self.pixel_bytes
    }
}

/// Memory this process may still use: `SPLAT_MEMORY_LIMIT` (bytes) when set, else `MemAvailable`, or
/// the cgroup's limit minus its usage when that is smaller. `None` where none can be read.
pub fn available_memory() -> Option<u64> {
    if let Some(limit) = std::env::var("SPLAT_MEMORY_LIMIT")
        .ok()
        .and_then(|v| v.trim().parse().ok())
    {
        return Some(limit);
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let avail = meminfo.as_deref().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    });
    let read = |p: &str| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let cgroup = match (
        read("/sys/fs/cgroup/memory.max"),
        read("/sys/fs/cgroup/memory.current"),
    ) {
        (Some(max), Some(cur)) => Some(max.saturating_sub(cur)),
        _ => None,
    };
    match (avail, cgroup) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_gaussian_bytes() {
        assert_eq!(params_per_gaussian(3), 59);
        assert_eq!(params_per_gaussian(0), 14);
        assert_eq!(steady_bytes_per_gaussian(3), 59 * 12 + 44 + 12 + 230);
        let e = MemoryEstimate::new(1000, 10, 3, 100);
        assert_eq!(
            e.total(),
            1000 + 10 * peak_bytes_per_gaussian(3) + 100 * 100
        );
    }

    #[test]
    fn available_memory_is_plausible_here() {
        if let Some(a) = available_memory() {
            assert!(a > 1 << 20, "{a}");
        }
    }
}
