// The rasterize backward's per-intersection sums in workgroup memory (composed after
// `rasterize_bwd.wgsl`; every adapter): each invocation writes its pixel's 9 values, then two fixed
// levels (two barriers instead of a tree's nine): 144 invocations sum 16 pixels each of one value, then 9
// sum the 16 partials. Fixed order: the same bits every run.

var<workgroup> red: array<array<f32, 256>, 9>;
var<workgroup> partial: array<array<f32, 16>, 9>;

@compute @workgroup_size(16, 16)
fn tiles(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    walk_tile(wid, lid, li, Lane(0u, 0u, 0u));
}

fn reduce_store(entry: u32, li: u32, v: array<f32, 9>, lane: Lane) {
    for (var c = 0u; c < 9u; c++) {
        red[c][li] = v[c];
    }
    workgroupBarrier();
    if li < 144u {
        let c = li / 16u;
        let part = li % 16u;
        var acc = 0.0;
        for (var k = 0u; k < 16u; k++) {
            acc += red[c][part * 16u + k];
        }
        partial[c][part] = acc;
    }
    workgroupBarrier();
    if li < 9u {
        var acc = 0.0;
        for (var k = 0u; k < 16u; k++) {
            acc += partial[li][k];
        }
        store_sum(entry, li, acc);
    }
    // `partial` is next written after the next call's first barrier, which every reader above reaches
    // only after reading: no third barrier needed.
}
