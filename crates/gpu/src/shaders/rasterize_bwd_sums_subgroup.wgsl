// The rasterize backward's per-intersection sums per subgroup first (composed after
// `rasterize_bwd.wgsl`; where the adapter has subgroups of at least 4): `subgroupAdd` sums each value over
// a subgroup's pixels, the first invocation of each subgroup writes its 9 sums, and after one barrier 9
// invocations add the subgroups' sums in subgroup order. One barrier and 9 x (subgroups) values through
// workgroup memory per intersection, where the workgroup-memory sums take two barriers and 9 x 256
// values. The order is fixed on a given device (its subgroup reduction, then subgroup order): the same
// bits every run; another device may round differently, as it may anyway.

// Two sets, alternating per call: a set is written again only two calls later, after a barrier every
// reader of it has passed.
var<workgroup> lane_sums: array<array<array<f32, 64>, 9>, 2>;
var<private> parity: u32;

// One-dimensional (subgroup ids need it): invocation li is the tile's pixel (li % 16, li / 16), as in
// the 16 x 16 workgroup of the other sums.
@compute @workgroup_size(256)
fn tiles(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
    @builtin(subgroup_id) subgroup: u32,
    @builtin(subgroup_invocation_id) index: u32,
    @builtin(num_subgroups) subgroups: u32,
) {
    walk_tile(wid, vec3<u32>(li % 16u, li / 16u, 0u), li, Lane(subgroup, index, subgroups));
}

fn reduce_store(entry: u32, li: u32, v: array<f32, 9>, lane: Lane) {
    let s = parity;
    parity = 1u - parity;
    for (var c = 0u; c < 9u; c++) {
        let sum = subgroupAdd(v[c]);
        if lane.index == 0u {
            lane_sums[s][c][lane.subgroup] = sum;
        }
    }
    workgroupBarrier();
    if li < 9u {
        var acc = 0.0;
        for (var k = 0u; k < lane.subgroups; k++) {
            acc += lane_sums[s][li][k];
        }
        store_sum(entry, li, acc);
    }
}
