// Tile intersections: `count` writes how many tiles each Gaussian's rectangle covers (0 when invisible);
// after the prefix sum of those counts, `emit` writes one (tile, depth, id) entry per intersection at the
// Gaussian's offset, in id order, so a stable sort by (tile, depth) breaks ties by id as the reference does.

struct Params {
    // Gaussians, tiles_x, first Gaussian of the dispatch, capacity of the list (0: sized for the count).
    n: u32,
    tiles_x: u32,
    first: u32,
    capacity: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> radii: array<u32>;
@group(0) @binding(2) var<storage, read> rects: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> depths: array<f32>;
@group(0) @binding(4) var<storage, read_write> counts: array<u32>;
@group(0) @binding(5) var<storage, read_write> key_tile: array<u32>;
@group(0) @binding(6) var<storage, read_write> key_depth: array<u32>;
@group(0) @binding(7) var<storage, read_write> ids: array<u32>;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return params.first + gid.x + gid.y * nwg.x * 256u;
}

@compute @workgroup_size(256)
fn count(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i >= params.n {
        return;
    }
    var c = 0u;
    if radii[i] > 0u {
        let r = rects[i];
        c = (r.z - r.x) * (r.w - r.y);
    }
    counts[i] = c;
}

// `counts` holds the exclusive prefix sum here.
@compute @workgroup_size(256)
fn emit(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i >= params.n || radii[i] == 0u {
        return;
    }
    let r = rects[i];
    var at = counts[i];
    // Positive depths order like their bit patterns.
    let d = bitcast<u32>(depths[i]);
    // A list sized by capacity takes what fits (an overflow halts the step, see `resident.wgsl`).
    var end = counts[i + 1u];
    if params.capacity != 0u {
        end = min(end, params.capacity);
    }
    for (var ty = r.y; ty < r.w && at < end; ty++) {
        for (var tx = r.x; tx < r.z && at < end; tx++) {
            key_tile[at] = ty * params.tiles_x + tx;
            key_depth[at] = d;
            ids[at] = i;
            at++;
        }
    }
}
