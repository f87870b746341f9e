// Exclusive prefix sum of u32 values, in levels: `scan_blocks` scans each block of 256 values in workgroup
// memory and writes the block's total; the host scans the totals the same way (recursively) and
// `add_offsets` adds each block's offset back. Sums of u32 are exact, so the result does not depend on
// the block size or the device.

struct Params {
    n: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
@group(0) @binding(2) var<storage, read_write> block_sums: array<u32>;

var<workgroup> tmp: array<u32, 256>;

fn block_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

@compute @workgroup_size(256)
fn scan_blocks(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let block = block_index(wid, nwg);
    let i = block * 256u + lid;
    var v = 0u;
    if i < params.n {
        v = data[i];
    }
    tmp[lid] = v;
    workgroupBarrier();
    // Hillis-Steele inclusive scan.
    for (var off = 1u; off < 256u; off = off * 2u) {
        var add = 0u;
        if lid >= off {
            add = tmp[lid - off];
        }
        workgroupBarrier();
        tmp[lid] = tmp[lid] + add;
        workgroupBarrier();
    }
    if i < params.n {
        data[i] = tmp[lid] - v;
    }
    // Workgroups past the end (a 2D dispatch rounds up) must not write: out-of-range writes are clamped
    // onto the last element, not dropped.
    if lid == 255u && block * 256u < params.n {
        block_sums[block] = tmp[255];
    }
}

@compute @workgroup_size(256)
fn add_offsets(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let block = block_index(wid, nwg);
    let i = block * 256u + lid;
    if i < params.n {
        data[i] = data[i] + block_sums[block];
    }
}
