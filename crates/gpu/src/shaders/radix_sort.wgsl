// Stable LSD radix sort of 64-bit keys (a high and a low u32 word) with a u32 payload, up to 8 bits a
// pass. A pass over the digit at bits [shift, shift + bits) runs three dispatches:
//   `histogram`: each block of BLOCK entries counts its digits in workgroup memory and writes them
//                digit-major (offsets[digit * blocks + block]);
//   the exclusive prefix sum of `offsets` (`prefix_sum.wgsl`): where each (digit, block) run starts;
//   `scatter`:   each block places its entries at that start plus their rank among the block's earlier
//                entries of the same digit.
// The rank needs no subgroup operations: per round of 256 entries every thread sets its bit in a 256-bit
// mask of its digit (8 words, atomicOr), and its place is the digit's next slot in the block plus the
// population count of the mask below its bit. The round's last entry of a digit (no bit above its own)
// then moves that digit's next slot past itself, and each entry clears the word it set: per entry one
// read of the digit's 8 words and one store, never a thread's loop over a digit's words (a software
// device runs every workgroup atomic lane by lane). Every count is exact, so the order is the
// same on every device: ascending key, ties in input order. Digits never straddle the two words (the
// host makes passes of 8 bits from bit 0; 8 divides 32).
//
// With `inverse` set, the sort also yields where each input went: the first pass takes each entry's
// input index as its payload (the payload plane is not read), and the last pass writes
// `inverse[index] = position` and, as the sorted payload, `emitted[index]` (the payload the entries were
// emitted with). The rasterize backward then finds a Gaussian's entries without a search.
//
// With `live_at` set, only the first min(live[live_at - 1], n) entries are sorted (the count a previous
// dispatch left on the device, say the intersections of a list sized by capacity). The host then
// launches only the blocks that hold entries (indirect arguments from `dispatch_args.wgsl`) and clears
// the digit counts first, so the blocks not launched count zero; a block past them that does run (the
// one block of an empty sort) writes zero counts and leaves. Entries past the count are neither read
// nor written.

struct Params {
    n: u32,
    shift: u32,
    bits: u32,
    blocks: u32,
    // Nonzero for the first and the last pass of a sort with an inverse.
    first: u32,
    last: u32,
    // 1 + the index in `live` of the count of entries to sort; 0: all n.
    live_at: u32,
    pad1: u32,
}

const RADIX: u32 = 256u;
const ROUNDS: u32 = 4u;
const BLOCK: u32 = 1024u;
const NONE: u32 = 0xffffffffu;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> key_hi: array<u32>;
@group(0) @binding(2) var<storage, read> key_lo: array<u32>;
@group(0) @binding(3) var<storage, read> ids: array<u32>;
// Digit counts per block (digit-major), then their exclusive prefix sum.
@group(0) @binding(4) var<storage, read_write> offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> out_hi: array<u32>;
@group(0) @binding(6) var<storage, read_write> out_lo: array<u32>;
@group(0) @binding(7) var<storage, read_write> out_ids: array<u32>;
// A sort with an inverse only (16-byte placeholders otherwise).
@group(0) @binding(8) var<storage, read> emitted: array<u32>;
@group(0) @binding(9) var<storage, read_write> inverse: array<u32>;
// The live count (`live_at`; a 16-byte placeholder otherwise).
@group(0) @binding(10) var<storage, read> live: array<u32>;

var<workgroup> counts: array<atomic<u32>, 256>;
// Per digit, 8 words: which of the round's 256 threads hold that digit.
var<workgroup> masks: array<atomic<u32>, 2048>;
// Per digit, where the block's next entry of that digit goes.
var<workgroup> next: array<u32, 256>;

var<workgroup> live_n: u32;

// Entries to sort (a uniform value: the workgroup's branches on it stay legal around barriers).
fn entries(lid: u32) -> u32 {
    if lid == 0u {
        live_n = params.n;
        if params.live_at != 0u {
            live_n = min(live[params.live_at - 1u], params.n);
        }
    }
    return workgroupUniformLoad(&live_n);
}

// The digit of a key (high and low word).
fn digit(hi: u32, lo: u32) -> u32 {
    let mask = (1u << params.bits) - 1u;
    if params.shift < 32u {
        return (lo >> params.shift) & mask;
    }
    return (hi >> (params.shift - 32u)) & mask;
}

// The digit of entry i, or NONE past the end (`m` entries): one word read.
fn digit_of(i: u32, m: u32) -> u32 {
    if i >= m {
        return NONE;
    }
    if params.shift < 32u {
        return digit(0u, key_lo[i]);
    }
    return digit(key_hi[i], 0u);
}

fn block_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

@compute @workgroup_size(256)
fn histogram(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    // Workgroups past the last block (a 2D dispatch rounds up) leave as a whole.
    let block = block_index(wid, nwg);
    if block >= params.blocks {
        return;
    }
    let m = entries(lid);
    if block * BLOCK >= m {
        offsets[lid * params.blocks + block] = 0u;
        return;
    }
    atomicStore(&counts[lid], 0u);
    workgroupBarrier();
    for (var r = 0u; r < ROUNDS; r = r + 1u) {
        let d = digit_of(block * BLOCK + r * 256u + lid, m);
        if d != NONE {
            atomicAdd(&counts[d], 1u);
        }
    }
    workgroupBarrier();
    offsets[lid * params.blocks + block] = atomicLoad(&counts[lid]);
}

@compute @workgroup_size(256)
fn scatter(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let block = block_index(wid, nwg);
    if block >= params.blocks {
        return;
    }
    let m = entries(lid);
    if block * BLOCK >= m {
        return;
    }
    next[lid] = offsets[lid * params.blocks + block];
    let word = lid / 32u;
    let bit = 1u << (lid % 32u);
    for (var k = 0u; k < 8u; k = k + 1u) {
        atomicStore(&masks[lid * 8u + k], 0u);
    }
    workgroupBarrier();
    for (var r = 0u; r < ROUNDS; r = r + 1u) {
        let i = block * BLOCK + r * 256u + lid;
        // The key read once: its digit, and the two words it moves.
        var hi = 0u;
        var lo = 0u;
        var d = NONE;
        if i < m {
            hi = key_hi[i];
            lo = key_lo[i];
            d = digit(hi, lo);
            atomicOr(&masks[d * 8u + word], bit);
        }
        workgroupBarrier();
        // Read only (masks and starts): each entry's place (the digit's start plus the round's entries
        // of that digit before it), and whether it is the round's last of its digit (no later one).
        var to = 0u;
        var last = false;
        if d != NONE {
            var below = 0u;
            var later = 0u;
            for (var k = 0u; k < 8u; k = k + 1u) {
                let w = atomicLoad(&masks[d * 8u + k]);
                if k < word {
                    below += countOneBits(w);
                } else if k == word {
                    below += countOneBits(w & (bit - 1u));
                    later |= w & ~(bit | (bit - 1u));
                } else {
                    later |= w;
                }
            }
            to = next[d] + below;
            last = later == 0u;
            out_hi[to] = hi;
            out_lo[to] = lo;
            var payload = i;
            if params.first == 0u {
                payload = ids[i];
            }
            if params.last != 0u {
                out_ids[to] = emitted[payload];
                inverse[payload] = to;
            } else {
                out_ids[to] = payload;
            }
        }
        workgroupBarrier();
        // Write only: the round's last entry of each digit moves the digit's start past itself, and each
        // entry clears the mask word it set (a word set by several entries is cleared by each; every
        // set word is cleared, so the masks are all zero again for the next round).
        if d != NONE {
            if last {
                next[d] = to + 1u;
            }
            atomicStore(&masks[d * 8u + word], 0u);
        }
        workgroupBarrier();
    }
}
