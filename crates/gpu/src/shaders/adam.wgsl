// Adam with PyTorch's update rule (as `splat_train::adam`): per element
// m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, p -= step_size m / (sqrt(v) inv_sqrt_bias2 + eps).

struct Params {
    // Elements in this dispatch; `packed` only: values per Gaussian in this group, floats per Gaussian of
    // the packed gradients, this group's offset in them.
    n: vec4<u32>,
    // step_size = lr / (1 - b1^t), inv_sqrt_bias2 = 1 / sqrt(1 - b2^t), b1, b2.
    k: vec4<f32>,
    // eps, unused x3.
    e: vec4<f32>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> grads: array<f32>;
@group(0) @binding(2) var<storage, read_write> values: array<f32>;
@group(0) @binding(3) var<storage, read_write> m1: array<f32>;
@group(0) @binding(4) var<storage, read_write> m2: array<f32>;
// `packed` only: the project backward's gradients, all groups of a Gaussian together, and the resident
// trainer's step status (a halted step changes nothing).
@group(0) @binding(5) var<storage, read> packed_grads: array<f32>;
@group(0) @binding(6) var<storage, read> status: array<u32>;

fn update(i: u32, g: f32) {
    let b1 = params.k.z;
    let b2 = params.k.w;
    let m = b1 * m1[i] + (1.0 - b1) * g;
    let v = b2 * m2[i] + (1.0 - b2) * g * g;
    m1[i] = m;
    m2[i] = v;
    values[i] = values[i] - params.k.x * m / (sqrt(v) * params.k.y + params.e.x);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if i >= params.n.x {
        return;
    }
    update(i, grads[i]);
}

// The same update reading the gradient from the packed per-Gaussian layout.
@compute @workgroup_size(256)
fn packed(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if i >= params.n.x || status[0] != 0u {
        return;
    }
    let width = params.n.y;
    let gaussian = i / width;
    update(i, packed_grads[gaussian * params.n.z + params.n.w + (i - gaussian * width)]);
}
