// The resident trainer's per-step bookkeeping (see `resident.rs`): drawing the step's view, the camera
// blocks and target image of that view, the capacity check of the intersection list, and the step
// status that halts a block without changing anything (the gradients are checked by `project_bwd.wgsl`).
//
// status: [0] the step (1-based within the submission) that halted it, 0 while running; [1] why: 1 the
// intersection list overflowed its capacity, 2 a loss or gradient was not finite; [2] the view of the
// current step; [3] the intersections needed (overflow); [4] set when a non-finite value is seen; [5] the
// most intersections of any step so far (the host shrinks a list much larger than that).

struct Params {
    // step within the submission, list capacity, Gaussians, training views.
    a: vec4<u32>,
    // seed word (`splat_train::random::seed_word`), unused, draw index of the step, tiles.
    b: vec4<u32>,
    // camera blocks to write, 16-byte words between blocks, pixels per image, unused.
    c: vec4<u32>,
    // unused, active SH coefficients of the step, views per image part, unused.
    d: vec4<u32>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> status: array<atomic<u32>>;
// 8 words of 16 bytes per view: the camera block with zero counts.
@group(0) @binding(2) var<storage, read> cameras: array<vec4<u32>>;
// Per camera block to write, its counts word (the active SH coefficients come from the parameters).
@group(0) @binding(3) var<storage, read> block_counts: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> blocks: array<vec4<u32>>;
// The training images, RGB8 packed in one u32 per pixel, in up to four parts of d.z views (bindings 5,
// 13, 14, 15), and their value table (v / 255 as the host computes it, so the targets are bitwise the
// host's).
@group(0) @binding(5) var<storage, read> images: array<u32>;
@group(0) @binding(6) var<storage, read> lut: array<f32>;
@group(0) @binding(7) var<storage, read_write> target_img: array<f32>;
@group(0) @binding(8) var<storage, read> counts: array<u32>;
@group(0) @binding(9) var<storage, read_write> key_tile: array<u32>;
@group(0) @binding(10) var<storage, read_write> key_depth: array<u32>;
@group(0) @binding(13) var<storage, read> images_1: array<u32>;
@group(0) @binding(14) var<storage, read> images_2: array<u32>;
@group(0) @binding(15) var<storage, read> images_3: array<u32>;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

// `splat_train::views` (`mix32` from `common_random.wgsl`).
fn swap_partner(epoch: u32, i: u32) -> u32 {
    return mix32(params.b.x ^ mix32(epoch ^ mix32(i))) % (i + 1u);
}

fn view_for_draw(draw: u32, n: u32) -> u32 {
    let epoch = draw / n;
    var p = draw % n;
    for (var i = 1u; i < n; i++) {
        let j = swap_partner(epoch, i);
        if p == i {
            p = j;
        } else if p == j {
            p = i;
        }
    }
    return p;
}

// One workgroup: the view of this step, and every camera block (the view's camera, the block's counts).
@compute @workgroup_size(64)
fn select_view(@builtin(local_invocation_index) lid: u32) {
    let v = view_for_draw(params.b.z, params.a.w);
    if lid == 0u {
        atomicStore(&status[2], v);
    }
    for (var b = lid; b < params.c.x; b += 64u) {
        for (var k = 0u; k < 7u; k++) {
            blocks[b * params.c.y + k] = cameras[v * 8u + k];
        }
        var counts = block_counts[b];
        counts.y = params.d.y;
        blocks[b * params.c.y + 7u] = counts;
    }
}

@compute @workgroup_size(256)
fn unpack_target(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let p = index(gid, nwg);
    let pixels = params.c.z;
    if p >= pixels {
        return;
    }
    let v = atomicLoad(&status[2]);
    let part = v / params.d.z;
    let at = (v - part * params.d.z) * pixels + p;
    var word: u32;
    switch part {
        case 0u: {
            word = images[at];
        }
        case 1u: {
            word = images_1[at];
        }
        case 2u: {
            word = images_2[at];
        }
        default: {
            word = images_3[at];
        }
    }
    for (var c = 0u; c < 3u; c++) {
        target_img[3u * p + c] = lut[(word >> (8u * c)) & 255u];
    }
}

// One invocation, after the tile counts are scanned: halt when the list would not fit its capacity.
@compute @workgroup_size(1)
fn check_overflow() {
    let total = counts[params.a.z];
    atomicMax(&status[5], total);
    if total > params.a.y && atomicLoad(&status[0]) == 0u {
        atomicStore(&status[1], 1u);
        atomicStore(&status[3], total);
        atomicStore(&status[0], params.a.x + 1u);
    }
}

// One invocation: a non-finite step halts the block (the host records it as skipped and goes on).
@compute @workgroup_size(1)
fn commit_finite() {
    if atomicLoad(&status[4]) != 0u && atomicLoad(&status[0]) == 0u {
        atomicStore(&status[1], 2u);
        atomicStore(&status[0], params.a.x + 1u);
    }
    atomicStore(&status[4], 0u);
}
