// Rasterize backward, the per-tile walk shared by both ways of summing per Gaussian (the file composed
// after this one defines `store_sum`):
// - `tiles`: a workgroup per tile walks the tile's list back to front (as the reference walks each pixel's
//   list), each invocation computes its pixel's gradient contributions to the current Gaussian, and the
//   workgroup sums them (in a fixed order) into 9 values per (tile, Gaussian) intersection: grad mean2d
//   (2), conic (3), colour (3), opacity (1), handed to `store_sum(entry, value index, sum)`.
// - `rasterize_bwd_records.wgsl` (the default, deterministic): a record per intersection, then `gather`
//   sums each Gaussian's records in tile order.
// - `rasterize_bwd_atomic.wgsl`: compare-and-swap float adds into the Gaussian's gradient (WGSL has no
//   float atomics); the order of the adds, hence the rounding, varies from run to run.
// The last file composed defines `mean_term`, applied to each pixel's 2D-mean gradient before the sum:
// the identity (`rasterize_bwd_plain.wgsl`), or `abs` (`rasterize_bwd_abs.wgsl`: AbsGS's statistic, in
// value slots 0 and 1 of a second records pass; the other slots are then unused).
// The file composed first after this one holds the `tiles` entry point and `reduce_store`, the sum of
// the 9 values over the tile's pixels: in workgroup memory (`rasterize_bwd_sums_shared.wgsl`, every
// adapter) or per subgroup first (`rasterize_bwd_sums_subgroup.wgsl`, where the adapter has subgroups).

// `Params` and bindings 0-6 come from `common_raster.wgsl`.
@group(0) @binding(7) var<storage, read> final_t: array<f32>;
@group(0) @binding(8) var<storage, read> n_contrib: array<u32>;
@group(0) @binding(9) var<storage, read> grad_image: array<f32>;

const BATCH: u32 = 64u;

var<workgroup> s_mean: array<vec2<f32>, 64>;
var<workgroup> s_conic: array<vec4<f32>, 64>;
var<workgroup> s_color: array<vec3<f32>, 64>;
var<workgroup> max_n: atomic<u32>;

// Where an invocation sits in its subgroup (zeros without subgroups).
struct Lane {
    subgroup: u32,
    index: u32,
    subgroups: u32,
}

// The walk of one tile by its 16 x 16 workgroup (`tiles` calls it).
fn walk_tile(wid: vec3<u32>, lid: vec3<u32>, li: u32, lane: Lane) {
    let tile = wid.y * params.dims.z + wid.x;
    let px = wid.x * 16u + lid.x;
    let py = wid.y * 16u + lid.y;
    let inside = px < params.dims.x && py < params.dims.y;
    let pix = vec2<f32>(f32(px) + 0.5, f32(py) + 0.5);
    let range = ranges[tile];
    var n = 0u;
    var t = 0.0;
    var g_pix = vec3<f32>(0.0);
    if inside {
        let p = py * params.dims.x + px;
        n = n_contrib[p];
        t = final_t[p];
        g_pix = vec3<f32>(grad_image[3u * p], grad_image[3u * p + 1u], grad_image[3u * p + 2u]);
    }
    var behind = params.bg.xyz * t;
    if li == 0u {
        atomicStore(&max_n, 0u);
    }
    workgroupBarrier();
    atomicMax(&max_n, n);
    // Entries at or past every pixel's count were blended nowhere: their records stay zero.
    var end = workgroupUniformLoad(&max_n);
    while end > 0u {
        let start = select(0u, end - BATCH, end > BATCH);
        let k = start + li;
        if li < BATCH && k < end {
            let id = ids[range.x + k];
            s_mean[li] = vec2<f32>(means2d[2u * id], means2d[2u * id + 1u]);
            s_conic[li] = vec4<f32>(conics[3u * id], conics[3u * id + 1u], conics[3u * id + 2u], opacities[id]);
            s_color[li] = vec3<f32>(colors[3u * id], colors[3u * id + 1u], colors[3u * id + 2u]);
        }
        workgroupBarrier();
        for (var pos = end; pos > start; pos--) {
            let j = pos - 1u - start;
            var v = array<f32, 9>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
            if pos - 1u < n {
                let d = s_mean[j] - pix;
                let q = s_conic[j];
                let power = -0.5 * (q.x * d.x * d.x + q.z * d.y * d.y) - q.y * d.x * d.y;
                let g = exp(power);
                let alpha_raw = q.w * g;
                let alpha = min(alpha_raw, params.cut.y);
                if power <= 0.0 && alpha >= params.cut.x {
                    let one_minus = 1.0 - alpha;
                    let t_i = t / one_minus;
                    let c = s_color[j];
                    var grad_alpha = 0.0;
                    for (var ch = 0u; ch < 3u; ch++) {
                        v[5u + ch] = alpha * t_i * g_pix[ch];
                        grad_alpha += g_pix[ch] * (c[ch] * t_i - behind[ch] / one_minus);
                        behind[ch] += c[ch] * alpha * t_i;
                    }
                    t = t_i;
                    if alpha_raw <= params.cut.y {
                        v[8] = grad_alpha * g;
                        let grad_power = grad_alpha * q.w * g;
                        v[0] = mean_term(grad_power * (-q.x * d.x - q.y * d.y));
                        v[1] = mean_term(grad_power * (-q.z * d.y - q.y * d.x));
                        v[2] = grad_power * -0.5 * d.x * d.x;
                        v[3] = -(grad_power * d.x * d.y);
                        v[4] = grad_power * -0.5 * d.y * d.y;
                    }
                }
            }
            reduce_store(range.x + pos - 1u, li, v, lane);
        }
        end = start;
    }
}
