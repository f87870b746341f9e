// Each tile's [start, end) in the sorted intersection list: an entry starts a range where its tile differs
// from the previous entry's and ends one where it differs from the next's. Tiles without entries keep the
// [0, 0] the buffer was cleared to. The list's entries are the first min(live[live_at - 1], n): a list
// sized by capacity holds its step's intersections first and nothing meaningful past them.

struct Params {
    n: u32,
    tiles: u32,
    // 1 + the index in `live` of the entry count.
    live_at: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> key_tile: array<u32>;
@group(0) @binding(2) var<storage, read_write> ranges: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> live: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    let n = min(live[params.live_at - 1u], params.n);
    if i >= n {
        return;
    }
    let t = key_tile[i];
    if t >= params.tiles {
        return;
    }
    if i == 0u || key_tile[i - 1u] != t {
        ranges[t].x = i;
    }
    if i + 1u == n || key_tile[i + 1u] != t {
        ranges[t].y = i + 1u;
    }
}
