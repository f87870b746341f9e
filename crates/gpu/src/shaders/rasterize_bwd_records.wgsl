// Rasterize backward with per-intersection records (composed after `rasterize_bwd.wgsl`): `tiles` stores
// each intersection's 9 sums, then `gather`, an invocation per Gaussian, finds its entry in each tile of
// its rect (binary search on (depth, id), the list's order; a tile its ellipse misses holds none) and
// adds the records in tile order, the order the fast CPU path uses: deterministic, no atomics.
// `gather_indexed` (the resident trainer's) adds the same records in the same order without a search: a
// Gaussian's entries were emitted in tile order at its offset in the tile counts' scan, and the sort wrote where each went (`sort.rs`, `Inverse`).

// 9 values per intersection in three planes of 3 (each its own binding, so a list three times longer fits
// a device's binding limit), cleared to zero before `tiles`.
@group(0) @binding(10) var<storage, read_write> records_0: array<f32>;
@group(0) @binding(16) var<storage, read_write> records_1: array<f32>;
@group(0) @binding(17) var<storage, read_write> records_2: array<f32>;
// `gather` only.
@group(0) @binding(11) var<storage, read> radii: array<u32>;
@group(0) @binding(12) var<storage, read> rects: array<vec4<u32>>;
@group(0) @binding(13) var<storage, read> depths: array<f32>;
@group(0) @binding(14) var<storage, read> key_depth: array<u32>;
@group(0) @binding(15) var<storage, read_write> grads: array<f32>;
// `gather_indexed` only: each Gaussian's first emitted entry (n + 1 offsets), each entry's sorted
// position.
@group(0) @binding(18) var<storage, read> offsets: array<u32>;
@group(0) @binding(19) var<storage, read> sorted_at: array<u32>;

fn store_sum(entry: u32, c: u32, value: f32) {
    let at = entry * 3u + c % 3u;
    switch c / 3u {
        case 0u: {
            records_0[at] = value;
        }
        case 1u: {
            records_1[at] = value;
        }
        default: {
            records_2[at] = value;
        }
    }
}

fn record(entry: u32, c: u32) -> f32 {
    let at = entry * 3u + c % 3u;
    switch c / 3u {
        case 0u: {
            return records_0[at];
        }
        case 1u: {
            return records_1[at];
        }
        default: {
            return records_2[at];
        }
    }
}

// Position of Gaussian `id` (depth bits `d`) in the sorted list segment [lo, hi).
fn find(lo_in: u32, hi_in: u32, d: u32, id: u32) -> u32 {
    var lo = lo_in;
    var hi = hi_in;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        let kd = key_depth[mid];
        let ki = ids[mid];
        if kd < d || (kd == d && ki < id) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}

fn store_grads(i: u32, acc: array<f32, 9>) {
    for (var c = 0u; c < 9u; c++) {
        grads[i * 9u + c] = acc[c];
    }
}

@compute @workgroup_size(256)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if i >= params.dims.w {
        return;
    }
    var acc = array<f32, 9>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    if radii[i] > 0u {
        let r = rects[i];
        let d = bitcast<u32>(depths[i]);
        for (var ty = r.y; ty < r.w; ty++) {
            for (var tx = r.x; tx < r.z; tx++) {
                let range = ranges[ty * params.dims.z + tx];
                let k = find(range.x, range.y, d, i);
                // Tiles of the rect the ellipse does not reach hold no entry of this Gaussian.
                if k >= range.y || ids[k] != i {
                    continue;
                }
                for (var c = 0u; c < 9u; c++) {
                    acc[c] += record(k, c);
                }
            }
        }
    }
    store_grads(i, acc);
}

@compute @workgroup_size(256)
fn gather_indexed(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if i >= params.dims.w {
        return;
    }
    var acc = array<f32, 9>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    if radii[i] > 0u {
        // A list that overflowed holds what fit (the step is halted and changes nothing).
        let end = min(offsets[i + 1u], arrayLength(&sorted_at));
        for (var e = offsets[i]; e < end; e++) {
            let k = sorted_at[e];
            for (var c = 0u; c < 9u; c++) {
                acc[c] += record(k, c);
            }
        }
    }
    store_grads(i, acc);
}
