// The device's measured peaks for `splat bench` (the roofline's two ceilings): `fma_chain` runs eight
// independent chains of vec4 multiply-adds per invocation (enough to hide the FMA latency), 64 FLOPs an
// iteration, and writes their sum so nothing is optimized away; `copy` moves a vec4 per invocation from
// one buffer to another (16 bytes read, 16 written).

struct Params {
    iterations: u32,
    n: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> sums: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> dst: array<vec4<f32>>;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

@compute @workgroup_size(256)
fn fma_chain(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i >= params.n {
        return;
    }
    let x = f32(i) * 1e-7;
    var c0 = vec4<f32>(x, x + 0.1, x + 0.2, x + 0.3);
    var c1 = c0 + 1.0;
    var c2 = c0 + 2.0;
    var c3 = c0 + 3.0;
    var c4 = c0 + 4.0;
    var c5 = c0 + 5.0;
    var c6 = c0 + 6.0;
    var c7 = c0 + 7.0;
    let m = vec4<f32>(0.9999);
    let k = vec4<f32>(1e-4);
    for (var t = 0u; t < params.iterations; t = t + 1u) {
        c0 = fma(c0, m, k);
        c1 = fma(c1, m, k);
        c2 = fma(c2, m, k);
        c3 = fma(c3, m, k);
        c4 = fma(c4, m, k);
        c5 = fma(c5, m, k);
        c6 = fma(c6, m, k);
        c7 = fma(c7, m, k);
    }
    sums[i] = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7;
}

@compute @workgroup_size(256)
fn copy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i >= params.n {
        return;
    }
    dst[i] = src[i];
}
