// Adam with PyTorch's update rule (as `splat_train::adam`): per element
// m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, p -= step_size m / (sqrt(v) inv_sqrt_bias2 + eps).

struct Params {
    // Elements in this dispatch, unused x3.
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

