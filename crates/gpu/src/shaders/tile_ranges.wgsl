// Each tile's [start, end) in the sorted intersection list: an entry starts a range where its tile differs
// from the previous entry's and ends one where it differs from the next's. Tiles without entries keep the
// [0, 0] the buffer was cleared to. A list sized by capacity ends in padding entries whose tile is `tiles`
// (past every real tile): they belong to no range.

struct Params {
    n: u32,
    tiles: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> key_tile: array<u32>;
@group(0) @binding(2) var<storage, read_write> ranges: array<vec2<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if i >= params.n {
        return;
    }
    let t = key_tile[i];
    if t >= params.tiles {
        return;
    }
    if i == 0u || key_tile[i - 1u] != t {
        ranges[t].x = i;
    }
    if i + 1u == params.n || key_tile[i + 1u] != t {
        ranges[t].y = i + 1u;
    }
}
