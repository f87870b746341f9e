// Rasterize forward: one workgroup per 16 x 16 tile, one invocation per pixel. The tile's list is read in
// batches of 256 Gaussians staged in workgroup memory; each pixel blends front to back exactly as the
// reference (`splat_render::rasterize_fwd`) does, and the workgroup stops early once every pixel is done.

// `Params` and bindings 0-6 come from `common_raster.wgsl`.
@group(0) @binding(7) var<storage, read_write> image: array<f32>;
@group(0) @binding(8) var<storage, read_write> final_t: array<f32>;
@group(0) @binding(9) var<storage, read_write> n_contrib: array<u32>;

var<workgroup> s_mean: array<vec2<f32>, 256>;
// conic (a, b, c) and opacity.
var<workgroup> s_conic: array<vec4<f32>, 256>;
var<workgroup> s_color: array<vec3<f32>, 256>;
var<workgroup> finished: atomic<u32>;

@compute @workgroup_size(16, 16)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let tile = wid.y * params.dims.z + wid.x;
    let px = wid.x * 16u + lid.x;
    let py = wid.y * 16u + lid.y;
    let inside = px < params.dims.x && py < params.dims.y;
    let pix = vec2<f32>(f32(px) + 0.5, f32(py) + 0.5);
    let range = ranges[tile];
    var t = 1.0;
    var rgb = vec3<f32>(0.0);
    var last = 0u;
    var done = !inside;
    for (var base = range.x; base < range.y; base += 256u) {
        // Stop when every pixel of the tile is done (a uniform decision, so barriers stay legal).
        if li == 0u {
            atomicStore(&finished, 0u);
        }
        workgroupBarrier();
        if done {
            atomicAdd(&finished, 1u);
        }
        if workgroupUniformLoad(&finished) == 256u {
            break;
        }
        let k = base + li;
        if k < range.y {
            let id = ids[k];
            s_mean[li] = vec2<f32>(means2d[2u * id], means2d[2u * id + 1u]);
            s_conic[li] = vec4<f32>(conics[3u * id], conics[3u * id + 1u], conics[3u * id + 2u], opacities[id]);
            s_color[li] = vec3<f32>(colors[3u * id], colors[3u * id + 1u], colors[3u * id + 2u]);
        }
        workgroupBarrier();
        let count = min(256u, range.y - base);
        if !done {
            for (var j = 0u; j < count; j++) {
                let d = s_mean[j] - pix;
                let q = s_conic[j];
                let power = -0.5 * (q.x * d.x * d.x + q.z * d.y * d.y) - q.y * d.x * d.y;
                if power > 0.0 {
                    continue;
                }
                let alpha = min(q.w * exp(power), params.cut.y);
                if alpha < params.cut.x {
                    continue;
                }
                let next_t = t * (1.0 - alpha);
                if next_t < params.cut.z {
                    done = true;
                    break;
                }
                rgb += s_color[j] * alpha * t;
                t = next_t;
                last = base + j - range.x + 1u;
            }
        }
        workgroupBarrier();
    }
    if inside {
        let p = py * params.dims.x + px;
        let c = rgb + t * params.bg.xyz;
        image[3u * p] = c.x;
        image[3u * p + 1u] = c.y;
        image[3u * p + 2u] = c.z;
        final_t[p] = t;
        n_contrib[p] = last;
    }
}
