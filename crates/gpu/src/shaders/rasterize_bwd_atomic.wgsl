// Rasterize backward with atomics (composed after `rasterize_bwd.wgsl`): `tiles` adds each intersection's
// 9 sums straight into the Gaussian's gradient (cleared to zero first) with a compare-and-swap loop on the
// float's bits. No records and no gather pass, but the adds land in whatever order the tiles finish, so
// the rounding differs from run to run.

@group(0) @binding(16) var<storage, read_write> grads_atomic: array<atomic<u32>>;

fn store_sum(entry: u32, c: u32, value: f32) {
    if value == 0.0 {
        return;
    }
    let at = ids[entry] * 9u + c;
    var old = atomicLoad(&grads_atomic[at]);
    loop {
        let r = atomicCompareExchangeWeak(&grads_atomic[at], old, bitcast<u32>(bitcast<f32>(old) + value));
        if r.exchanged {
            break;
        }
        old = r.old_value;
    }
}
