// Rasterize backward, a Gaussian per invocation (the `tiles` entry point; the file composed after this one
// defines `store_sum`, the last one `mean_term`).
//
// A workgroup per tile. The tile's list is walked back to front (as the reference walks each pixel's list)
// in batches of WAVE entries, one entry per invocation: invocation j owns the batch's j-th entry from the
// back, computes its gradient contributions at each of the tile's 256 pixels and sums them in registers
// in pixel order, then hands the 9 sums of its (tile, Gaussian) intersection to `store_sum(entry, value
// index, sum)`: grad mean2d (2), conic (3), colour (3), opacity (1). No reduction across invocations.
//
// What a pixel's gradient needs from the entries behind it (its transmittance at the entry and the colour
// blended behind) lives in workgroup memory, one slot per pixel, and passes from entry to entry as a
// wavefront: at step s invocation j works on pixel chunk s - j (CHUNK pixels, in order), the chunk
// invocation j - 1 finished at step s - 1, with a barrier between steps. So every pixel sees the entries
// in list order and every sum runs over the pixels in order 0..255: the same bits whatever WAVE, CHUNK or
// the device's subgroup size (the overrides only trade barriers against idle invocations).
//
// `store_sum` is either `rasterize_bwd_records.wgsl` (the default, deterministic: a record per
// intersection, then `gather` sums each Gaussian's records in tile order) or `rasterize_bwd_atomic.wgsl`
// (compare-and-swap float adds; the order of the adds varies from run to run). `mean_term` is applied to
// each pixel's 2D-mean gradient before the sum: the identity (`rasterize_bwd_plain.wgsl`) or `abs`
// (`rasterize_bwd_abs.wgsl`, AbsGS's statistic, in value slots 0 and 1 of a second records pass).

// `Params` and bindings 0-6 come from `common_raster.wgsl`.
@group(0) @binding(7) var<storage, read> final_t: array<f32>;
@group(0) @binding(8) var<storage, read> n_contrib: array<u32>;
@group(0) @binding(9) var<storage, read> grad_image: array<f32>;

// Entries per batch (the workgroup size) and pixels per wavefront step (divides 256).
override WAVE: u32 = 32u;
override CHUNK: u32 = 1u;

// Per pixel: the colour blended behind the current entry (xyz) and the transmittance in front of it (w);
// the image gradient's bits (xyz) and the contributor count (w), one word array read once per entry and
// pixel (a count's bits held as a float would be a denormal, which a device may flush to zero; a float's
// bits held as a u32 are kept).
var<workgroup> px_state: array<vec4<f32>, 256>;
var<workgroup> px_input: array<vec4<u32>, 256>;
var<workgroup> max_n: atomic<u32>;

// The projected Gaussian an invocation owns.
struct Splat {
    mean: vec2<f32>,
    conic: vec4<f32>,
    color: vec3<f32>,
}

fn load_splat(id: u32) -> Splat {
    return Splat(
        vec2<f32>(means2d[2u * id], means2d[2u * id + 1u]),
        vec4<f32>(conics[3u * id], conics[3u * id + 1u], conics[3u * id + 2u], opacities[id]),
        vec3<f32>(colors[3u * id], colors[3u * id + 1u], colors[3u * id + 2u]),
    );
}

// Loads the tile's per-pixel state (pixels outside the image count no contributors) and returns the
// largest contributor count: entries at or past it were blended nowhere, their sums stay zero.
fn load_pixels(wid: vec3<u32>, li: u32) -> u32 {
    if li == 0u {
        atomicStore(&max_n, 0u);
    }
    workgroupBarrier();
    var most = 0u;
    for (var q = li; q < 256u; q += WAVE) {
        let px = wid.x * 16u + q % 16u;
        let py = wid.y * 16u + q / 16u;
        var n = 0u;
        var t = 0.0;
        var g = vec3<f32>(0.0);
        if px < params.dims.x && py < params.dims.y {
            let p = py * params.dims.x + px;
            n = n_contrib[p];
            t = final_t[p];
            g = vec3<f32>(grad_image[3u * p], grad_image[3u * p + 1u], grad_image[3u * p + 2u]);
        }
        px_state[q] = vec4<f32>(params.bg.xyz * t, t);
        px_input[q] = vec4<u32>(bitcast<vec3<u32>>(g), n);
        most = max(most, n);
    }
    atomicMax(&max_n, most);
    return workgroupUniformLoad(&max_n);
}

// Entry `k` (Gaussian `s`) at pixel `q` of the tile at `origin`: updates the pixel's state when the entry
// was blended there and adds its contributions to `acc`.
fn pixel(s: Splat, k: u32, q: u32, origin: vec2<u32>, acc: ptr<function, array<f32, 9>>) {
    let input = px_input[q];
    if k >= input.w {
        return;
    }
    let gp = bitcast<vec3<f32>>(input.xyz);
    let pix = vec2<f32>(f32(origin.x + q % 16u) + 0.5, f32(origin.y + q / 16u) + 0.5);
    let d = s.mean - pix;
    let c = s.conic;
    let power = -0.5 * (c.x * d.x * d.x + c.z * d.y * d.y) - c.y * d.x * d.y;
    let g = exp(power);
    let alpha_raw = c.w * g;
    let alpha = min(alpha_raw, params.cut.y);
    if power > 0.0 || alpha < params.cut.x {
        return;
    }
    var st = px_state[q];
    let one_minus = 1.0 - alpha;
    let t_i = st.w / one_minus;
    var grad_alpha = 0.0;
    for (var ch = 0u; ch < 3u; ch++) {
        (*acc)[5u + ch] += alpha * t_i * gp[ch];
        grad_alpha += gp[ch] * (s.color[ch] * t_i - st[ch] / one_minus);
        st[ch] += s.color[ch] * alpha * t_i;
    }
    st.w = t_i;
    px_state[q] = st;
    if alpha_raw <= params.cut.y {
        (*acc)[8] += grad_alpha * g;
        let grad_power = grad_alpha * c.w * g;
        (*acc)[0] += mean_term(grad_power * (-c.x * d.x - c.y * d.y));
        (*acc)[1] += mean_term(grad_power * (-c.z * d.y - c.y * d.x));
        (*acc)[2] += grad_power * -0.5 * d.x * d.x;
        (*acc)[3] += -(grad_power * d.x * d.y);
        (*acc)[4] += grad_power * -0.5 * d.y * d.y;
    }
}

@compute @workgroup_size(WAVE)
fn tiles(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let range = ranges[wid.y * params.dims.z + wid.x];
    let origin = vec2<u32>(wid.x * 16u, wid.y * 16u);
    var end = load_pixels(wid, li);
    let chunks = 256u / CHUNK;
    while end > 0u {
        let start = select(0u, end - WAVE, end > WAVE);
        let count = end - start;
        let mine = li < count;
        // This invocation's entry: the li-th of the batch from the back.
        let k = end - 1u - min(li, count - 1u);
        let s = load_splat(ids[range.x + k]);
        var acc = array<f32, 9>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        // The previous batch's last step (or `load_pixels`) ended at a barrier.
        for (var step = 0u; step < chunks + count - 1u; step++) {
            if mine && step >= li && step - li < chunks {
                let first = (step - li) * CHUNK;
                for (var q = first; q < first + CHUNK; q++) {
                    pixel(s, k, q, origin, &acc);
                }
            }
            workgroupBarrier();
        }
        if mine {
            for (var c = 0u; c < 9u; c++) {
                store_sum(range.x + k, c, acc[c]);
            }
        }
        end = start;
    }
}
