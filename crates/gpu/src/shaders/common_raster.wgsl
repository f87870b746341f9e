// Shared by the rasterize stages (prepended by `shaders.rs`): the parameter block and the inputs both read,
// the projected Gaussians and the tile lists.

struct Params {
    // width, height, tiles_x, Gaussian count (the backward's gather).
    dims: vec4<u32>,
    // Background colour (rgb).
    bg: vec4<f32>,
    // alpha_min, alpha_max, transmittance_min, unused.
    cut: vec4<f32>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> ranges: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> ids: array<u32>;
@group(0) @binding(3) var<storage, read> means2d: array<f32>;
@group(0) @binding(4) var<storage, read> conics: array<f32>;
@group(0) @binding(5) var<storage, read> opacities: array<f32>;
@group(0) @binding(6) var<storage, read> colors: array<f32>;
