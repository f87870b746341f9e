// Shared by the per-Gaussian stages (prepended by `shaders.rs`): the camera block, the SH constants and
// basis, and a dot product summed left to right as the reference's loops do.

struct Camera {
    // Rows of the world-to-camera rotation, translation in w.
    r0: vec4<f32>,
    r1: vec4<f32>,
    r2: vec4<f32>,
    // Camera centre in world space (xyz); the blending rule's alpha_min (w, for the projection's tiles).
    center: vec4<f32>,
    // fx, fy, cx, cy.
    intr: vec4<f32>,
    // x/z and y/z clamp limits, near plane, dilation; the equidistant fisheye has its cull angle in x
    // and -1 in y (`is_fisheye`).
    lim: vec4<f32>,
    // width, height, tiles_x, tiles_y.
    dims: vec4<u32>,
    // Gaussians in this dispatch (a chunk binds its sub-ranges), active SH coefficients, stored sh_rest floats
    // per Gaussian, flags (bit 0: an antialiased scene).
    counts: vec4<u32>,
}

// The scene is antialiased: opacities carry the compensation rho (`splat_render::project::compensation`).
fn antialiased() -> bool {
    return (cam.counts.w & 1u) != 0u;
}

// The compensation of a dilated 2D covariance (a, b, c) with determinant `det`, floored at 0.005 (x), and
// whether it is above the floor (y = 1).
fn compensation(a: f32, b: f32, c: f32, det: f32) -> vec2<f32> {
    let det_orig = (a - cam.lim.w) * (c - cam.lim.w) - b * b;
    let rho2 = det_orig / det;
    if rho2 > 0.005 * 0.005 {
        return vec2<f32>(sqrt(rho2), 1.0);
    }
    return vec2<f32>(0.005, 0.0);
}

// The camera is the equidistant fisheye (`splat_render::fisheye`).
fn is_fisheye() -> bool {
    return cam.lim.y < 0.0;
}

// rho, a, b and 1 / s of the equidistant fisheye at camera-space `p` (`splat_render::fisheye::radial`:
// series in t = (r / z)^2 below 0.1, the closed form above).
fn fisheye_radial(p: vec3<f32>) -> vec4<f32> {
    let w = p.x * p.x + p.y * p.y;
    let s = w + p.z * p.z;
    let inv_s = 1.0 / s;
    if p.z > 0.0 && w < 0.1 * p.z * p.z {
        let t = w / (p.z * p.z);
        let iz = 1.0 / p.z;
        var sr = 0.0;
        var sa = 0.0;
        var sb = 0.0;
        for (var n = 15; n >= 0; n--) {
            let nf = f32(n);
            let sign = select(-1.0, 1.0, n % 2 == 0);
            sr = sr * t + sign / (2.0 * nf + 1.0);
            let n1 = nf + 1.0;
            sa = sa * t + -sign * 2.0 * n1 / (2.0 * n1 + 1.0);
            let n2 = nf + 2.0;
            sb = sb * t + 2.0 * sign * (n2 - 1.0) * 2.0 * n2 / (2.0 * n2 + 1.0);
        }
        let iz3 = iz * iz * iz;
        return vec4<f32>(sr * iz, sa * iz3, sb * iz3 * iz * iz, inv_s);
    }
    let r = sqrt(w);
    let rho = atan2(r, p.z) / r;
    let a = (p.z * inv_s - rho) / w;
    let b = (-2.0 * p.z * inv_s * inv_s - 3.0 * a) / w;
    return vec4<f32>(rho, a, b, inv_s);
}

// Whether the fisheye sees `p`: further than the near plane and within the cull angle.
fn fisheye_sees(p: vec3<f32>) -> bool {
    let dist = sqrt((p.x * p.x + p.y * p.y) + p.z * p.z);
    let theta = atan2(sqrt(p.x * p.x + p.y * p.y), p.z);
    return dist > cam.lim.z && theta <= cam.lim.x;
}

// The fisheye's 2D mean.
fn fisheye_uv(p: vec3<f32>, rad: vec4<f32>) -> vec2<f32> {
    return vec2<f32>(cam.intr.x * rad.x * p.x + cam.intr.z, cam.intr.y * rad.x * p.y + cam.intr.w);
}

// Row `row` of the fisheye's Jacobian d(u, v) / dp.
fn fisheye_j(p: vec3<f32>, rad: vec4<f32>, row: u32) -> vec3<f32> {
    let rho = rad.x;
    let a = rad.y;
    if row == 0u {
        let fx = cam.intr.x;
        return vec3<f32>(fx * (rho + p.x * p.x * a), fx * p.x * p.y * a, -fx * p.x * rad.w);
    }
    let fy = cam.intr.y;
    return vec3<f32>(fy * p.x * p.y * a, fy * (rho + p.y * p.y * a), -fy * p.y * rad.w);
}

// The camera-space gradient of the fisheye's pixel and Jacobian (`splat_render::fisheye::project_backward`).
fn fisheye_backward(p: vec3<f32>, rad: vec4<f32>, g_uv: vec2<f32>, g_j0: vec3<f32>, g_j1: vec3<f32>) -> vec3<f32> {
    let fx = cam.intr.x;
    let fy = cam.intr.y;
    let rho = rad.x;
    let a = rad.y;
    let b = rad.z;
    let inv_s = rad.w;
    let x = p.x;
    let y = p.y;
    let gu = g_uv.x * fx;
    let gv = g_uv.y * fy;
    var gp = vec3<f32>(
        gu * (rho + x * x * a) + gv * x * y * a,
        gu * x * y * a + gv * (rho + y * y * a),
        -(gu * x + gv * y) * inv_s,
    );
    let ca = fx * g_j0.x;
    let cb = fx * g_j0.y + fy * g_j1.x;
    let cc = fy * g_j1.y;
    let cd = fx * g_j0.z;
    let ce = fy * g_j1.z;
    let quad = ca * x * x + cb * x * y + cc * y * y;
    let lin = cd * x + ce * y;
    let inv_s2 = inv_s * inv_s;
    gp.x += (ca + cc) * x * a + a * (2.0 * ca * x + cb * y) + quad * x * b - cd * inv_s + lin * 2.0 * x * inv_s2;
    gp.y += (ca + cc) * y * a + a * (cb * x + 2.0 * cc * y) + quad * y * b - ce * inv_s + lin * 2.0 * y * inv_s2;
    gp.z += -(ca + cc) * inv_s + quad * 2.0 * inv_s2 + lin * 2.0 * p.z * inv_s2;
    return gp;
}

// The most SH coefficients a colour channel has (degree 3) and stored floats past the DC term. Loops
// over coefficients run to these constants with a guard on the camera's counts, not to the counts
// themselves: with constant bounds the compiler unrolls them and every index into a private array
// (`sh_basis`'s, the gradients') is a constant, so those arrays stay in registers instead of being
// indexed memory (on lavapipe the check and the fused Adam took 2x as long).
const SH_COEFFS_MAX: u32 = 16u;
const SH_REST_MAX: u32 = 45u;
const SH_C0: f32 = 0.28209479177387814;
const SH_C1: f32 = 0.4886025119029199;
const SH_C2 = array<f32, 5>(1.0925484305920792, -1.0925484305920792, 0.31539156525252005, -1.0925484305920792, 0.5462742152960396);
const SH_C3 = array<f32, 7>(-0.5900435899266435, 2.890611442640554, -0.4570457994644658, 0.3731763325901154, -0.4570457994644658, 1.445305721320277, -0.5900435899266435);

fn dot3(a: vec3<f32>, b: vec3<f32>) -> f32 {
    return (a.x * b.x + a.y * b.y) + a.z * b.z;
}

// The first `coeffs` real SH basis functions at unit direction `d` (as `splat_core::sh::basis`); the
// rest are zero.
fn sh_basis(d: vec3<f32>, coeffs: u32) -> array<f32, 16> {
    var b: array<f32, 16>;
    b[0] = SH_C0;
    if coeffs > 1u {
        b[1] = -SH_C1 * d.y;
        b[2] = SH_C1 * d.z;
        b[3] = -SH_C1 * d.x;
    }
    let xx = d.x * d.x;
    let yy = d.y * d.y;
    let zz = d.z * d.z;
    if coeffs > 4u {
        b[4] = SH_C2[0] * (d.x * d.y);
        b[5] = SH_C2[1] * (d.y * d.z);
        b[6] = SH_C2[2] * (2.0 * zz - xx - yy);
        b[7] = SH_C2[3] * (d.x * d.z);
        b[8] = SH_C2[4] * (xx - yy);
    }
    if coeffs > 9u {
        b[9] = SH_C3[0] * d.y * (3.0 * xx - yy);
        b[10] = SH_C3[1] * (d.x * d.y) * d.z;
        b[11] = SH_C3[2] * d.y * (4.0 * zz - xx - yy);
        b[12] = SH_C3[3] * d.z * (2.0 * zz - 3.0 * xx - 3.0 * yy);
        b[13] = SH_C3[4] * d.x * (4.0 * zz - xx - yy);
        b[14] = SH_C3[5] * d.z * (xx - yy);
        b[15] = SH_C3[6] * d.x * (xx - 3.0 * yy);
    }
    return b;
}
