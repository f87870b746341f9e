//! A stable LSD radix sort on the GPU (`shaders/radix_sort.wgsl`): 64-bit keys as two u32 planes (high,
//! low) with a u32 payload, 8 bits a pass over only the key bits asked for. Each pass is a block
//! histogram, a prefix sum of the histograms (digit-major, [`GpuScan`]) and a stable scatter, so a sort
//! of `bits` key bits takes `ceil(bits / 8)` passes of three to five dispatches where the one-bit sort it
//! replaced took `bits` passes of six or seven (and read the whole list three times a pass).
//!
//! The order is the reference's exactly: ascending key, ties in input order (every count is an integer
//! sum, so no device or workgroup size changes it). The plain twin is a stable sort on the host
//! (`tests/sort_parity.rs`).

use crate::context::GpuContext;
use crate::kernel::{Kernel, Recorder};
use crate::scan::{GpuScan, ScanPlan};

/// Key bits per pass (a digit of 256 values).
pub const RADIX_BITS: u32 = 8;
/// Entries per workgroup (4 rounds of 256).
pub const BLOCK: u32 = 1024;
const RADIX: u32 = 1 << RADIX_BITS;

pub struct GpuSort {
    histogram: Kernel,
    scatter: Kernel,
    scan: GpuScan,
}

/// The buffers of sorts of up to `capacity` entries, made once and reused.
pub struct SortPlan {
    capacity: u32,
    offsets: wgpu::Buffer,
    scan: ScanPlan,
}

impl SortPlan {
    /// Device bytes of the plan's buffers.
    pub fn bytes(&self) -> u64 {
        self.offsets.size() + self.scan.bytes()
    }

    pub fn new(ctx: &GpuContext, capacity: u32) -> Self {
        let entries = digit_entries(capacity);
        SortPlan {
            capacity,
            offsets: ctx.storage("radix offsets", entries as u64 * 4),
            scan: ScanPlan::new(ctx, entries),
        }
    }
}

/// Blocks of a sort of `n` entries.
fn blocks(n: u32) -> u32 {
    n.div_ceil(BLOCK).max(1)
}

/// Entries of the digit histograms of a sort of `n` (one per digit and block).
fn digit_entries(n: u32) -> u32 {
    RADIX * blocks(n)
}

/// Passes of a sort of `key_bits` bits.
pub fn passes(key_bits: u32) -> u32 {
    key_bits.div_ceil(RADIX_BITS)
}

/// The global-memory bytes a sort of `n` entries and `key_bits` bits reads and writes: per pass the
/// histogram reads one key word per entry and writes its digit counts; the scan reads and writes the
/// counts (about twice, with its upper levels); the scatter reads the offsets, one key word for the digit
/// and the three words it moves, and writes those three.
pub fn bytes(n: u32, key_bits: u32) -> u64 {
    let (n, e) = (n as u64, digit_entries(n) as u64);
    let per_pass = 4 * n + 4 * e + 2 * 8 * e + 4 * e + 4 * n + 12 * n + 12 * n;
    passes(key_bits) as u64 * per_pass
}

impl GpuSort {
    pub fn new(ctx: &GpuContext) -> Self {
        let m = crate::kernel::module(ctx, "radix_sort.wgsl", crate::shaders::RADIX_SORT);
        GpuSort {
            histogram: Kernel::new(ctx, &m, "radix histogram", "histogram"),
            scatter: Kernel::new(ctx, &m, "radix scatter", "scatter"),
            scan: GpuScan::new(ctx),
        }
    }

    /// Records the stable sort of the first `n` entries of `a` (key high, key low, payload) by their
    /// lowest `key_bits` bits (1 to 64; bits 32 and up are the high word's), ping-ponging with `b`.
    /// Returns true when the sorted entries end in `b` (an odd number of passes), false for `a`.
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &self,
        ctx: &GpuContext,
        enc: &mut dyn Recorder,
        plan: &SortPlan,
        n: u32,
        key_bits: u32,
        a: &[wgpu::Buffer; 3],
        b: &[wgpu::Buffer; 3],
    ) -> bool {
        assert!(
            n <= plan.capacity,
            "a sort of {n} with a plan for {}",
            plan.capacity
        );
        assert!((1..=64).contains(&key_bits), "{key_bits} key bits");
        let (mut src, mut dst) = (a, b);
        let blocks = blocks(n);
        for pass in 0..passes(key_bits) {
            let shift = pass * RADIX_BITS;
            let bits = RADIX_BITS.min(key_bits - shift);
            let params = [n, shift, bits, blocks];
            self.histogram.dispatch(
                ctx,
                enc,
                params,
                &[(1, &src[0]), (2, &src[1]), (4, &plan.offsets)],
                blocks,
            );
            self.scan
                .record_planned(ctx, enc, &plan.offsets, &plan.scan, RADIX * blocks);
            self.scatter.dispatch(
                ctx,
                enc,
                params,
                &[
                    (1, &src[0]),
                    (2, &src[1]),
                    (3, &src[2]),
                    (4, &plan.offsets),
                    (5, &dst[0]),
                    (6, &dst[1]),
                    (7, &dst[2]),
                ],
                blocks,
            );
            std::mem::swap(&mut src, &mut dst);
        }
        passes(key_bits) % 2 == 1
    }

    /// Sorts `(hi, lo, payload)` entries on the device and reads them back (for tests and the per-stage
    /// interface's callers).
    pub fn sort(
        &self,
        ctx: &GpuContext,
        hi: &[u32],
        lo: &[u32],
        payload: &[u32],
        key_bits: u32,
    ) -> Result<[Vec<u32>; 3], crate::GpuError> {
        let n = payload.len();
        assert!(hi.len() == n && lo.len() == n, "planes of one length");
        let a = [
            ctx.storage_from("key hi", hi),
            ctx.storage_from("key lo", lo),
            ctx.storage_from("payload", payload),
        ];
        let b = [0, 1, 2].map(|_| ctx.storage("sorted", n as u64 * 4));
        let plan = SortPlan::new(ctx, n as u32);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("sort"),
            });
        let in_b = self.record(ctx, &mut enc, &plan, n as u32, key_bits, &a, &b);
        ctx.submit(enc);
        let out = if in_b { &b } else { &a };
        Ok([
            ctx.read(&out[0], n)?,
            ctx.read(&out[1], n)?,
            ctx.read(&out[2], n)?,
        ])
    }
}
