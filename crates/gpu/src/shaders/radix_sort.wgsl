// Stable LSD radix sort of (tile, depth) keys with their Gaussian ids, one bit per pass: `flags` marks the
// entries whose bit is 0, the prefix sum of the flags gives each such entry its new position, and
// `scatter` places entries with bit 1 after all the zeros, in their old order. Stability across passes
// makes the final order (tile, depth, id) with ids emitted in ascending order.
// Bits 0..31 are the depth's, bits 32.. the tile's.

struct Params {
    n: u32,
    bit: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> key_tile: array<u32>;
@group(0) @binding(2) var<storage, read> key_depth: array<u32>;
@group(0) @binding(3) var<storage, read> ids: array<u32>;
// Exclusive prefix sum of the zero flags (written by `flags`, scanned, then read by `scatter`), with the
// total number of zeros at index n.
@group(0) @binding(4) var<storage, read_write> zeros_before: array<u32>;
@group(0) @binding(5) var<storage, read_write> out_tile: array<u32>;
@group(0) @binding(6) var<storage, read_write> out_depth: array<u32>;
@group(0) @binding(7) var<storage, read_write> out_ids: array<u32>;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

fn bit_of(i: u32) -> u32 {
    if params.bit < 32u {
        return (key_depth[i] >> params.bit) & 1u;
    }
    return (key_tile[i] >> (params.bit - 32u)) & 1u;
}

// Writes n + 1 flags (the last one 0) so that the exclusive scan leaves the zero count at index n.
@compute @workgroup_size(256)
fn flags(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i > params.n {
        return;
    }
    var f = 0u;
    if i < params.n {
        f = 1u - bit_of(i);
    }
    zeros_before[i] = f;
}

@compute @workgroup_size(256)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i >= params.n {
        return;
    }
    var to = zeros_before[i];
    if bit_of(i) == 1u {
        to = zeros_before[params.n] + (i - zeros_before[i]);
    }
    out_tile[to] = key_tile[i];
    out_depth[to] = key_depth[i];
    out_ids[to] = ids[i];
}
