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
    // x/z and y/z clamp limits, near plane, dilation.
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
