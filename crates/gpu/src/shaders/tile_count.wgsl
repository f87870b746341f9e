// Tile intersections: `count` writes how many tiles of each Gaussian's rectangle its ellipse reaches (0
// when invisible); after the prefix sum of those counts, `emit` writes one (tile, depth, id) entry per
// intersection at the Gaussian's offset, in id order, so a stable sort by (tile, depth) breaks ties by id
// as the reference does. Both walk the tiles through `reaches`, the twin of `splat_core::Footprint` (the
// same f32 operations): the exact, conservative ellipse-against-tile test.

struct Params {
    // Gaussians, tiles_x, the blending rule's alpha_min (f32 bits; 0: every tile of a rect), capacity of
    // the list (0: sized for the count).
    n: u32,
    tiles_x: u32,
    alpha_min: u32,
    capacity: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> radii: array<u32>;
@group(0) @binding(2) var<storage, read> rects: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> depths: array<f32>;
@group(0) @binding(4) var<storage, read_write> counts: array<u32>;
@group(0) @binding(5) var<storage, read_write> key_tile: array<u32>;
@group(0) @binding(6) var<storage, read_write> key_depth: array<u32>;
@group(0) @binding(7) var<storage, read_write> ids: array<u32>;
@group(0) @binding(8) var<storage, read> means2d: array<f32>;
@group(0) @binding(9) var<storage, read> conics: array<f32>;
@group(0) @binding(10) var<storage, read> opacities: array<f32>;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

struct Footprint {
    mean: vec2<f32>,
    // a, b, c of the conic.
    q: vec3<f32>,
    threshold: f32,
    // alpha_min = 0: every tile (Rust's infinite threshold).
    every: bool,
}

// `splat_core::footprint_threshold`: 2 ln(o / alpha_min) widened by 2% + 0.01.
fn footprint(i: u32) -> Footprint {
    var f: Footprint;
    f.mean = vec2<f32>(means2d[2u * i], means2d[2u * i + 1u]);
    f.q = vec3<f32>(conics[3u * i], conics[3u * i + 1u], conics[3u * i + 2u]);
    let alpha_min = bitcast<f32>(params.alpha_min);
    let o = opacities[i];
    f.every = !(alpha_min > 0.0);
    // Under alpha_min (the rect is empty then too): no tile.
    f.threshold = -1.0;
    if o >= alpha_min {
        f.threshold = 2.0 * log(o / alpha_min) * 1.02 + 0.01;
    }
    return f;
}

// The end of [lo, hi] nearest 0, or 0 when the span holds 0.
fn facing(lo: f32, hi: f32) -> f32 {
    if lo > 0.0 {
        return lo;
    }
    if hi < 0.0 {
        return hi;
    }
    return 0.0;
}

fn clamp_to(x: f32, lo: f32, hi: f32) -> f32 {
    if x < lo {
        return lo;
    }
    if x > hi {
        return hi;
    }
    return x;
}

fn quadratic(q: vec3<f32>, x: f32, y: f32) -> f32 {
    return q.x * x * x + q.z * y * y + 2.0 * q.y * x * y;
}

// `splat_core::Footprint::reaches`: the least power over the tile's pixel centres (on the sides facing the
// centre) against the threshold plus the rounding slack.
fn reaches(f: Footprint, tx: u32, ty: u32) -> bool {
    if f.every {
        return true;
    }
    if f.threshold < 0.0 {
        return false;
    }
    let x0 = (f32(tx) * 16.0 + 0.5) - f.mean.x;
    let x1 = (f32(tx) * 16.0 + 15.5) - f.mean.x;
    let y0 = (f32(ty) * 16.0 + 0.5) - f.mean.y;
    let y1 = (f32(ty) * 16.0 + 15.5) - f.mean.y;
    let ex = facing(x0, x1);
    let ey = facing(y0, y1);
    // At least one side is evaluated unless the tile holds the centre.
    var least = 0.0;
    if ex != 0.0 || ey != 0.0 {
        least = 3.4e38;
    }
    if ex != 0.0 {
        let y = clamp_to(-f.q.y * ex / f.q.z, y0, y1);
        least = min(least, quadratic(f.q, ex, y));
    }
    if ey != 0.0 {
        let x = clamp_to(-f.q.y * ey / f.q.x, x0, x1);
        least = min(least, quadratic(f.q, x, ey));
    }
    let far = sqrt(f.q.x) * max(abs(x0), abs(x1)) + sqrt(f.q.z) * max(abs(y0), abs(y1));
    return least <= f.threshold + 1e-5 * far * far;
}

@compute @workgroup_size(256)
fn count(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i >= params.n {
        return;
    }
    var c = 0u;
    if radii[i] > 0u {
        let r = rects[i];
        let f = footprint(i);
        for (var ty = r.y; ty < r.w; ty++) {
            for (var tx = r.x; tx < r.z; tx++) {
                c += select(0u, 1u, reaches(f, tx, ty));
            }
        }
    }
    counts[i] = c;
}

// `counts` holds the exclusive prefix sum here.
@compute @workgroup_size(256)
fn emit(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i >= params.n || radii[i] == 0u {
        return;
    }
    let r = rects[i];
    let f = footprint(i);
    var at = counts[i];
    // Positive depths order like their bit patterns.
    let d = bitcast<u32>(depths[i]);
    // A list sized by capacity takes what fits (an overflow halts the step, see `resident.wgsl`).
    var end = counts[i + 1u];
    if params.capacity != 0u {
        end = min(end, params.capacity);
    }
    for (var ty = r.y; ty < r.w && at < end; ty++) {
        for (var tx = r.x; tx < r.z && at < end; tx++) {
            if reaches(f, tx, ty) {
                key_tile[at] = ty * params.tiles_x + tx;
                key_depth[at] = d;
                ids[at] = i;
                at++;
            }
        }
    }
}
