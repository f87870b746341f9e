// Densification statistics of one view, added into the running ones (as `splat_train::densify::view_stats`
// followed by `apply_stats` for a one-view step): per visible Gaussian, the norm of its 2D-mean gradient in
// NDC units (pixel gradient times W/2, H/2), a count of 1, and its radius into the running maximum.

struct Params {
    // Gaussians, unused x3.
    n: vec4<u32>,
    // W/2, H/2, unused x2.
    half: vec4<f32>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> radii: array<u32>;
// The rasterize backward's 9 values per Gaussian (grad mean2d first).
@group(0) @binding(2) var<storage, read> projected_grads: array<f32>;
@group(0) @binding(3) var<storage, read_write> grad_accum: array<f32>;
@group(0) @binding(4) var<storage, read_write> grad_count: array<f32>;
@group(0) @binding(5) var<storage, read_write> max_radii: array<f32>;
// The resident trainer's step status (`resident.wgsl`): a halted step changes nothing.
@group(0) @binding(6) var<storage, read> status: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if i >= params.n.x || radii[i] == 0u || status[0] != 0u {
        return;
    }
    let gx = projected_grads[9u * i] * params.half.x;
    let gy = projected_grads[9u * i + 1u] * params.half.y;
    grad_accum[i] = grad_accum[i] + sqrt(gx * gx + gy * gy);
    grad_count[i] = grad_count[i] + 1.0;
    max_radii[i] = max(max_radii[i], f32(radii[i]));
}
