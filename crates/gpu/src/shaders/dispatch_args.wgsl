// The workgroup counts of dispatches sized by a count a previous dispatch left on the device (the resident
// step's intersections), written as indirect dispatch arguments: for each of two sizes, the workgroups
// that cover min(live[live_at - 1], n) items at `per_group` items a workgroup (at least one), as x by y
// within the device's per-dimension limit (x = the limit when one dimension does not hold them), z = 1.
// The kernels dispatched so find their workgroup's index as wid.x + wid.y * nwg.x and leave past the end,
// as they do when dispatched directly; workgroups past the count are never launched.

struct Params {
    n: u32,
    // 1 + the index in `live` of the count.
    live_at: u32,
    // Items a workgroup for the first and the second argument triple.
    per_group: vec2<u32>,
    max_dim: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> live: array<u32>;
// Two triples at words 0 and 4 (16-byte aligned, as indirect offsets need multiples of 4).
@group(0) @binding(2) var<storage, read_write> args: array<u32>;

fn write_args(at: u32, per_group: u32, m: u32) {
    var groups = m / per_group;
    if m % per_group != 0u {
        groups += 1u;
    }
    groups = max(groups, 1u);
    if groups <= params.max_dim {
        args[at] = groups;
        args[at + 1u] = 1u;
    } else {
        args[at] = params.max_dim;
        args[at + 1u] = (groups + params.max_dim - 1u) / params.max_dim;
    }
    args[at + 2u] = 1u;
}

@compute @workgroup_size(1)
fn main() {
    let m = min(live[params.live_at - 1u], params.n);
    write_args(0u, params.per_group.x, m);
    write_args(4u, params.per_group.y, m);
}
