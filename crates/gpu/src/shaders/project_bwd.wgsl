// Project and SH backward: from the gradients of the screen-space quantities (the rasterize backward's 9
// values per Gaussian) to the gradients of every parameter, one invocation per Gaussian, following
// `splat_render::project_bwd` (the chain is written out there). Per Gaussian, packed: means (3),
// log_scales (3), rotations (4), opacity logit (1), sh_dc (3), sh_rest (stored floats).
// `Camera`, the SH constants and `dot3` come from `common_camera.wgsl`.
//
// Three entry points share `parameter_gradients`: `main` stores the gradients (the per-stage path);
// the resident step never stores them: `check` only asks whether every one is finite (the step halts
// otherwise), and `apply`, once the step is known good, forms them again and applies Adam to every
// group in place (`adam.wgsl`'s arithmetic), so the parameter gradients (59 floats a Gaussian at SH 3)
// never exist whole.

@group(0) @binding(0) var<uniform> cam: Camera;
// Read by every entry point; `apply` also updates them.
@group(0) @binding(1) var<storage, read_write> means: array<f32>;
@group(0) @binding(2) var<storage, read_write> log_scales: array<f32>;
@group(0) @binding(3) var<storage, read_write> rotations: array<f32>;
@group(0) @binding(4) var<storage, read_write> sh_dc: array<f32>;
@group(0) @binding(5) var<storage, read_write> sh_rest: array<f32>;
@group(0) @binding(6) var<storage, read> radii: array<u32>;
@group(0) @binding(7) var<storage, read> conics: array<f32>;
@group(0) @binding(8) var<storage, read> opacities: array<f32>;
@group(0) @binding(9) var<storage, read> clamped: array<u32>;
// grad mean2d (2), conic (3), colour (3), opacity (1).
@group(0) @binding(10) var<storage, read> projected_grads: array<f32>;
// `main`: the packed gradients.
@group(0) @binding(11) var<storage, read_write> out: array<f32>;
// `check` and `apply`: the resident step's status words (`resident.wgsl`: [0] the halted step, [4] set
// when a value is not finite) and the loss's row sums (`check`).
@group(0) @binding(12) var<storage, read_write> status: array<atomic<u32>>;
@group(0) @binding(13) var<storage, read> row_sums: array<f32>;

struct AdamStep {
    // Per group (means, sh_dc, sh_rest, opacity, log_scales, rotations): lr / (1 - b1^t),
    // 1 / sqrt(1 - b2^t), b1, b2.
    k: array<vec4<f32>, 6>,
    // eps; MCMC's regularizer weights per Gaussian (opacity_reg / n, scale_reg / 3n; 0 without MCMC);
    // unused.
    e: vec4<f32>,
    // bit g: group g is updated this step; the loss's row sums to check; 1: visible-only Adam (a
    // Gaussian of radius 0 keeps its values and moments); unused.
    n: vec4<u32>,
}

@group(0) @binding(14) var<uniform> adam_step: AdamStep;
// `apply`: the opacity logits and each group's moments (m, v) in the order above.
@group(0) @binding(15) var<storage, read_write> opacity_logits: array<f32>;
@group(0) @binding(16) var<storage, read_write> m_means: array<f32>;
@group(0) @binding(17) var<storage, read_write> v_means: array<f32>;
@group(0) @binding(18) var<storage, read_write> m_sh_dc: array<f32>;
@group(0) @binding(19) var<storage, read_write> v_sh_dc: array<f32>;
@group(0) @binding(20) var<storage, read_write> m_sh_rest: array<f32>;
@group(0) @binding(21) var<storage, read_write> v_sh_rest: array<f32>;
@group(0) @binding(22) var<storage, read_write> m_opacity: array<f32>;
@group(0) @binding(23) var<storage, read_write> v_opacity: array<f32>;
@group(0) @binding(24) var<storage, read_write> m_log_scales: array<f32>;
@group(0) @binding(25) var<storage, read_write> v_log_scales: array<f32>;
@group(0) @binding(26) var<storage, read_write> m_rotations: array<f32>;
@group(0) @binding(27) var<storage, read_write> v_rotations: array<f32>;

// One Gaussian's gradients, packed as above (14 + at most 45 floats).
var<private> pg: array<f32, 59>;
// With the camera block's counts.w bit 1 (per-stage path only): the Gaussian's share of the camera
// pose's gradient, G_R row by row (9) then G_t (3), stored after the parameter gradients
// (`splat_render::project_bwd`'s `add_pose_terms`; the host sums them). `parameter_gradients` leaves
// its inputs in the `pose_*` values and `pose_terms` forms them after it, so that the chain itself is
// the same code in every entry point (the fused Adam's result equals the unfused bit for bit only so):
// the view direction's share of the mean's gradient is taken as the final gradient minus `R^T G_p`.
var<private> pc: array<f32, 12>;
var<private> pose_gp: vec3<f32>;
var<private> pose_gm: vec3<f32>;
var<private> pose_j: mat2x3<f32>;
var<private> pose_gt: mat2x3<f32>;
var<private> pose_mean: vec3<f32>;

fn pose_grads() -> bool {
    return (cam.counts.w & 2u) != 0u;
}

// Gaussian i's pose terms into `pc`, after `parameter_gradients(i)`.
fn pose_terms(i: u32) {
    for (var k = 0u; k < 12u; k++) {
        pc[k] = 0.0;
    }
    if radii[i] == 0u {
        return;
    }
    let g_dir = vec3<f32>(pg[0], pg[1], pg[2]) - pose_gm;
    let tc = vec3<f32>(cam.r0.w, cam.r1.w, cam.r2.w);
    let rc = mat3x3<f32>(cam.r0.xyz, cam.r1.xyz, cam.r2.xyz);
    // G_R += G_p m^T + J^T G_T + t G_d^T; G_t += G_p + R G_d.
    for (var r = 0u; r < 3u; r++) {
        for (var c = 0u; c < 3u; c++) {
            let jt = pose_j[0][r] * pose_gt[0][c] + pose_j[1][r] * pose_gt[1][c];
            pc[3u * r + c] = (pose_gp[r] * pose_mean[c] + jt) + tc[r] * g_dir[c];
        }
        pc[9u + r] = pose_gp[r] + dot3(rc[r], g_dir);
    }
}

// Rows of a 3 x 3 matrix product a b.
fn mul33(a: mat3x3<f32>, b: mat3x3<f32>) -> mat3x3<f32> {
    // WGSL matrices are column-major: m[c][r]. Here every mat3x3 holds ROWS in its "columns" (m[r] is row r).
    var o: mat3x3<f32>;
    let bt = transpose(b);
    for (var r = 0; r < 3; r++) {
        o[r] = vec3<f32>(dot3(a[r], bt[0]), dot3(a[r], bt[1]), dot3(a[r], bt[2]));
    }
    return o;
}

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

// Gaussian i's gradients into `pg` (zeros where it was not visible).
fn parameter_gradients(i: u32) {
    let rest = cam.counts.z;
    for (var k = 0u; k < 14u + SH_REST_MAX; k++) {
        pg[k] = 0.0;
    }
    if radii[i] == 0u {
        return;
    }
    // Geometry, as in the forward (rows stored in matrix "columns", see mul33).
    let rc = mat3x3<f32>(cam.r0.xyz, cam.r1.xyz, cam.r2.xyz);
    let mean = vec3<f32>(means[3u * i], means[3u * i + 1u], means[3u * i + 2u]);
    let p = vec3<f32>(dot3(rc[0], mean), dot3(rc[1], mean), dot3(rc[2], mean)) + vec3<f32>(cam.r0.w, cam.r1.w, cam.r2.w);
    let q_raw = vec4<f32>(rotations[4u * i], rotations[4u * i + 1u], rotations[4u * i + 2u], rotations[4u * i + 3u]);
    let qn = sqrt(((q_raw.x * q_raw.x + q_raw.y * q_raw.y) + q_raw.z * q_raw.z) + q_raw.w * q_raw.w);
    let quat = q_raw / qn;
    let w = quat.x;
    let x = quat.y;
    let y = quat.z;
    let z = quat.w;
    let rot = mat3x3<f32>(
        vec3<f32>(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)),
        vec3<f32>(2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)),
        vec3<f32>(2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)),
    );
    let s = vec3<f32>(exp(log_scales[3u * i]), exp(log_scales[3u * i + 1u]), exp(log_scales[3u * i + 2u]));
    let m = mat3x3<f32>(rot[0] * s, rot[1] * s, rot[2] * s);
    let sigma = mul33(m, transpose(m));
    let zz = p.z;
    let z2 = zz * zz;
    let rx = p.x / zz;
    let ry = p.y / zz;
    let x_in = rx >= -cam.lim.x && rx <= cam.lim.x;
    let y_in = ry >= -cam.lim.y && ry <= cam.lim.y;
    let xz = min(max(rx, -cam.lim.x), cam.lim.x);
    let yz = min(max(ry, -cam.lim.y), cam.lim.y);
    let fx = cam.intr.x;
    let fy = cam.intr.y;
    var j0 = vec3<f32>(fx / zz, 0.0, -fx * xz / zz);
    var j1 = vec3<f32>(0.0, fy / zz, -fy * yz / zz);
    let fisheye = is_fisheye();
    var rad = vec4<f32>(0.0);
    if fisheye {
        rad = fisheye_radial(p);
        j0 = fisheye_j(p, rad, 0u);
        j1 = fisheye_j(p, rad, 1u);
    }
    let rct = transpose(rc);
    // T = J R_cam (rows t0, t1).
    let t0 = vec3<f32>(dot3(j0, rct[0]), dot3(j0, rct[1]), dot3(j0, rct[2]));
    let t1 = vec3<f32>(dot3(j1, rct[0]), dot3(j1, rct[1]), dot3(j1, rct[2]));

    let g = 9u * i;
    // Conic -> 2D covariance: G = -Q G_Q Q.
    let cq = vec3<f32>(conics[3u * i], conics[3u * i + 1u], conics[3u * i + 2u]);
    let gq = vec3<f32>(projected_grads[g + 2u], projected_grads[g + 3u], projected_grads[g + 4u]);
    let qm = mat2x2<f32>(vec2<f32>(cq.x, cq.y), vec2<f32>(cq.y, cq.z));
    let gqm = mat2x2<f32>(vec2<f32>(gq.x, gq.y / 2.0), vec2<f32>(gq.y / 2.0, gq.z));
    // Symmetric, so row/column storage does not matter here.
    var g_cov2 = (qm * gqm * qm) * -1.0;
    // The projected opacity is o rho on an antialiased scene; rho's gradient goes to the 2D covariance.
    var o = opacities[i];
    let g_opacity = projected_grads[g + 8u];
    var rho = 1.0;
    if antialiased() {
        let sig_cols = transpose(sigma);
        let ts0 = vec3<f32>(dot3(t0, sig_cols[0]), dot3(t0, sig_cols[1]), dot3(t0, sig_cols[2]));
        let ts1 = vec3<f32>(dot3(t1, sig_cols[0]), dot3(t1, sig_cols[1]), dot3(t1, sig_cols[2]));
        let ca = dot3(ts0, t0) + cam.lim.w;
        let cb = dot3(ts0, t1);
        let cc = dot3(ts1, t1) + cam.lim.w;
        let comp = compensation(ca, cb, cc, ca * cc - cb * cb);
        rho = comp.x;
        o = o / rho;
        if comp.y > 0.0 {
            let v = g_opacity * o / (2.0 * rho);
            let one_minus = 1.0 - rho * rho;
            let eps_det = cam.lim.w * (cq.x * cq.z - cq.y * cq.y);
            g_cov2[0][0] += v * (one_minus * cq.x - eps_det);
            g_cov2[0][1] += v * one_minus * cq.y;
            g_cov2[1][0] += v * one_minus * cq.y;
            g_cov2[1][1] += v * (one_minus * cq.z - eps_det);
        }
    }
    // G_Sigma = T^T G T; G_T = 2 G T Sigma.
    var g_sigma: mat3x3<f32>;
    for (var r = 0; r < 3; r++) {
        for (var c = 0; c < 3; c++) {
            let tr = vec2<f32>(t0[r], t1[r]);
            let tc = vec2<f32>(t0[c], t1[c]);
            g_sigma[r][c] = (tr.x * (g_cov2[0][0] * tc.x + g_cov2[0][1] * tc.y)) + tr.y * (g_cov2[1][0] * tc.x + g_cov2[1][1] * tc.y);
        }
    }
    // (G T) rows, then times Sigma.
    let gt0 = g_cov2[0][0] * t0 + g_cov2[0][1] * t1;
    let gt1 = g_cov2[1][0] * t0 + g_cov2[1][1] * t1;
    let sigt = transpose(sigma);
    let g_t0 = 2.0 * vec3<f32>(dot3(gt0, sigt[0]), dot3(gt0, sigt[1]), dot3(gt0, sigt[2]));
    let g_t1 = 2.0 * vec3<f32>(dot3(gt1, sigt[0]), dot3(gt1, sigt[1]), dot3(gt1, sigt[2]));
    // G_M = 2 G_Sigma M.
    let g_m = mul33(g_sigma, m);
    var g_rot: mat3x3<f32>;
    var g_ls = vec3<f32>(0.0);
    for (var r = 0; r < 3; r++) {
        for (var c = 0; c < 3; c++) {
            let gm = 2.0 * g_m[r][c];
            g_rot[r][c] = gm * s[c];
            g_ls[c] += gm * rot[r][c] * s[c];
        }
    }
    // Quaternion (through the normalization).
    let gr = g_rot;
    let gw = 2.0 * (-z * gr[0][1] + y * gr[0][2] + z * gr[1][0] - x * gr[1][2] - y * gr[2][0] + x * gr[2][1]);
    let gx = 2.0 * (y * gr[0][1] + z * gr[0][2] + y * gr[1][0] - w * gr[1][2] + z * gr[2][0] + w * gr[2][1]) - 4.0 * x * (gr[1][1] + gr[2][2]);
    let gy = 2.0 * (x * gr[0][1] + w * gr[0][2] + x * gr[1][0] + z * gr[1][2] - w * gr[2][0] + z * gr[2][1]) - 4.0 * y * (gr[0][0] + gr[2][2]);
    let gz = 2.0 * (-w * gr[0][1] + x * gr[0][2] + w * gr[1][0] + y * gr[1][2] + x * gr[2][0] + y * gr[2][1]) - 4.0 * z * (gr[0][0] + gr[1][1]);
    let gqn = vec4<f32>(gw, gx, gy, gz);
    let gdot = ((quat.x * gqn.x + quat.y * gqn.y) + quat.z * gqn.z) + quat.w * gqn.w;
    let g_quat = (gqn - quat * gdot) / qn;

    // T = J R -> J -> camera-space mean.
    let g_j0 = vec3<f32>(dot3(g_t0, rc[0]), dot3(g_t0, rc[1]), dot3(g_t0, rc[2]));
    let g_j1 = vec3<f32>(dot3(g_t1, rc[0]), dot3(g_t1, rc[1]), dot3(g_t1, rc[2]));
    let gu = projected_grads[g];
    let gv = projected_grads[g + 1u];
    var gp = vec3<f32>(0.0);
    if fisheye {
        gp = fisheye_backward(p, rad, vec2<f32>(gu, gv), g_j0, g_j1);
    } else {
        gp.z += g_j0.x * (-fx / z2) + g_j1.y * (-fy / z2);
        gp.z += g_j0.z * fx * xz / z2 + g_j1.z * fy * yz / z2;
        let g_xz = g_j0.z * (-fx / zz);
        let g_yz = g_j1.z * (-fy / zz);
        if x_in {
            gp.x += g_xz / zz;
            gp.z -= g_xz * p.x / z2;
        }
        if y_in {
            gp.y += g_yz / zz;
            gp.z -= g_yz * p.y / z2;
        }
        gp.x += gu * fx / zz;
        gp.y += gv * fy / zz;
        gp.z -= (gu * fx * p.x + gv * fy * p.y) / z2;
    }
    // R_cam^T gp.
    var g_mean = vec3<f32>(dot3(rct[0], gp), dot3(rct[1], gp), dot3(rct[2], gp));
    // What `pose_terms` reads (dead, so compiled away, in `check` and `apply`).
    pose_gp = gp;
    pose_gm = g_mean;
    pose_j = mat2x3<f32>(j0, j1);
    pose_gt = mat2x3<f32>(g_t0, g_t1);
    pose_mean = mean;

    // Opacity logit.
    let g_logit = g_opacity * rho * o * (1.0 - o);

    // Colour: SH coefficients and the mean through the view direction.
    let flags = clamped[i];
    var gc = vec3<f32>(projected_grads[g + 5u], projected_grads[g + 6u], projected_grads[g + 7u]);
    for (var ch = 0u; ch < 3u; ch++) {
        if (flags & (1u << ch)) != 0u {
            gc[ch] = 0.0;
        }
    }
    let dv = mean - cam.center.xyz;
    let norm = sqrt((dv.x * dv.x + dv.y * dv.y) + dv.z * dv.z);
    let d = dv / norm;
    let coeffs = cam.counts.y;
    let b = sh_basis(d, coeffs);
    let xx = d.x * d.x;
    let yy = d.y * d.y;
    let zd = d.z * d.z;
    var gb: array<f32, 16>;
    for (var ch = 0u; ch < 3u; ch++) {
        pg[11u + ch] = b[0] * gc[ch];
        gb[0] += sh_dc[3u * i + ch] * gc[ch];
        for (var k = 1u; k < SH_COEFFS_MAX; k++) {
            if k < coeffs {
                let at = (k - 1u) * 3u + ch;
                pg[14u + at] = b[k] * gc[ch];
                gb[k] += sh_rest[i * rest + at] * gc[ch];
            }
        }
    }
    if coeffs > 1u {
        var gd = vec3<f32>(0.0);
        gd.x -= SH_C1 * gb[3];
        gd.y -= SH_C1 * gb[1];
        gd.z += SH_C1 * gb[2];
        if coeffs > 4u {
            gd += gb[4] * SH_C2[0] * vec3<f32>(d.y, d.x, 0.0);
            gd += gb[5] * SH_C2[1] * vec3<f32>(0.0, d.z, d.y);
            gd += gb[6] * SH_C2[2] * vec3<f32>(-2.0 * d.x, -2.0 * d.y, 4.0 * d.z);
            gd += gb[7] * SH_C2[3] * vec3<f32>(d.z, 0.0, d.x);
            gd += gb[8] * SH_C2[4] * vec3<f32>(2.0 * d.x, -2.0 * d.y, 0.0);
        }
        if coeffs > 9u {
            gd += gb[9] * SH_C3[0] * vec3<f32>(6.0 * d.x * d.y, 3.0 * xx - 3.0 * yy, 0.0);
            gd += gb[10] * SH_C3[1] * vec3<f32>(d.y * d.z, d.x * d.z, d.x * d.y);
            gd += gb[11] * SH_C3[2] * vec3<f32>(-2.0 * d.x * d.y, 4.0 * zd - xx - 3.0 * yy, 8.0 * d.y * d.z);
            gd += gb[12] * SH_C3[3] * vec3<f32>(-6.0 * d.x * d.z, -6.0 * d.y * d.z, 6.0 * zd - 3.0 * xx - 3.0 * yy);
            gd += gb[13] * SH_C3[4] * vec3<f32>(4.0 * zd - 3.0 * xx - yy, -2.0 * d.x * d.y, 8.0 * d.x * d.z);
            gd += gb[14] * SH_C3[5] * vec3<f32>(2.0 * d.x * d.z, -2.0 * d.y * d.z, xx - yy);
            gd += gb[15] * SH_C3[6] * vec3<f32>(3.0 * xx - 3.0 * yy, -6.0 * d.x * d.y, 0.0);
        }
        let dd = dot3(d, gd);
        g_mean += (gd - d * dd) / norm;
    }
    pg[0u] = g_mean.x;
    pg[1u] = g_mean.y;
    pg[2u] = g_mean.z;
    pg[3u] = g_ls.x;
    pg[4u] = g_ls.y;
    pg[5u] = g_ls.z;
    pg[6u] = g_quat.x;
    pg[7u] = g_quat.y;
    pg[8u] = g_quat.z;
    pg[9u] = g_quat.w;
    pg[10u] = g_logit;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i >= cam.counts.x {
        return;
    }
    parameter_gradients(i);
    let params = 14u + cam.counts.z;
    var stride = params;
    if pose_grads() {
        stride += 12u;
        pose_terms(i);
        for (var k = 0u; k < 12u; k++) {
            out[i * stride + params + k] = pc[k];
        }
    }
    for (var k = 0u; k < 14u + SH_REST_MAX; k++) {
        if k < params {
            out[i * stride + k] = pg[k];
        }
    }
}

fn finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

// Sets status[4] when a gradient of this chunk's Gaussians is not finite; invocation 0 of each chunk
// also checks the loss's row sums.
@compute @workgroup_size(256)
fn check(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    var ok = true;
    if i < cam.counts.x {
        parameter_gradients(i);
        // Past the stored floats `pg` holds zeros.
        for (var k = 0u; k < 14u + SH_REST_MAX; k++) {
            ok = ok && finite(pg[k]);
        }
    }
    if i == 0u {
        for (var k = 0u; k < adam_step.n.y; k++) {
            ok = ok && finite(row_sums[k]);
        }
    }
    if !ok {
        atomicOr(&status[4], 1u);
    }
}

// Adam's update of one value of group g (`adam.wgsl`, the same arithmetic): (m, v, value) after it.
fn adam(g: u32, grad: f32, m: f32, v: f32, value: f32) -> vec3<f32> {
    let k = adam_step.k[g];
    let m1 = k.z * m + (1.0 - k.z) * grad;
    let v1 = k.w * v + (1.0 - k.w) * grad * grad;
    return vec3<f32>(m1, v1, value - k.x * m1 / (sqrt(v1) * k.y + adam_step.e.x));
}

fn updates(g: u32) -> bool {
    return (adam_step.n.x & (1u << g)) != 0u;
}

// The gradients again, then Adam on every group the step updates (nothing on a halted step).
@compute @workgroup_size(256)
fn apply(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i >= cam.counts.x || atomicLoad(&status[0]) != 0u {
        return;
    }
    if adam_step.n.z != 0u && radii[i] == 0u {
        return;
    }
    parameter_gradients(i);
    // 3DGS-MCMC's regularizers (`splat_train::mcmc::add_regularizer`), from the values before the update.
    if adam_step.e.y != 0.0 || adam_step.e.z != 0.0 {
        let o = 1.0 / (1.0 + exp(-opacity_logits[i]));
        pg[10] += adam_step.e.y * o * (1.0 - o);
        for (var c = 0u; c < 3u; c++) {
            pg[3u + c] += adam_step.e.z * exp(log_scales[3u * i + c]);
        }
    }
    if updates(0u) {
        for (var c = 0u; c < 3u; c++) {
            let j = 3u * i + c;
            let r = adam(0u, pg[c], m_means[j], v_means[j], means[j]);
            m_means[j] = r.x;
            v_means[j] = r.y;
            means[j] = r.z;
        }
    }
    if updates(1u) {
        for (var c = 0u; c < 3u; c++) {
            let j = 3u * i + c;
            let r = adam(1u, pg[11u + c], m_sh_dc[j], v_sh_dc[j], sh_dc[j]);
            m_sh_dc[j] = r.x;
            v_sh_dc[j] = r.y;
            sh_dc[j] = r.z;
        }
    }
    let rest = cam.counts.z;
    if updates(2u) {
        for (var c = 0u; c < SH_REST_MAX; c++) {
            if c < rest {
                let j = rest * i + c;
                let r = adam(2u, pg[14u + c], m_sh_rest[j], v_sh_rest[j], sh_rest[j]);
                m_sh_rest[j] = r.x;
                v_sh_rest[j] = r.y;
                sh_rest[j] = r.z;
            }
        }
    }
    if updates(3u) {
        let r = adam(3u, pg[10], m_opacity[i], v_opacity[i], opacity_logits[i]);
        m_opacity[i] = r.x;
        v_opacity[i] = r.y;
        opacity_logits[i] = r.z;
    }
    if updates(4u) {
        for (var c = 0u; c < 3u; c++) {
            let j = 3u * i + c;
            let r = adam(4u, pg[3u + c], m_log_scales[j], v_log_scales[j], log_scales[j]);
            m_log_scales[j] = r.x;
            v_log_scales[j] = r.y;
            log_scales[j] = r.z;
        }
    }
    if updates(5u) {
        for (var c = 0u; c < 4u; c++) {
            let j = 4u * i + c;
            let r = adam(5u, pg[6u + c], m_rotations[j], v_rotations[j], rotations[j]);
            m_rotations[j] = r.x;
            v_rotations[j] = r.y;
            rotations[j] = r.z;
        }
    }
}
