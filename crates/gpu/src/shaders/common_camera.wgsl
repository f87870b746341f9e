// Shared by the per-Gaussian stages (prepended by `shaders.rs`): the camera block, the SH constants and a
// dot product summed left to right as the reference's loops do.

struct Camera {
    // Rows of the world-to-camera rotation, translation in w.
    r0: vec4<f32>,
    r1: vec4<f32>,
    r2: vec4<f32>,
    // Camera centre in world space (xyz).
    center: vec4<f32>,
    // fx, fy, cx, cy.
    intr: vec4<f32>,
    // x/z and y/z clamp limits, near plane, dilation.
    lim: vec4<f32>,
    // width, height, tiles_x, tiles_y.
    dims: vec4<u32>,
    // Gaussians in this dispatch (a chunk binds its sub-ranges), active SH coefficients, stored sh_rest floats
    // per Gaussian, unused.
    counts: vec4<u32>,
}

const SH_C0: f32 = 0.28209479177387814;
const SH_C1: f32 = 0.4886025119029199;
const SH_C2 = array<f32, 5>(1.0925484305920792, -1.0925484305920792, 0.31539156525252005, -1.0925484305920792, 0.5462742152960396);
const SH_C3 = array<f32, 7>(-0.5900435899266435, 2.890611442640554, -0.4570457994644658, 0.3731763325901154, -0.4570457994644658, 1.445305721320277, -0.5900435899266435);

fn dot3(a: vec3<f32>, b: vec3<f32>) -> f32 {
    return (a.x * b.x + a.y * b.y) + a.z * b.z;
}
