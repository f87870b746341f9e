// The training loss (1 - lambda) L1 + lambda (1 - SSIM) and its gradient, as `splat_train::loss`: SSIM with
// an 11-tap Gaussian window (sigma 1.5) as two separable passes with zero padding, per channel, C1 = 0.01^2,
// C2 = 0.03^2. Planes are channel-planar, plane q = quantity * 3 + channel, each h x w.
// Passes (five): `products_h` (the products x, y, x^2, y^2, xy made on the fly and blurred along rows,
// one channel's five per invocation),
// `ssim_map_v` (the products blurred along columns at each pixel, then the SSIM map and its three
// coefficients), `row_sums` (of the map and of |x - y|, for the loss value; a workgroup a row), `blur_h`
// of the coefficients (one channel's three per invocation), then `grad_v` (the coefficients blurred along columns at each pixel, then the gradient).
// Each fused pass computes exactly what the separate passes computed, in the same order: the same bits
// with fewer passes and no product or blurred planes in memory.

struct Params {
    // width, height, planes in this pass, first plane of `src` (`blur_h`).
    dims: vec4<u32>,
    // taps 0..3, 4..7, 8..10 (+ unused).
    t0: vec4<f32>,
    t1: vec4<f32>,
    t2: vec4<f32>,
    // l1 weight / n, ssim scale (-lambda / n), C1, C2.
    k: vec4<f32>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> render: array<f32>;
@group(0) @binding(2) var<storage, read> target_img: array<f32>;
@group(0) @binding(3) var<storage, read> src: array<f32>;
@group(0) @binding(4) var<storage, read_write> dst: array<f32>;
// `ssim_map` writes the map (3 planes) and the coefficients (9 planes: g_mu, g_xx, g_xy x 3 channels).
@group(0) @binding(5) var<storage, read_write> map: array<f32>;
@group(0) @binding(6) var<storage, read_write> sums: array<f32>;
@group(0) @binding(7) var<storage, read_write> grad: array<f32>;

fn tap(k: u32) -> f32 {
    if k < 4u {
        return params.t0[k];
    }
    if k < 8u {
        return params.t1[k - 4u];
    }
    return params.t2[k - 8u];
}

// The 15 product planes blurred along rows into `dst`: invocation z makes channel z's five (x, y, x^2,
// y^2, xy; plane quantity * 3 + z) from one read of each tap's pixel.
@compute @workgroup_size(16, 16)
fn products_h(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = params.dims.x;
    let h = params.dims.y;
    if gid.x >= w || gid.y >= h {
        return;
    }
    let c = gid.z;
    let row = gid.y * w;
    var acc = array<f32, 5>(0.0, 0.0, 0.0, 0.0, 0.0);
    for (var k = 0u; k < 11u; k++) {
        let sx = i32(gid.x) + i32(k) - 5;
        if sx >= 0 && sx < i32(w) {
            let t = tap(k);
            let i = 3u * (row + u32(sx)) + c;
            let u = render[i];
            let v = target_img[i];
            acc[0] += t * u;
            acc[1] += t * v;
            acc[2] += t * (u * u);
            acc[3] += t * (v * v);
            acc[4] += t * (u * v);
        }
    }
    for (var q = 0u; q < 5u; q++) {
        dst[(q * 3u + c) * w * h + row + gid.x] = acc[q];
    }
}

// Planes `dims.w ..` of `src` blurred along rows into `dst` (from plane 0): invocation z the three planes
// 3 q + z (q = 0, 1, 2: channel z's coefficients).
@compute @workgroup_size(16, 16)
fn blur_h(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = params.dims.x;
    let h = params.dims.y;
    if gid.x >= w || gid.y >= h {
        return;
    }
    let plane = w * h;
    let row = gid.y * w;
    var acc = vec3<f32>(0.0);
    for (var k = 0u; k < 11u; k++) {
        let sx = i32(gid.x) + i32(k) - 5;
        if sx >= 0 && sx < i32(w) {
            let t = tap(k);
            let at = (params.dims.w + gid.z) * plane + row + u32(sx);
            acc.x += t * src[at];
            acc.y += t * src[at + 3u * plane];
            acc.z += t * src[at + 6u * plane];
        }
    }
    dst[gid.z * plane + row + gid.x] = acc.x;
    dst[(3u + gid.z) * plane + row + gid.x] = acc.y;
    dst[(6u + gid.z) * plane + row + gid.x] = acc.z;
}

// Plane `plane` of `src` blurred along columns at pixel (x, y).
fn blur_v_at(plane: u32, x: u32, y: u32) -> f32 {
    let w = params.dims.x;
    let h = params.dims.y;
    let base = plane * w * h;
    var acc = 0.0;
    for (var k = 0u; k < 11u; k++) {
        let sy = i32(y) + i32(k) - 5;
        if sy >= 0 && sy < i32(h) {
            acc += tap(k) * src[base + u32(sy) * w + x];
        }
    }
    return acc;
}

// src: the products blurred along rows (15 planes), blurred along columns here. map: 3 map planes then 9
// coefficient planes.
@compute @workgroup_size(16, 16)
fn ssim_map_v(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = params.dims.x;
    let h = params.dims.y;
    if gid.x >= w || gid.y >= h {
        return;
    }
    let c = gid.z;
    let plane = w * h;
    let p = gid.y * w + gid.x;
    let mx = blur_v_at(0u * 3u + c, gid.x, gid.y);
    let my = blur_v_at(1u * 3u + c, gid.x, gid.y);
    let sxx = blur_v_at(2u * 3u + c, gid.x, gid.y) - mx * mx;
    let syy = blur_v_at(3u * 3u + c, gid.x, gid.y) - my * my;
    let sxy = blur_v_at(4u * 3u + c, gid.x, gid.y) - mx * my;
    let c1 = params.k.z;
    let c2 = params.k.w;
    let a1 = 2.0 * mx * my + c1;
    let a2 = 2.0 * sxy + c2;
    let b1 = mx * mx + my * my + c1;
    let b2 = sxx + syy + c2;
    let inv = 1.0 / (b1 * b2);
    let s = a1 * a2 * inv;
    let ds_dmx = 2.0 * my * a2 * inv - 2.0 * mx * s * (b2 * inv);
    let ds_dsxx = -s * (b1 * inv);
    let ds_dsxy = 2.0 * a1 * inv;
    map[c * plane + p] = s;
    map[(3u + 0u * 3u + c) * plane + p] = ds_dmx - 2.0 * mx * ds_dsxx - my * ds_dsxy;
    map[(3u + 1u * 3u + c) * plane + p] = ds_dsxx;
    map[(3u + 2u * 3u + c) * plane + p] = ds_dsxy;
}

// A workgroup per row: the row's SSIM map over the channels (sums[y]), its |x - y| (sums[h + y]) and its
// squared error with the render clamped to [0, 1] (sums[2h + y], for the PSNR). Each invocation adds
// every 64th pixel, then a fixed tree adds the 64 partials: the same bits every run.
var<workgroup> row_part: array<vec3<f32>, 64>;

@compute @workgroup_size(64)
fn row_sums(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let w = params.dims.x;
    let h = params.dims.y;
    // Rows past the first dispatch dimension's limit continue along y.
    let y = wid.y * nwg.x + wid.x;
    if y >= h {
        return;
    }
    let plane = w * h;
    var acc = vec3<f32>(0.0);
    for (var x = li; x < w; x += 64u) {
        let p = y * w + x;
        for (var c = 0u; c < 3u; c++) {
            acc.x += map[c * plane + p];
            let i = 3u * p + c;
            acc.y += abs(render[i] - target_img[i]);
            let d = clamp(render[i], 0.0, 1.0) - target_img[i];
            acc.z += d * d;
        }
    }
    row_part[li] = acc;
    for (var half = 32u; half > 0u; half /= 2u) {
        workgroupBarrier();
        if li < half {
            row_part[li] += row_part[li + half];
        }
    }
    if li == 0u {
        sums[y] = row_part[0].x;
        sums[h + y] = row_part[0].y;
        sums[2u * h + y] = row_part[0].z;
    }
}

// src: the coefficients blurred along rows (9 planes), blurred along columns here.
@compute @workgroup_size(16, 16)
fn grad_v(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = params.dims.x;
    let h = params.dims.y;
    if gid.x >= w || gid.y >= h {
        return;
    }
    let c = gid.z;
    let p = gid.y * w + gid.x;
    let i = 3u * p + c;
    let u = render[i];
    let v = target_img[i];
    let d = u - v;
    var s = 0.0;
    if d > 0.0 {
        s = 1.0;
    } else if d < 0.0 {
        s = -1.0;
    }
    let g_mu = blur_v_at(0u * 3u + c, gid.x, gid.y);
    let g_xx = blur_v_at(1u * 3u + c, gid.x, gid.y);
    let g_xy = blur_v_at(2u * 3u + c, gid.x, gid.y);
    let ssim_d = g_mu + 2.0 * u * g_xx + v * g_xy;
    grad[i] = params.k.x * s + params.k.y * ssim_d;
}
