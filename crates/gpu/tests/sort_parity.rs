//! The GPU radix sort against a stable sort on the host: random 64-bit keys with many ties, at sizes
//! around every block and scan-level boundary, key widths 1 to 64 (odd and even pass counts, digits
//! narrower than 8 bits), with the per-dimension workgroup limit lowered so histogram and scatter run as
//! 2D dispatches.

mod common;

use common::context;
use splat_gpu::sort::{bytes, passes, BLOCK};
use splat_gpu::{GpuContext, GpuSort};

/// xorshift64*: enough randomness for keys, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// `n` 64-bit keys drawn from a pool of `distinct` values (ties everywhere when small); a sort of fewer
/// bits must ignore the bits above them.
fn keys(seed: u64, n: usize, distinct: usize) -> (Vec<u32>, Vec<u32>) {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let pool: Vec<u64> = (0..distinct.max(1)).map(|_| rng.next()).collect();
    let (mut hi, mut lo) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let k = pool[(rng.next() % pool.len() as u64) as usize];
        hi.push((k >> 32) as u32);
        lo.push(k as u32);
    }
    (hi, lo)
}

fn masked(hi: u32, lo: u32, bits: u32) -> u64 {
    let k = (hi as u64) << 32 | lo as u64;
    if bits == 64 {
        k
    } else {
        k & ((1u64 << bits) - 1)
    }
}

fn check(ctx: &GpuContext, sort: &GpuSort, seed: u64, n: usize, bits: u32, distinct: usize) {
    let (hi, lo) = keys(seed, n, distinct);
    let payload: Vec<u32> = (0..n as u32).collect();
    let mut order = payload.clone();
    // The plain twin: a stable sort by the masked key (ties keep input order).
    order.sort_by_key(|&i| masked(hi[i as usize], lo[i as usize], bits));
    let [gh, gl, gp, _] = sort
        .sort(ctx, &hi, &lo, &payload, bits, false)
        .expect("GPU sort");
    let what = format!("n {n}, {bits} bits, {distinct} distinct keys");
    assert_eq!(gp, order, "payload order, {what}");
    let want_hi: Vec<u32> = order.iter().map(|&i| hi[i as usize]).collect();
    let want_lo: Vec<u32> = order.iter().map(|&i| lo[i as usize]).collect();
    assert_eq!(gh, want_hi, "high words move with their entries, {what}");
    assert_eq!(gl, want_lo, "low words move with their entries, {what}");
}

#[test]
fn sort_matches_a_stable_host_sort_at_every_width() {
    let Some(ctx) = context(|_| {}) else { return };
    let sort = GpuSort::new(&ctx);
    for bits in 1..=64 {
        // Few distinct keys (long runs of ties) and many.
        let distinct = if bits % 2 == 0 { 7 } else { 5000 };
        check(&ctx, &sort, bits as u64, 3000, bits, distinct);
    }
}

#[test]
fn sort_matches_at_block_and_scan_boundaries() {
    let Some(ctx) = context(|_| {}) else { return };
    let sort = GpuSort::new(&ctx);
    let b = BLOCK as usize;
    // Around one round (256), one block, and 256 blocks (the digit histograms of 65,536 entries need a
    // second scan level: 256 digits x blocks > 256 x 256).
    let sizes = [
        1,
        2,
        255,
        256,
        257,
        b - 1,
        b,
        b + 1,
        2 * b + 3,
        256 * b - 1,
        256 * b,
        256 * b + 1,
    ];
    for (k, &n) in sizes.iter().enumerate() {
        let bits = [42, 64, 9, 33][k % 4];
        check(&ctx, &sort, 100 + k as u64, n, bits, n / 3 + 1);
    }
}

#[test]
fn sort_with_lowered_dispatch_limit() {
    let Some(ctx) = context(|l| l.max_compute_workgroups_per_dimension = 16) else {
        return;
    };
    let sort = GpuSort::new(&ctx);
    // 40 blocks: a 16 x 3 grid of workgroups, 8 past the end.
    check(&ctx, &sort, 7, 40 * BLOCK as usize - 5, 42, 999);
    // A live count launches its own blocks only, wrapped the same way: 36 of 40 blocks hold entries.
    let n = 40 * BLOCK as usize;
    let live = 35 * BLOCK as usize + 3;
    let (hi, lo) = keys(5, n, 700);
    let payload: Vec<u32> = (0..n as u32).collect();
    let [gh, gl, gp] = sort
        .sort_live(&ctx, &hi, &lo, &payload, 24, live as u32)
        .expect("GPU sort");
    let mut order: Vec<usize> = (0..live).collect();
    order.sort_by_key(|&i| masked(hi[i], lo[i], 24));
    let head = |v: &[u32]| order.iter().map(|&i| v[i]).collect::<Vec<_>>();
    assert_eq!(gp[..live], head(&payload)[..], "payloads");
    assert_eq!((&gh[..live], &gl[..live]), (&head(&hi)[..], &head(&lo)[..]));
}

#[test]
fn a_live_sort_launches_only_the_blocks_that_hold_entries() {
    let Some(ctx) = context(|l| l.max_compute_workgroups_per_dimension = 16) else {
        return;
    };
    let sort = GpuSort::new(&ctx);
    let n = 40 * BLOCK;
    // (live, the blocks' x y z, the entry workgroups' x y z): at least one workgroup, counts past the
    // list's size clamped to it, more than 16 wrapped onto a second dimension.
    for (live, blocks, entries) in [
        (0, [1, 1, 1], [1, 1, 1]),
        (1, [1, 1, 1], [1, 1, 1]),
        (BLOCK, [1, 1, 1], [4, 1, 1]),
        (BLOCK + 1, [2, 1, 1], [5, 1, 1]),
        (16 * BLOCK, [16, 1, 1], [16, 4, 1]),
        (35 * BLOCK + 3, [16, 3, 1], [16, 9, 1]),
        (u32::MAX, [16, 3, 1], [16, 10, 1]),
    ] {
        let args = sort.live_args(&ctx, n, live).expect("dispatch args");
        assert_eq!(args[..3], blocks, "blocks of {live} live entries");
        assert_eq!(
            args[4..7],
            entries,
            "entry workgroups of {live} live entries"
        );
    }
}

#[test]
fn sort_cost_counts_eight_bit_passes() {
    assert_eq!(passes(1), 1);
    assert_eq!(passes(8), 1);
    assert_eq!(passes(9), 2);
    assert_eq!(passes(42), 6);
    assert_eq!(passes(64), 8);
    // Bytes grow with the entries and the passes.
    assert!(bytes(2048, 42, false) > bytes(1024, 42, false));
    assert_eq!(bytes(1024, 42, false), 6 * bytes(1024, 8, false));
    assert_eq!(bytes(1024, 42, true), bytes(1024, 42, false) + 8 * 1024);
}

#[test]
fn sort_counts_its_dispatches_submissions_and_readbacks() {
    let Some(ctx) = context(|_| {}) else { return };
    let sort = GpuSort::new(&ctx);
    let n = 3000;
    let (hi, lo) = keys(9, n, 50);
    let payload: Vec<u32> = (0..n as u32).collect();
    let before = ctx.counters.snapshot();
    sort.sort(&ctx, &hi, &lo, &payload, 42, false)
        .expect("GPU sort");
    let c = ctx.counters.snapshot().since(&before);
    // 3 blocks: 768 digit counts, scanned in 3 blocks of 256 and their one block of totals (two scan
    // dispatches and one to add the offsets); with the histogram and the scatter, 5 a pass, 6 passes.
    assert_eq!(c.dispatches, 6 * 5);
    // The sort's submission and one per read-back (the three planes).
    assert_eq!(c.submissions, 4);
    assert_eq!(c.readbacks, 3);
    assert_eq!(c.readback_bytes, 3 * 4 * n as u64);
}

/// With an inverse: the sorted payloads are the emitted ones in the stable order, and each input's
/// position is written (one pass, an even and an odd number of passes).
#[test]
fn sort_with_an_inverse_places_and_reports_every_entry() {
    let Some(ctx) = context(|_| {}) else { return };
    let sort = GpuSort::new(&ctx);
    for (k, bits) in [8u32, 42, 33].into_iter().enumerate() {
        let n = 2 * BLOCK as usize + 77;
        let (hi, lo) = keys(20 + k as u64, n, 300);
        // Emitted payloads unlike the input indices (Gaussian ids in the bin stage).
        let emitted: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&i| masked(hi[i as usize], lo[i as usize], bits));
        let [gh, _, gp, inverse] = sort
            .sort(&ctx, &hi, &lo, &emitted, bits, true)
            .expect("GPU sort");
        let want: Vec<u32> = order.iter().map(|&i| emitted[i as usize]).collect();
        assert_eq!(gp, want, "{bits} bits: payloads");
        let want_hi: Vec<u32> = order.iter().map(|&i| hi[i as usize]).collect();
        assert_eq!(gh, want_hi, "{bits} bits: keys");
        for (position, &input) in order.iter().enumerate() {
            assert_eq!(inverse[input as usize], position as u32, "{bits} bits");
        }
    }
}

/// With a live count on the device, only that many entries are sorted (as the host sorts them) and
/// nothing past them is read or written: for an odd pass count the output planes keep their poison
/// there, for an even one (the output is the input's planes) the input. Counts inside a block, on a
/// block boundary, zero and all.
#[test]
fn sort_with_a_live_count_sorts_only_those_entries() {
    let Some(ctx) = context(|_| {}) else { return };
    let sort = GpuSort::new(&ctx);
    let n = 3 * BLOCK as usize + 100;
    let (hi, lo) = keys(31, n, 500);
    let payload: Vec<u32> = (0..n as u32).map(|i| i ^ 0x5555).collect();
    for (live, bits) in [
        (1500usize, 8u32),
        (2 * BLOCK as usize, 16),
        (0, 8),
        (n, 40),
        (7, 42),
    ] {
        let [gh, gl, gp] = sort
            .sort_live(&ctx, &hi, &lo, &payload, bits, live as u32)
            .expect("GPU sort");
        let mut order: Vec<usize> = (0..live).collect();
        order.sort_by_key(|&i| masked(hi[i], lo[i], bits));
        let what = format!("{live} live of {n}, {bits} bits");
        let head = |v: &[u32]| order.iter().map(|&i| v[i]).collect::<Vec<_>>();
        assert_eq!(gp[..live], head(&payload)[..], "payloads, {what}");
        assert_eq!(gh[..live], head(&hi)[..], "high words, {what}");
        assert_eq!(gl[..live], head(&lo)[..], "low words, {what}");
        let odd = passes(bits) % 2 == 1;
        for (out, input) in [(&gh, &hi), (&gl, &lo), (&gp, &payload)] {
            let untouched = out[live..]
                .iter()
                .zip(&input[live..])
                .all(|(&o, &i)| o == if odd { u32::MAX } else { i });
            assert!(untouched, "entries past the live count changed, {what}");
        }
    }
}
