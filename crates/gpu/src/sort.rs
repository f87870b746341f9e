//! A stable LSD radix sort on the GPU (`shaders/radix_sort.wgsl`): 64-bit keys as two u32 planes (high,
//! low) with a u32 payload, 8 bits a pass over only the key bits asked for. Each pass is a block
//! histogram, a prefix sum of the histograms (digit-major, [`GpuScan`]) and a stable scatter, so a sort
//! of `bits` key bits takes `ceil(bits / 8)` passes of three to five dispatches where the one-bit sort it
//! replaced took `bits` passes of six or seven (and read the whole list three times a pass).
//!
//! The order is the reference's exactly: ascending key, ties in input order (every count is an integer
//! sum, so no device or workgroup size changes it). The plain twin is a stable sort on the host
//! (`tests/sort_parity.rs`). A sort *with an inverse* ([`Inverse`]) also writes where each input entry
//! went, in its last pass: the resident rasterize backward finds a Gaussian's entries through it. A sort
//! with a *live count* ([`LiveCount`]) sorts only as many entries as a device buffer says (the resident
//! step's intersections, in a list sized by capacity), with no padding to sort and no read-back: its
//! first dispatch turns the count into indirect dispatch arguments (`shaders/dispatch_args.wgsl`), so
//! the histograms and scatters launch only the blocks that hold entries, and the plan keeps a second
//! triple (workgroups of 256 over the live entries) for the caller's passes over the sorted list.

use crate::context::GpuContext;
use crate::kernel::{Kernel, Recorder, WORKGROUP};
use crate::scan::{GpuScan, ScanPlan};

/// Key bits per pass (a digit of 256 values).
pub const RADIX_BITS: u32 = 8;
/// Entries per workgroup (4 rounds of 256).
pub const BLOCK: u32 = 1024;
const RADIX: u32 = 1 << RADIX_BITS;

pub struct GpuSort {
    histogram: Kernel,
    scatter: Kernel,
    dispatch_args: Kernel,
    scan: GpuScan,
    /// Bound at `emitted`, `inverse` and `live` by a sort without them (one written, two read).
    placeholders: [wgpu::Buffer; 3],
}

/// Where a sort with an inverse reads the emitted payloads and writes each input's sorted position.
pub struct Inverse<'a> {
    /// The payload of each input entry (read in the last pass; the payload plane of `a` is not read).
    pub emitted: &'a wgpu::Buffer,
    /// Written: `inverse[input index] = sorted position`.
    pub inverse: &'a wgpu::Buffer,
}

/// Where a sort reads how many of its entries to sort: `buffer[index]` (at most the `n` recorded).
#[derive(Clone, Copy)]
pub struct LiveCount<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub index: u32,
}

/// What a sort takes besides its entries.
#[derive(Default)]
pub struct SortWith<'a> {
    /// Write where each input went (see [`Inverse`]).
    pub inverse: Option<Inverse<'a>>,
    /// Sort only the first `min(live, n)` entries; those past them are neither read nor written.
    pub live: Option<LiveCount<'a>>,
}

/// The buffers of sorts of up to `capacity` entries, made once and reused.
pub struct SortPlan {
    capacity: u32,
    offsets: wgpu::Buffer,
    scan: ScanPlan,
    /// A live sort's indirect arguments: its blocks (byte 0) and workgroups of 256 entries (byte 16).
    args: wgpu::Buffer,
}

impl SortPlan {
    /// Device bytes of the plan's buffers.
    pub fn bytes(&self) -> u64 {
        self.offsets.size() + self.scan.bytes() + self.args.size()
    }

    /// After a sort with a live count is recorded: the indirect arguments of one invocation per live
    /// entry in workgroups of 256 (for passes over the sorted entries, such as the tile ranges).
    pub fn live_entry_groups(&self) -> (&wgpu::Buffer, u64) {
        (&self.args, 16)
    }

    pub fn new(ctx: &GpuContext, capacity: u32) -> Self {
        let entries = digit_entries(capacity);
        SortPlan {
            capacity,
            offsets: ctx.storage("radix offsets", entries as u64 * 4),
            scan: ScanPlan::new(ctx, entries),
            args: ctx.indirect_args("sort dispatch args", 2),
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
/// and the three words it moves, and writes those three. With an inverse the last pass also reads the
/// emitted payload and writes the position (8 bytes an entry).
pub fn bytes(n: u32, key_bits: u32, inverse: bool) -> u64 {
    let (n, e) = (n as u64, digit_entries(n) as u64);
    let per_pass = 4 * n + 4 * e + 2 * 8 * e + 4 * e + 4 * n + 12 * n + 12 * n;
    passes(key_bits) as u64 * per_pass + if inverse { 8 * n } else { 0 }
}

impl GpuSort {
    pub fn new(ctx: &GpuContext) -> Self {
        let m = crate::kernel::module(ctx, "radix_sort.wgsl", crate::shaders::RADIX_SORT);
        GpuSort {
            histogram: Kernel::new(ctx, &m, "radix histogram", "histogram"),
            scatter: Kernel::new(ctx, &m, "radix scatter", "scatter"),
            dispatch_args: {
                let m =
                    crate::kernel::module(ctx, "dispatch_args.wgsl", crate::shaders::DISPATCH_ARGS);
                Kernel::new(ctx, &m, "dispatch args", "main")
            },
            scan: GpuScan::new(ctx),
            placeholders: [
                ctx.storage("no emitted", 16),
                ctx.storage("no inverse", 16),
                ctx.storage("no live count", 16),
            ],
        }
    }

    /// Records the stable sort of the first `n` entries of `a` (key high, key low, payload) by their
    /// lowest `key_bits` bits (1 to 64; bits 32 and up are the high word's), ping-ponging with `b`.
    /// Returns true when the sorted entries end in `b` (an odd number of passes), false for `a`. With
    /// `with.inverse`, the payloads come from `inverse.emitted` and each input's position is written
    /// (see [`Inverse`]); with `with.live`, only the first `min(live, n)` entries are sorted.
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
        with: &SortWith<'_>,
    ) -> bool {
        assert!(
            n <= plan.capacity,
            "a sort of {n} with a plan for {}",
            plan.capacity
        );
        assert!((1..=64).contains(&key_bits), "{key_bits} key bits");
        let (mut src, mut dst) = (a, b);
        let blocks = blocks(n);
        let [no_emitted, no_inverse, no_live] = &self.placeholders;
        let inverse = with.inverse.as_ref();
        let (emitted, written) =
            inverse.map_or((no_emitted, no_inverse), |i| (i.emitted, i.inverse));
        let (live, live_at) = with.live.map_or((no_live, 0), |l| (l.buffer, l.index + 1));
        let last = passes(key_bits) - 1;
        if with.live.is_some() {
            self.record_args(ctx, enc, plan, n, live, live_at);
        }
        // A live sort launches the blocks its count needs (the arguments just recorded), else all.
        let launch = |kernel: &Kernel, enc: &mut dyn Recorder, params: &[u8], buffers: &[_]| {
            if with.live.is_some() {
                kernel.dispatch_indirect(ctx, enc, params, buffers, (&plan.args, 0));
            } else {
                kernel.dispatch_bytes(ctx, enc, params, buffers, blocks);
            }
        };
        for pass in 0..=last {
            let shift = pass * RADIX_BITS;
            let bits = RADIX_BITS.min(key_bits - shift);
            let with_inverse = inverse.is_some() as u32;
            let params = [
                n,
                shift,
                bits,
                blocks,
                with_inverse * (pass == 0) as u32,
                with_inverse * (pass == last) as u32,
                live_at,
                0,
            ];
            let params: &[u8] = bytemuck::cast_slice(&params);
            if with.live.is_some() {
                // Blocks past the count are not launched: their digit counts must read zero.
                enc.clear(&plan.offsets);
            }
            let histogram = [(1, &src[0]), (2, &src[1]), (4, &plan.offsets), (10, live)];
            launch(&self.histogram, enc, params, &histogram);
            self.scan
                .record_planned(ctx, enc, &plan.offsets, &plan.scan, RADIX * blocks);
            let scatter = [
                (1, &src[0]),
                (2, &src[1]),
                (3, &src[2]),
                (4, &plan.offsets),
                (5, &dst[0]),
                (6, &dst[1]),
                (7, &dst[2]),
                (8, emitted),
                (9, written),
                (10, live),
            ];
            launch(&self.scatter, enc, params, &scatter);
            std::mem::swap(&mut src, &mut dst);
        }
        passes(key_bits) % 2 == 1
    }

    /// Records the indirect arguments of a sort of the first `min(live[live_at - 1], n)` entries.
    fn record_args(
        &self,
        ctx: &GpuContext,
        enc: &mut dyn Recorder,
        plan: &SortPlan,
        n: u32,
        live: &wgpu::Buffer,
        live_at: u32,
    ) {
        let max_dim = ctx.limits.max_compute_workgroups_per_dimension.max(1);
        let params = [n, live_at, BLOCK, WORKGROUP, max_dim, 0, 0, 0];
        self.dispatch_args.dispatch_bytes(
            ctx,
            enc,
            bytemuck::cast_slice(&params),
            &[(1, live), (2, &plan.args)],
            1,
        );
    }

    /// Sorts `(hi, lo, payload)` entries on the device and reads them back (for tests): the sorted
    /// planes, and with `inverse` (the payloads then taken from the emitted plane) each input's position.
    pub fn sort(
        &self,
        ctx: &GpuContext,
        hi: &[u32],
        lo: &[u32],
        payload: &[u32],
        key_bits: u32,
        inverse: bool,
    ) -> Result<[Vec<u32>; 4], crate::GpuError> {
        let n = payload.len();
        assert!(hi.len() == n && lo.len() == n, "planes of one length");
        let emitted = ctx.storage_from("emitted", payload);
        let a = [
            ctx.storage_from("key hi", hi),
            ctx.storage_from("key lo", lo),
            // With an inverse the payload plane must not be read: poison it.
            if inverse {
                ctx.storage_from("payload", &vec![u32::MAX; n])
            } else {
                ctx.storage_from("payload", payload)
            },
        ];
        let b = [0, 1, 2].map(|_| ctx.storage("sorted", n as u64 * 4));
        let positions = ctx.storage_from("inverse", &vec![u32::MAX; n]);
        let with = SortWith {
            inverse: inverse.then_some(Inverse {
                emitted: &emitted,
                inverse: &positions,
            }),
            live: None,
        };
        let [hi, lo, ids] = self.run(ctx, n, &a, &b, key_bits, &with)?;
        let positions = if inverse {
            ctx.read(&positions, n)?
        } else {
            Vec::new()
        };
        Ok([hi, lo, ids, positions])
    }

    /// Sorts the first `live` of the `(hi, lo, payload)` entries, with `live` read from a device buffer
    /// (a sort recorded for all of them), and reads back whole planes (for tests): the sorted entries,
    /// then whatever the output planes held past them (`u32::MAX` where the sort wrote nothing).
    pub fn sort_live(
        &self,
        ctx: &GpuContext,
        hi: &[u32],
        lo: &[u32],
        payload: &[u32],
        key_bits: u32,
        live: u32,
    ) -> Result<[Vec<u32>; 3], crate::GpuError> {
        let n = payload.len();
        assert!(hi.len() == n && lo.len() == n, "planes of one length");
        let poison = vec![u32::MAX; n];
        let a = [hi, lo, payload].map(|p| ctx.storage_from("entries", p));
        let b = [0, 1, 2].map(|_| ctx.storage_from("sorted", &poison));
        // The count sits past a word of something else, as the intersections do in a scan.
        let count = ctx.storage_from("live count", &[7, live]);
        let with = SortWith {
            inverse: None,
            live: Some(LiveCount {
                buffer: &count,
                index: 1,
            }),
        };
        self.run(ctx, n, &a, &b, key_bits, &with)
    }

    /// The indirect arguments a sort of `n` entries with `live` of them live launches with (for tests):
    /// its blocks' (x, y, z) and, four words on, those of one invocation per live entry.
    pub fn live_args(
        &self,
        ctx: &GpuContext,
        n: u32,
        live: u32,
    ) -> Result<[u32; 8], crate::GpuError> {
        let plan = SortPlan::new(ctx, n);
        let count = ctx.storage_from("live count", &[live]);
        let poison = ctx.storage_from("poison", &[u32::MAX; 8]);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("sort args"),
            });
        enc.copy_buffer_to_buffer(&poison, 0, &plan.args, 0, 32);
        self.record_args(ctx, &mut enc, &plan, n, &count, 1);
        ctx.submit(enc);
        let words = ctx.read(&plan.args, 8)?;
        Ok(std::array::from_fn(|k| words[k]))
    }

    /// Records, submits and reads back a sort of `n` entries (the tests' helpers; buffers of at least
    /// 16 bytes may hold fewer).
    fn run(
        &self,
        ctx: &GpuContext,
        n: usize,
        a: &[wgpu::Buffer; 3],
        b: &[wgpu::Buffer; 3],
        key_bits: u32,
        with: &SortWith<'_>,
    ) -> Result<[Vec<u32>; 3], crate::GpuError> {
        let plan = SortPlan::new(ctx, n as u32);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("sort"),
            });
        let in_b = self.record(ctx, &mut enc, &plan, n as u32, key_bits, a, b, with);
        ctx.submit(enc);
        let out = if in_b { b } else { a };
        Ok([
            ctx.read(&out[0], n)?,
            ctx.read(&out[1], n)?,
            ctx.read(&out[2], n)?,
        ])
    }
}
