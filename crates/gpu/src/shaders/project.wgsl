// Project stage: 3D Gaussians to screen-space ellipses, and the view-dependent colour (SH).
// One invocation per Gaussian; the arithmetic follows `splat_render::project` (the reference) step by step.
// Arrays are flat f32 (3 per mean, 4 per quaternion, ...) so no vec3 padding rules apply. `Camera`, the SH
// constants and `dot3` come from `common_camera.wgsl`.

@group(0) @binding(0) var<uniform> cam: Camera;
@group(0) @binding(1) var<storage, read> means: array<f32>;
@group(0) @binding(2) var<storage, read> log_scales: array<f32>;
@group(0) @binding(3) var<storage, read> rotations: array<f32>;
@group(0) @binding(4) var<storage, read> opacity_logits: array<f32>;
@group(0) @binding(5) var<storage, read> sh_dc: array<f32>;
@group(0) @binding(6) var<storage, read> sh_rest: array<f32>;
// Outputs: means2d (2), conics (3), depth, radius, tile rect (x0, y0, x1, y1), opacity, colour (3),
// clamped channels (bits 0..2).
@group(0) @binding(7) var<storage, read_write> means2d: array<f32>;
@group(0) @binding(8) var<storage, read_write> conics: array<f32>;
@group(0) @binding(9) var<storage, read_write> depths: array<f32>;
@group(0) @binding(10) var<storage, read_write> radii: array<u32>;
@group(0) @binding(11) var<storage, read_write> rects: array<vec4<u32>>;
@group(0) @binding(12) var<storage, read_write> opacities: array<f32>;
@group(0) @binding(13) var<storage, read_write> colors: array<f32>;
@group(0) @binding(14) var<storage, read_write> clamped: array<u32>;

// `splat_render::project::visible_box`: half-widths of the box outside which alpha < alpha_min
// (cam.center.w), widened by 1% + 0.01 px; huge when alpha_min is 0, hugely negative (no tile) when the
// opacity is under it. (a, c): the 2D covariance's diagonal.
fn visible_box(a: f32, c: f32, opacity: f32) -> vec2<f32> {
    let alpha_min = cam.center.w;
    if alpha_min <= 0.0 {
        return vec2<f32>(1e30);
    }
    if !(opacity >= alpha_min) {
        return vec2<f32>(-1e30);
    }
    let t2 = 2.0 * log(opacity / alpha_min);
    return sqrt(t2 * vec2<f32>(a, c)) * 1.01 + 0.01;
}

fn clip_tile(x: f32, n: u32) -> u32 {
    // NaN fails every comparison: treat it like <= 0 as the reference does.
    if !(x > 0.0) {
        return 0u;
    }
    if x >= f32(n) {
        return n;
    }
    return u32(x);
}

fn is_finite(x: f32) -> bool {
    // Neither NaN nor infinite (WGSL has no isFinite; compare the exponent bits).
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

fn invisible(i: u32) {
    radii[i] = 0u;
    rects[i] = vec4<u32>(0u);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // 2D dispatch past the per-dimension workgroup limit.
    let i = gid.x + gid.y * nwg.x * 256u;
    if i >= cam.counts.x {
        return;
    }
    let mean = vec3<f32>(means[3u * i], means[3u * i + 1u], means[3u * i + 2u]);
    // p = R mean + t, row by row as the reference's mat3_vec then + t.
    let pr = vec3<f32>(dot3(cam.r0.xyz, mean), dot3(cam.r1.xyz, mean), dot3(cam.r2.xyz, mean));
    let p = pr + vec3<f32>(cam.r0.w, cam.r1.w, cam.r2.w);
    let fisheye = is_fisheye();
    if select(!(p.z > cam.lim.z), !fisheye_sees(p), fisheye) {
        invisible(i);
        return;
    }
    var q = vec4<f32>(rotations[4u * i], rotations[4u * i + 1u], rotations[4u * i + 2u], rotations[4u * i + 3u]);
    let qn = sqrt(((q.x * q.x + q.y * q.y) + q.z * q.z) + q.w * q.w);
    q = q / qn;
    let w = q.x;
    let x = q.y;
    let y = q.z;
    let z = q.w;
    // Rows of R_q.
    let rot = array<vec3<f32>, 3>(
        vec3<f32>(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)),
        vec3<f32>(2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)),
        vec3<f32>(2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)),
    );
    let s = vec3<f32>(exp(log_scales[3u * i]), exp(log_scales[3u * i + 1u]), exp(log_scales[3u * i + 2u]));
    // M = R_q diag(s) (rows), Sigma = M M^T.
    let m = array<vec3<f32>, 3>(rot[0] * s, rot[1] * s, rot[2] * s);
    var sigma: array<vec3<f32>, 3>;
    for (var r = 0u; r < 3u; r++) {
        sigma[r] = vec3<f32>(dot3(m[r], m[0]), dot3(m[r], m[1]), dot3(m[r], m[2]));
    }
    let zz = p.z;
    let rx = p.x / zz;
    let ry = p.y / zz;
    let xz = min(max(rx, -cam.lim.x), cam.lim.x);
    let yz = min(max(ry, -cam.lim.y), cam.lim.y);
    let fx = cam.intr.x;
    let fy = cam.intr.y;
    // J (2 x 3) and T = J R_cam (2 x 3, rows).
    var j0 = vec3<f32>(fx / zz, 0.0, -fx * xz / zz);
    var j1 = vec3<f32>(0.0, fy / zz, -fy * yz / zz);
    var uv = vec2<f32>(fx * p.x / zz + cam.intr.z, fy * p.y / zz + cam.intr.w);
    var depth = zz;
    if fisheye {
        let rad = fisheye_radial(p);
        j0 = fisheye_j(p, rad, 0u);
        j1 = fisheye_j(p, rad, 1u);
        uv = fisheye_uv(p, rad);
        depth = sqrt((p.x * p.x + p.y * p.y) + p.z * p.z);
    }
    let cam_cols = array<vec3<f32>, 3>(
        vec3<f32>(cam.r0.x, cam.r1.x, cam.r2.x),
        vec3<f32>(cam.r0.y, cam.r1.y, cam.r2.y),
        vec3<f32>(cam.r0.z, cam.r1.z, cam.r2.z),
    );
    let t0 = vec3<f32>(dot3(j0, cam_cols[0]), dot3(j0, cam_cols[1]), dot3(j0, cam_cols[2]));
    let t1 = vec3<f32>(dot3(j1, cam_cols[0]), dot3(j1, cam_cols[1]), dot3(j1, cam_cols[2]));
    // (T Sigma) rows, then (T Sigma) T^T.
    let sig_cols = array<vec3<f32>, 3>(
        vec3<f32>(sigma[0].x, sigma[1].x, sigma[2].x),
        vec3<f32>(sigma[0].y, sigma[1].y, sigma[2].y),
        vec3<f32>(sigma[0].z, sigma[1].z, sigma[2].z),
    );
    let ts0 = vec3<f32>(dot3(t0, sig_cols[0]), dot3(t0, sig_cols[1]), dot3(t0, sig_cols[2]));
    let ts1 = vec3<f32>(dot3(t1, sig_cols[0]), dot3(t1, sig_cols[1]), dot3(t1, sig_cols[2]));
    let a = dot3(ts0, t0) + cam.lim.w;
    let b = dot3(ts0, t1);
    let c = dot3(ts1, t1) + cam.lim.w;
    let det = a * c - b * b;
    if !(det > 0.0) {
        invisible(i);
        return;
    }
    let conic = vec3<f32>(c / det, -b / det, a / det);
    let mid = 0.5 * (a + c);
    let lambda = mid + sqrt(max(mid * mid - det, 0.1));
    let radius = ceil(3.0 * sqrt(lambda));
    let u = uv.x;
    let v = uv.y;
    if !(is_finite(u) && is_finite(v) && is_finite(radius) && is_finite(conic.x) && is_finite(conic.y) && is_finite(conic.z)) {
        invisible(i);
        return;
    }
    let rect = vec4<u32>(
        clip_tile(floor((u - radius) / 16.0), cam.dims.z),
        clip_tile(floor((v - radius) / 16.0), cam.dims.w),
        clip_tile(floor((u + radius) / 16.0) + 1.0, cam.dims.z),
        clip_tile(floor((v + radius) / 16.0) + 1.0, cam.dims.w),
    );
    if rect.x >= rect.z || rect.y >= rect.w {
        invisible(i);
        return;
    }
    var opacity = 1.0 / (1.0 + exp(-opacity_logits[i]));
    if antialiased() {
        opacity *= compensation(a, b, c, det).x;
    }

    // Colour: max(0, 0.5 + sum_k basis_k(dir) coeff_k).
    let dv = mean - cam.center.xyz;
    let norm = sqrt((dv.x * dv.x + dv.y * dv.y) + dv.z * dv.z);
    let d = dv / norm;
    let coeffs = cam.counts.y;
    let basis = sh_basis(d, coeffs);
    let rest = cam.counts.z;
    var flags = 0u;
    for (var ch = 0u; ch < 3u; ch++) {
        var col = 0.5 + basis[0] * sh_dc[3u * i + ch];
        for (var k = 1u; k < SH_COEFFS_MAX; k++) {
            if k < coeffs {
                col += basis[k] * sh_rest[i * rest + (k - 1u) * 3u + ch];
            }
        }
        if col < 0.0 {
            flags |= 1u << ch;
            col = 0.0;
        }
        colors[3u * i + ch] = col;
    }
    means2d[2u * i] = u;
    means2d[2u * i + 1u] = v;
    conics[3u * i] = conic.x;
    conics[3u * i + 1u] = conic.y;
    conics[3u * i + 2u] = conic.z;
    depths[i] = depth;
    radii[i] = max(u32(min(radius, 4294967040.0)), 1u);
    // Only the tiles the alpha >= alpha_min ellipse can reach (maybe none: still visible).
    let reach = visible_box(a, c, opacity);
    let reached = vec4<u32>(
        clip_tile(ceil((u - reach.x - 15.5) / 16.0), cam.dims.z),
        clip_tile(ceil((v - reach.y - 15.5) / 16.0), cam.dims.w),
        clip_tile(floor((u + reach.x - 0.5) / 16.0) + 1.0, cam.dims.z),
        clip_tile(floor((v + reach.y - 0.5) / 16.0) + 1.0, cam.dims.w),
    );
    rects[i] = vec4<u32>(max(rect.xy, reached.xy), min(rect.zw, reached.zw));
    opacities[i] = opacity;
    clamped[i] = flags;
}
