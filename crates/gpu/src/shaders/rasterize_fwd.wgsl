// Rasterize forward: one workgroup per 16 x 16 tile, PIXELS pixels per invocation (pixels q, q + GROUP,
// ... of the tile for invocation q). The tile's list is read in batches of 256 Gaussians staged in
// workgroup memory; each pixel blends front to back exactly as the reference
// (`splat_render::rasterize_fwd`) does, and the workgroup stops early once every pixel is done.
//
// PIXELS changes no bit (each pixel's arithmetic and order are the same), only how often a staged
// Gaussian is read: once per pixel at 1, once per PIXELS pixels otherwise. A real GPU reads workgroup
// memory at register speed and wants many invocations (1); a CPU device (lavapipe) reads it lane by lane
// in a loop, so it takes 4 (`GpuRasterize::forward_pixels_for`).

// `Params` and bindings 0-6 come from `common_raster.wgsl`.
@group(0) @binding(7) var<storage, read_write> image: array<f32>;
@group(0) @binding(8) var<storage, read_write> final_t: array<f32>;
@group(0) @binding(9) var<storage, read_write> n_contrib: array<u32>;

// Pixels per invocation: 1, 2 or 4.
override PIXELS: u32 = 1u;
override GROUP: u32 = 256u / PIXELS;

var<workgroup> s_mean: array<vec2<f32>, 256>;
// conic (a, b, c) and opacity.
var<workgroup> s_conic: array<vec4<f32>, 256>;
var<workgroup> s_color: array<vec3<f32>, 256>;
var<workgroup> finished: atomic<u32>;

// One pixel's blend so far.
struct Pixel {
    pix: vec2<f32>,
    rgb: vec3<f32>,
    t: f32,
    // Entries up to the last one blended (the backward's contributor count).
    last: u32,
    done: bool,
}

fn start_pixel(wid: vec3<u32>, q: u32) -> Pixel {
    let px = wid.x * 16u + q % 16u;
    let py = wid.y * 16u + q / 16u;
    let inside = px < params.dims.x && py < params.dims.y;
    return Pixel(vec2<f32>(f32(px) + 0.5, f32(py) + 0.5), vec3<f32>(0.0), 1.0, 0u, !inside);
}

// Blends staged entry `j`, the `n`-th of the tile's list counting from 1.
fn blend(p: ptr<function, Pixel>, mean: vec2<f32>, q: vec4<f32>, color: vec3<f32>, n: u32) {
    if (*p).done {
        return;
    }
    let d = mean - (*p).pix;
    let power = -0.5 * (q.x * d.x * d.x + q.z * d.y * d.y) - q.y * d.x * d.y;
    if power > 0.0 {
        return;
    }
    let alpha = min(q.w * exp(power), params.cut.y);
    if alpha < params.cut.x {
        return;
    }
    let t = (*p).t;
    let next_t = t * (1.0 - alpha);
    if next_t < params.cut.z {
        (*p).done = true;
        return;
    }
    (*p).rgb += color * alpha * t;
    (*p).t = next_t;
    (*p).last = n;
}

fn write_pixel(wid: vec3<u32>, q: u32, p: Pixel) {
    let px = wid.x * 16u + q % 16u;
    let py = wid.y * 16u + q / 16u;
    if px < params.dims.x && py < params.dims.y {
        let i = py * params.dims.x + px;
        let c = p.rgb + p.t * params.bg.xyz;
        image[3u * i] = c.x;
        image[3u * i + 1u] = c.y;
        image[3u * i + 2u] = c.z;
        final_t[i] = p.t;
        n_contrib[i] = p.last;
    }
}

@compute @workgroup_size(GROUP)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let tile = wid.y * params.dims.z + wid.x;
    let range = ranges[tile];
    // Slots past PIXELS start done and stay so.
    var p0 = start_pixel(wid, li);
    var p1 = start_pixel(wid, li + GROUP);
    var p2 = start_pixel(wid, li + 2u * GROUP);
    var p3 = start_pixel(wid, li + 3u * GROUP);
    p1.done = p1.done || PIXELS < 2u;
    p2.done = p2.done || PIXELS < 4u;
    p3.done = p3.done || PIXELS < 4u;
    for (var base = range.x; base < range.y; base += 256u) {
        // Stop when every pixel of the tile is done (a uniform decision, so barriers stay legal).
        if li == 0u {
            atomicStore(&finished, 0u);
        }
        workgroupBarrier();
        if p0.done && p1.done && p2.done && p3.done {
            atomicAdd(&finished, 1u);
        }
        if workgroupUniformLoad(&finished) == GROUP {
            break;
        }
        for (var s = li; s < 256u; s += GROUP) {
            let k = base + s;
            if k < range.y {
                let id = ids[k];
                s_mean[s] = vec2<f32>(means2d[2u * id], means2d[2u * id + 1u]);
                s_conic[s] = vec4<f32>(conics[3u * id], conics[3u * id + 1u], conics[3u * id + 2u], opacities[id]);
                s_color[s] = vec3<f32>(colors[3u * id], colors[3u * id + 1u], colors[3u * id + 2u]);
            }
        }
        workgroupBarrier();
        let count = min(256u, range.y - base);
        for (var j = 0u; j < count; j++) {
            if p0.done && p1.done && p2.done && p3.done {
                break;
            }
            let mean = s_mean[j];
            let q = s_conic[j];
            let color = s_color[j];
            let n = base + j - range.x + 1u;
            blend(&p0, mean, q, color, n);
            if PIXELS >= 2u {
                blend(&p1, mean, q, color, n);
            }
            if PIXELS >= 4u {
                blend(&p2, mean, q, color, n);
                blend(&p3, mean, q, color, n);
            }
        }
        workgroupBarrier();
    }
    write_pixel(wid, li, p0);
    if PIXELS >= 2u {
        write_pixel(wid, li + GROUP, p1);
    }
    if PIXELS >= 4u {
        write_pixel(wid, li + 2u * GROUP, p2);
        write_pixel(wid, li + 3u * GROUP, p3);
    }
}
