// Densification edits on the device (as `splat_train::densify::densify_and_prune` and `reset_opacity`):
// - `classify`: per Gaussian, candidate (mean NDC gradient >= threshold), clone (small) or split (large),
//   and whether each row it leaves in the edited set survives pruning: its own row (when not split), its
//   clone's, its two children's. Each keep flag goes to its own array, whose exclusive scans give the rows'
//   new positions: survivors first, then clones, then children (the original's order).
// - `scatter`: one parameter group per dispatch; survivors keep their moments, clones and children start
//   at zero; a child's mean is the parent's plus R(q) (z * scale) with z the stateless normal samples of
//   `splat_train::random` (the host draws the same), its log-scales the parent's minus ln 1.6.
// - `reset_opacity`: opacity logits capped at logit(0.01), their moments zeroed (skipped on a halted step).
// - `mcmc_noise`: 3DGS-MCMC's position noise after a step's Adam (`splat_train::mcmc::inject_noise`, the
//   same draws; skipped on a halted step).

struct Params {
    // Gaussians, values per Gaussian of the group (scatter), group kind (0 other, 1 means, 2 log-scales),
    // the step.
    a: vec4<u32>,
    // seed word, survivors (total), clones (total), flags: 1 late (prune by size), 2 world-size pruning,
    // 4 screen-size pruning.
    b: vec4<u32>,
    // gradient threshold, percent_dense x extent, minimum opacity, world size limit.
    c: vec4<f32>,
    // screen radius limit, ln 1.6, opacity cap (logit), unused.
    d: vec4<f32>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> grad_accum: array<f32>;
@group(0) @binding(2) var<storage, read> grad_count: array<f32>;
@group(0) @binding(3) var<storage, read> max_radii: array<f32>;
@group(0) @binding(4) var<storage, read> log_scales: array<f32>;
@group(0) @binding(5) var<storage, read> opacity_logits: array<f32>;
@group(0) @binding(6) var<storage, read_write> kind: array<u32>;
// Keep flags, scanned in place into positions (n + 1 each, the total at n).
@group(0) @binding(7) var<storage, read_write> keep_old: array<u32>;
@group(0) @binding(8) var<storage, read_write> keep_clone: array<u32>;
@group(0) @binding(9) var<storage, read_write> keep_child: array<u32>;
// Candidates, clones, splits (counted for the host's budget check and report).
@group(0) @binding(10) var<storage, read_write> counters: array<atomic<u32>>;
// scatter
@group(0) @binding(11) var<storage, read> src: array<f32>;
@group(0) @binding(12) var<storage, read> src_m: array<f32>;
@group(0) @binding(13) var<storage, read> src_v: array<f32>;
@group(0) @binding(14) var<storage, read_write> dst: array<f32>;
@group(0) @binding(15) var<storage, read_write> dst_m: array<f32>;
@group(0) @binding(16) var<storage, read_write> dst_v: array<f32>;
@group(0) @binding(17) var<storage, read> rotations: array<f32>;
@group(0) @binding(18) var<storage, read> scatter_log_scales: array<f32>;
// reset_opacity
@group(0) @binding(19) var<storage, read_write> opacity: array<f32>;
@group(0) @binding(20) var<storage, read_write> opacity_m: array<f32>;
@group(0) @binding(21) var<storage, read_write> opacity_v: array<f32>;
@group(0) @binding(22) var<storage, read> status: array<u32>;
// mcmc_noise (with log_scales, opacity_logits, rotations and status above)
@group(0) @binding(23) var<storage, read_write> noise_means: array<f32>;

const CLONE: u32 = 1u;
const SPLIT: u32 = 2u;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

fn max_log_scale(i: u32) -> f32 {
    return max(max(log_scales[3u * i], log_scales[3u * i + 1u]), log_scales[3u * i + 2u]);
}

// Whether a row with this opacity logit, largest scale and screen radius is pruned.
fn pruned(logit: f32, max_scale: f32, radius: f32) -> bool {
    let opacity = 1.0 / (1.0 + exp(-logit));
    var p = opacity < params.c.z;
    if (params.b.w & 1u) != 0u {
        if (params.b.w & 2u) != 0u {
            p = p || max_scale > params.c.w;
        }
        if (params.b.w & 4u) != 0u {
            p = p || radius > params.d.x;
        }
    }
    return p;
}

@compute @workgroup_size(256)
fn classify(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    let n = params.a.x;
    if i > n {
        return;
    }
    if i == n {
        // The scans leave each total here.
        keep_old[n] = 0u;
        keep_clone[n] = 0u;
        keep_child[n] = 0u;
        return;
    }
    let c = grad_count[i];
    var avg = 0.0;
    if c > 0.0 {
        avg = grad_accum[i] / c;
    }
    var k = 0u;
    let log_max = max_log_scale(i);
    if avg >= params.c.x {
        atomicAdd(&counters[0], 1u);
        if exp(log_max) <= params.c.y {
            k = CLONE;
        } else {
            k = SPLIT;
        }
        atomicAdd(&counters[k], 1u);
    }
    kind[i] = k;
    let logit = opacity_logits[i];
    let own = !pruned(logit, exp(log_max), max_radii[i]);
    keep_old[i] = select(0u, 1u, k != SPLIT && own);
    keep_clone[i] = select(0u, 1u, k == CLONE && own);
    let child_max = exp(max_log_scale_child(i));
    keep_child[i] = select(0u, 1u, k == SPLIT && !pruned(logit, child_max, 0.0));
}

fn max_log_scale_child(i: u32) -> f32 {
    let s = params.d.y;
    return max(max(log_scales[3u * i] - s, log_scales[3u * i + 1u] - s), log_scales[3u * i + 2u] - s);
}

// The rotation matrix of the normalized quaternion (w, x, y, z), as `splat_core::math::quat_to_mat`.
fn rotation(i: u32) -> mat3x3<f32> {
    let q = vec4<f32>(rotations[4u * i], rotations[4u * i + 1u], rotations[4u * i + 2u], rotations[4u * i + 3u]);
    let norm = sqrt(((q.x * q.x + q.y * q.y) + q.z * q.z) + q.w * q.w);
    let r = q.x / norm;
    let x = q.y / norm;
    let y = q.z / norm;
    let z = q.w / norm;
    // Columns of the row-major matrix [[1-2(yy+zz), 2(xy-rz), 2(xz+ry)], ...].
    return mat3x3<f32>(
        vec3<f32>(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + r * z), 2.0 * (x * z - r * y)),
        vec3<f32>(2.0 * (x * y - r * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z + r * x)),
        vec3<f32>(2.0 * (x * z + r * y), 2.0 * (y * z - r * x), 1.0 - 2.0 * (x * x + y * y)),
    );
}

@compute @workgroup_size(256)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i >= params.a.x {
        return;
    }
    let w = params.a.y;
    let k = kind[i];
    if k != SPLIT && keep_old[i + 1u] != keep_old[i] {
        let to = keep_old[i];
        for (var j = 0u; j < w; j++) {
            dst[to * w + j] = src[i * w + j];
            dst_m[to * w + j] = src_m[i * w + j];
            dst_v[to * w + j] = src_v[i * w + j];
        }
    }
    if k == CLONE && keep_clone[i + 1u] != keep_clone[i] {
        let to = params.b.y + keep_clone[i];
        for (var j = 0u; j < w; j++) {
            dst[to * w + j] = src[i * w + j];
            dst_m[to * w + j] = 0.0;
            dst_v[to * w + j] = 0.0;
        }
    }
    if k == SPLIT && keep_child[i + 1u] != keep_child[i] {
        let first = params.b.y + params.b.z + 2u * keep_child[i];
        for (var child = 0u; child < 2u; child++) {
            let to = first + child;
            for (var j = 0u; j < w; j++) {
                var value = src[i * w + j];
                if params.a.z == 2u {
                    value = value - params.d.y;
                }
                dst[to * w + j] = value;
                dst_m[to * w + j] = 0.0;
                dst_v[to * w + j] = 0.0;
            }
            if params.a.z == 1u {
                var z: vec3<f32>;
                for (var ax = 0u; ax < 3u; ax++) {
                    z[ax] = normal(params.b.x, params.a.w, i, 3u * child + ax) * exp(scatter_log_scales[3u * i + ax]);
                }
                let r = rotation(i);
                // Row-major product as `mat3_vec`: row k of R dotted with z, summed left to right.
                for (var row = 0u; row < 3u; row++) {
                    let off = (r[0][row] * z.x + r[1][row] * z.y) + r[2][row] * z.z;
                    dst[to * 3u + row] = src[i * 3u + row] + off;
                }
            }
        }
    }
}

@compute @workgroup_size(256)
fn reset_opacity(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i >= params.a.x || status[0] != 0u {
        return;
    }
    opacity[i] = min(opacity[i], params.d.z);
    opacity_m[i] = 0.0;
    opacity_v[i] = 0.0;
}

// mu += R diag(s^2) R^T eps, eps = N(0, I) gate(o) position_lr noise_lr, gate(o) = sigmoid(-k (o - t)).
// Params: a.x Gaussians, a.w the step; b.x the seed word; c.x position_lr noise_lr, c.y k, c.z t.
@compute @workgroup_size(256)
fn mcmc_noise(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i >= params.a.x || status[0] != 0u {
        return;
    }
    let o = 1.0 / (1.0 + exp(-opacity_logits[i]));
    let gate = 1.0 / (1.0 + exp(params.c.y * (o - params.c.z)));
    if gate == 0.0 {
        return;
    }
    let q0 = vec4<f32>(rotations[4u * i], rotations[4u * i + 1u], rotations[4u * i + 2u], rotations[4u * i + 3u]);
    let norm = sqrt(q0.x * q0.x + q0.y * q0.y + q0.z * q0.z + q0.w * q0.w);
    if !(norm > 0.0) {
        return;
    }
    let q = q0 / norm;
    let w = q.x;
    let x = q.y;
    let y = q.z;
    let z = q.w;
    // Rows of R (`splat_core::math::quat_to_mat`).
    let r0 = vec3<f32>(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y));
    let r1 = vec3<f32>(2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x));
    let r2 = vec3<f32>(2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y));
    var eps: vec3<f32>;
    for (var k = 0u; k < 3u; k++) {
        eps[k] = normal(params.b.x, params.a.w, i, 100u + k) * gate * params.c.x;
    }
    var local: vec3<f32>;
    for (var k = 0u; k < 3u; k++) {
        let s2 = exp(2.0 * log_scales[3u * i + k]);
        local[k] = s2 * (r0[k] * eps.x + r1[k] * eps.y + r2[k] * eps.z);
    }
    noise_means[3u * i] += r0.x * local.x + r0.y * local.y + r0.z * local.z;
    noise_means[3u * i + 1u] += r1.x * local.x + r1.y * local.y + r1.z * local.z;
    noise_means[3u * i + 2u] += r2.x * local.x + r2.y * local.y + r2.z * local.z;
}
