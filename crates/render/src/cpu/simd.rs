//! Vectorized tile kernels: a 16 x 16 tile is 256 pixels processed as vectors of `L` lanes (16 rows of
//! 16 lanes with AVX-512, 8 lanes with AVX2, 4 with SSE2/NEON), with the Gaussian loop outside and the
//! pixel loop inside, so each Gaussian's parameters are broadcast once per vector.
//!
//! The kernels are written once, generic over the lane count, as plain lane loops with selects instead of
//! branches; each instruction set gets a copy compiled with its target features (`#[target_feature]`) and
//! the copy is chosen at run time ([`SimdLevel::detect`]). `exp` is a branch-free polynomial
//! ([`exp_neg`]) so it vectorizes; it differs from libm by a few ulp, so images match the reference to
//! about 1e-6, not bit for bit (the scalar level stays bit-identical).
#![allow(unsafe_code)]

/// Which copy of the kernels runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimdLevel {
    /// One pixel at a time with libm `exp`: bit-identical to the reference.
    Scalar,
    /// 4 lanes, baseline instructions (SSE2 on x86-64, NEON on aarch64).
    Portable,
    /// 8 lanes, AVX2 + FMA.
    Avx2,
    /// 16 lanes, AVX-512.
    Avx512,
}

impl SimdLevel {
    /// The widest level this CPU runs.
    pub fn detect() -> SimdLevel {
        *Self::available()
            .last()
            .expect("scalar is always available")
    }

    /// The level named by the `SPLAT_SIMD` environment variable (`scalar`, `portable`, `avx2`, `avx512`),
    /// if set, valid and supported here; for benchmarking one level against another.
    pub fn from_env() -> Option<SimdLevel> {
        let want = match std::env::var("SPLAT_SIMD")
            .ok()?
            .to_ascii_lowercase()
            .as_str()
        {
            "scalar" => SimdLevel::Scalar,
            "portable" => SimdLevel::Portable,
            "avx2" => SimdLevel::Avx2,
            "avx512" => SimdLevel::Avx512,
            _ => return None,
        };
        Self::available().contains(&want).then_some(want)
    }

    /// Every level this CPU runs, narrowest first.
    pub fn available() -> Vec<SimdLevel> {
        let mut v = vec![SimdLevel::Scalar, SimdLevel::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                v.push(SimdLevel::Avx2);
            }
            if supported(SimdLevel::Avx512) == SimdLevel::Avx512 {
                v.push(SimdLevel::Avx512);
            }
        }
        v
    }
}

/// Multiply-add `a b + c` as the kernels use it: one fused instruction where the instruction set has one
/// (AVX2 and AVX-512 here), a multiply and an add where it has not (without hardware FMA, `f32::mul_add`
/// is a slow library call).
pub trait MulAdd {
    fn ma(a: f32, b: f32, c: f32) -> f32;
}

/// Fused multiply-add (one rounding).
pub struct Fused;
/// Separate multiply and add.
pub struct Separate;

impl MulAdd for Fused {
    #[inline(always)]
    fn ma(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}

impl MulAdd for Separate {
    #[inline(always)]
    fn ma(a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }
}

/// `e^x` for `x <= 0` (clamped below at -87), branch-free: `x = n ln2 + r`, `|r| <= ln2 / 2`, a degree-6
/// polynomial for `e^r`, and `2^n` built from the exponent bits. Relative error about 2e-7.
#[inline(always)]
pub fn exp_neg(x: f32) -> f32 {
    exp_neg_with::<Separate>(x)
}

/// [`exp_neg`] with the multiply-adds of `M`.
#[inline(always)]
pub fn exp_neg_with<M: MulAdd>(x: f32) -> f32 {
    let x = x.clamp(-87.0, 0.0);
    // Round to nearest with the 1.5 * 2^23 trick (vectorizes on every instruction set, unlike `round`).
    const MAGIC: f32 = 12_582_912.0;
    let shifted = M::ma(x, std::f32::consts::LOG2_E, MAGIC);
    let n = shifted - MAGIC;
    // Cody-Waite split of ln 2 for an exact-enough reduction.
    let r = M::ma(n, -1.428_606_8e-6, M::ma(n, -0.693_145_75, x));
    let mut p = 0.001_388_89;
    for c in [0.008_333_34, 0.041_666_67, 0.166_666_67, 0.5, 1.0, 1.0] {
        p = M::ma(p, r, c);
    }
    // `shifted`'s low mantissa bits hold `n` (|n| <= 126): integer arithmetic on the bits gives the biased
    // exponent `n + 127` without a float-to-int conversion (Rust's saturating `as` does not vectorize).
    let biased = shifted
        .to_bits()
        .wrapping_sub(MAGIC.to_bits())
        .wrapping_add(127);
    let scale = f32::from_bits(biased << 23);
    p * scale
}

/// Asks the CPU to bring the cache line of `r` closer (no effect on results; nothing where there is no
/// prefetch instruction).
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetch` needs SSE, which every x86-64 CPU has; it never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((r as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

/// `a.min(b)` for a `b` that is not NaN (then both give `b` for a NaN `a`), as one instruction: `f32::min`
/// also covers a NaN `b`, which costs a compare and a blend per vector.
#[inline(always)]
fn min_finite(a: f32, b: f32) -> f32 {
    if a < b {
        a
    } else {
        b
    }
}

/// One entry of a tile's list as the kernels read it: each Gaussian's parameters are loaded as scalars and
/// broadcast across the lanes, so one record per Gaussian (48 bytes) is at most one cache line per
/// Gaussian.
#[derive(Clone, Copy, Debug, Default)]
pub struct TileGaussian {
    pub mean: [f32; 2],
    pub conic: [f32; 3],
    pub opacity: f32,
    pub color: [f32; 3],
    /// Below this `power` alpha is certainly under the 1/255 cut (see `rasterize::power_skip`).
    pub power_skip: f32,
    /// Position in the tile's full list (what `n_contrib` counts).
    pub pos: u32,
    /// First and last tile row (0..16) where the Gaussian can be visible; other rows are skipped.
    pub rows: [u8; 2],
}

/// Blending thresholds and background, as the kernels use them.
#[derive(Clone, Copy, Debug)]
pub struct Cut {
    pub alpha_min: f32,
    pub alpha_max: f32,
    pub t_min: f32,
    pub bg: [f32; 3],
}

pub const TILE_PIXELS: usize = 256;

/// Per-tile forward results, indexed `ly * 16 + lx`.
pub struct TileOut {
    pub rgb: [[f32; TILE_PIXELS]; 3],
    pub t: [f32; TILE_PIXELS],
    pub last: [u32; TILE_PIXELS],
}

impl Default for TileOut {
    fn default() -> Self {
        TileOut {
            rgb: [[0.0; TILE_PIXELS]; 3],
            t: [0.0; TILE_PIXELS],
            last: [0; TILE_PIXELS],
        }
    }
}

/// Pixel-centre coordinates of the tile: x of each of the 256 slots, y of each of the 16 rows.
#[inline(always)]
fn tile_coords(x0: u32, y0: u32) -> ([f32; TILE_PIXELS], [f32; 16]) {
    let px = std::array::from_fn(|i| (x0 + (i % 16) as u32) as f32 + 0.5);
    let row_y = std::array::from_fn(|r| (y0 + r as u32) as f32 + 0.5);
    (px, row_y)
}

/// Bits `lo..hi` set (`hi <= 64`).
#[inline(always)]
fn bit_range(lo: usize, hi: usize) -> u64 {
    let below = |n: usize| if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    below(hi) & !below(lo)
}

/// The forward kernel of one tile: every gathered Gaussian over the tile's vectors of pixels. One
/// function on purpose (longer than the others): the live-vector mask, the per-row cull and the
/// accumulators stay in registers across the Gaussian loop, which helpers the compiler does not
/// inline into every instruction-set copy would spill.
#[inline(always)]
fn forward_tile<const L: usize, M: MulAdd>(
    gs: &[TileGaussian],
    x0: u32,
    y0: u32,
    tw: usize,
    th: usize,
    cut: &Cut,
    out: &mut TileOut,
) {
    let (px, row_y) = tile_coords(x0, y0);
    // The transmittance's sign bit says whether a pixel still blends: set (t negated) once it stopped
    // or when it lies outside the image, so no separate flag is loaded and stored (t >= 0 otherwise,
    // and -0.0 counts as stopped).
    let mut t = [1.0f32; TILE_PIXELS];
    let mut cr = [0.0f32; TILE_PIXELS];
    let mut cg = [0.0f32; TILE_PIXELS];
    let mut cb = [0.0f32; TILE_PIXELS];
    let mut last = [0u32; TILE_PIXELS];
    for (i, ti) in t.iter_mut().enumerate() {
        if !(i % 16 < tw && i / 16 < th) {
            *ti = -1.0;
        }
    }
    let blending = |t: f32| (t.to_bits() as i32) >= 0;
    // Bit `v` set while vector `v` has a pixel that still blends: finished vectors are skipped.
    // Gaussian `k` reads the mask as it stood before Gaussian `k - 1` (`live_used`): the mask's latest
    // value depends on the last vector's whole computation, and waiting for it at every Gaussian would
    // drain the pipeline. A finished vector evaluated once more changes nothing (its pixels' `t` are
    // negative, so nothing blends).
    let vectors = TILE_PIXELS / L;
    let mut live: u64 = 0;
    for v in 0..vectors {
        if t[v * L..(v + 1) * L].iter().any(|&a| blending(a)) {
            live |= 1 << v;
        }
    }
    let mut live_used = live;
    for g in gs {
        if live_used == 0 {
            break;
        }
        let live_before = live;
        let [mx, my] = g.mean;
        let [a, b, c] = g.conic;
        let (ha, hc) = (-0.5 * a, -0.5 * c);
        let o = g.opacity;
        let power_skip = g.power_skip;
        let [gr, gg, gb] = g.color;
        let pos1 = g.pos + 1;
        let (first, end) = (
            g.rows[0] as usize * 16 / L,
            (g.rows[1] as usize + 1) * 16 / L,
        );
        // A vector lies in one tile row (L <= 16), so `power`'s dy terms are one value per row: formed
        // here for the 16 rows at once (one vector op each with AVX-512) and read by each vector as a
        // broadcast operand.
        let mut row_b = [0.0f32; 16];
        let mut row_c = [0.0f32; 16];
        for r in 0..16 {
            let dy = my - row_y[r];
            row_b[r] = -b * dy;
            row_c[r] = hc * dy * dy;
        }
        let mut todo = live_used & bit_range(first, end);
        while todo != 0 {
            let vi = todo.trailing_zeros() as usize;
            todo &= todo - 1;
            let v = vi * L;
            // Fixed-size views: one bounds check per vector, none per lane, so the lane loop vectorizes.
            let pxv: &[f32; L] = px[v..v + L].try_into().unwrap();
            let tv: &mut [f32; L] = (&mut t[v..v + L]).try_into().unwrap();
            let crv: &mut [f32; L] = (&mut cr[v..v + L]).try_into().unwrap();
            let cgv: &mut [f32; L] = (&mut cg[v..v + L]).try_into().unwrap();
            let cbv: &mut [f32; L] = (&mut cb[v..v + L]).try_into().unwrap();
            let lastv: &mut [u32; L] = (&mut last[v..v + L]).try_into().unwrap();
            let row = (v / 16) & 15;
            let (bdy, cdy2) = (row_b[row], row_c[row]);
            // -(a dx^2 + c dy^2) / 2 - b dx dy, and whether any lane can reach alpha_min (`power_skip`
            // keeps a margin): if none can, the Gaussian changes nothing in this vector.
            let mut pw = [0.0f32; L];
            let mut any = false;
            for l in 0..L {
                let dx = mx - pxv[l];
                pw[l] = M::ma(dx, M::ma(ha, dx, bdy), cdy2);
                any |= pw[l] >= power_skip;
            }
            if !any {
                continue;
            }
            let mut any_stop = false;
            for l in 0..L {
                let power = pw[l];
                let alpha = min_finite(o * exp_neg_with::<M>(power), cut.alpha_max);
                let t = tv[l];
                let ok = blending(t) && power <= 0.0 && alpha >= cut.alpha_min;
                let next_t = t * (1.0 - alpha);
                let stop = ok && next_t < cut.t_min;
                any_stop |= stop;
                let blend = ok && !stop;
                let w = if blend { alpha * t } else { 0.0 };
                crv[l] = M::ma(gr, w, crv[l]);
                cgv[l] = M::ma(gg, w, cgv[l]);
                cbv[l] = M::ma(gb, w, cbv[l]);
                tv[l] = if blend {
                    next_t
                } else if stop {
                    -t
                } else {
                    t
                };
                // Written, never read here: a masked store, no load and blend.
                if blend {
                    lastv[l] = pos1;
                }
            }
            // Only a stop can finish a vector; stops are rare, so the test is off the common path.
            if any_stop && !tv.iter().any(|&t| blending(t)) {
                live &= !(1u64 << vi);
            }
        }
        live_used = live_before;
    }
    for i in 0..TILE_PIXELS {
        let t = t[i].abs();
        out.rgb[0][i] = cr[i] + t * cut.bg[0];
        out.rgb[1][i] = cg[i] + t * cut.bg[1];
        out.rgb[2][i] = cb[i] + t * cut.bg[2];
        out.t[i] = t;
        out.last[i] = last[i];
    }
}

/// Per-pixel inputs of the backward for one tile.
pub struct TileGradIn {
    pub grad: [[f32; TILE_PIXELS]; 3],
    pub t_final: [f32; TILE_PIXELS],
    pub n_contrib: [u32; TILE_PIXELS],
}

impl Default for TileGradIn {
    fn default() -> Self {
        TileGradIn {
            grad: [[0.0; TILE_PIXELS]; 3],
            t_final: [0.0; TILE_PIXELS],
            n_contrib: [0; TILE_PIXELS],
        }
    }
}

/// Backward over one tile: `acc[k]` receives Gaussian `k`'s gradients (mean2d 2, conic 3, colour 3,
/// opacity 1) and, with `ABS`, `acc_abs[k]` the sums of the per-pixel absolute mean2d gradients.
/// Slots outside the image must have `n_contrib = 0`.
#[inline(always)]
fn backward_tile<const L: usize, M: MulAdd, const ABS: bool>(
    gs: &[TileGaussian],
    x0: u32,
    y0: u32,
    cut: &Cut,
    inp: &TileGradIn,
    acc: &mut [[f32; 9]],
    acc_abs: &mut [[f32; 2]],
) {
    let (px, row_y) = tile_coords(x0, y0);
    let mut t = inp.t_final;
    let mut behind = [[0.0f32; TILE_PIXELS]; 3];
    let mut max_n = 0;
    // Largest `n_contrib` of each vector: a Gaussian at or past it blended nowhere in the vector.
    let mut vec_max_n = [0u32; TILE_PIXELS];
    for i in 0..TILE_PIXELS {
        for ch in 0..3 {
            behind[ch][i] = cut.bg[ch] * inp.t_final[i];
        }
        max_n = max_n.max(inp.n_contrib[i]);
        vec_max_n[i / L] = vec_max_n[i / L].max(inp.n_contrib[i]);
    }
    let count = gs.partition_point(|g| g.pos < max_n);
    // The first pass's results: `e^power` of each listed vector, and which vector it is.
    let mut exp_of = [0.0f32; TILE_PIXELS];
    let mut listed_v = [0u16; TILE_PIXELS / 4];
    for k in (0..count).rev() {
        let gk = &gs[k];
        let [mx, my] = gk.mean;
        let [a, b, c] = gk.conic;
        let (ha, hc) = (-0.5 * a, -0.5 * c);
        let o = gk.opacity;
        let power_skip = gk.power_skip;
        let col = gk.color;
        let pos = gk.pos;
        // Lane sums: 0..5 the power gradient's moments (see below), 5..8 colour, 8 opacity.
        let mut s = [[0.0f32; L]; 9];
        // With ABS: lane sums of |d power / d mean| x |gpow| per component.
        let mut s_abs = [[0.0f32; L]; 2];
        let (first, end) = (gk.rows[0] as usize * 16, (gk.rows[1] as usize + 1) * 16);
        // One tile row per vector, as in the forward: the dy terms once per row.
        let mut rows = [[0.0f32; 16]; 4];
        for r in 0..16 {
            let dy = my - row_y[r];
            rows[0][r] = dy;
            rows[1][r] = -b * dy;
            rows[2][r] = hc * dy * dy;
            rows[3][r] = dy * dy;
        }
        // Two passes over the Gaussian's vectors. The first evaluates `e^power` where any lane can
        // reach alpha_min and lists those vectors; the second blends backwards from the list. In one
        // pass a vector was a dependency chain of ~140 cycles (power, exp, the divide, the
        // gradients; estimated from instruction latencies) in ~90 operations, so the scheduler held
        // under two vectors at a time: ~70 cycles per vector where the ports need ~30. Split, each
        // pass's chains are shorter and more vectors are in flight (backward 12% faster, same bits).
        let mut listed = 0;
        for v in (first / L * L..end).step_by(L) {
            if pos >= vec_max_n[v / L] {
                continue;
            }
            let pxv: &[f32; L] = px[v..v + L].try_into().unwrap();
            let row = (v / 16) & 15;
            let (bdy, cdy2) = (rows[1][row], rows[2][row]);
            let mut pw = [0.0f32; L];
            let mut any = false;
            for l in 0..L {
                let dx = mx - pxv[l];
                pw[l] = M::ma(dx, M::ma(ha, dx, bdy), cdy2);
                any |= pw[l] >= power_skip;
            }
            // No lane reaches alpha_min: the Gaussian changed nothing here.
            if !any {
                continue;
            }
            // Where power > 0 (a conic that is not positive definite) the pixel takes no part:
            // g = 0 gives alpha 0 < alpha_min, which rejects it as `power <= 0` does.
            let gv: &mut [f32; L] = (&mut exp_of[listed * L..(listed + 1) * L])
                .try_into()
                .unwrap();
            for l in 0..L {
                let e = exp_neg_with::<M>(pw[l]);
                gv[l] = if pw[l] <= 0.0 { e } else { 0.0 };
            }
            listed_v[listed] = v as u16;
            listed += 1;
        }
        let touched = listed > 0;
        for j in 0..listed {
            let v = listed_v[j] as usize;
            let pxv: &[f32; L] = px[v..v + L].try_into().unwrap();
            let row = (v / 16) & 15;
            let (dy, dy2) = (rows[0][row], rows[3][row]);
            let gv: &[f32; L] = exp_of[j * L..(j + 1) * L].try_into().unwrap();
            let nv: &[u32; L] = inp.n_contrib[v..v + L].try_into().unwrap();
            let gpv: [&[f32; L]; 3] =
                std::array::from_fn(|ch| inp.grad[ch][v..v + L].try_into().unwrap());
            let tv: &mut [f32; L] = (&mut t[v..v + L]).try_into().unwrap();
            let [b0, b1, b2] = &mut behind;
            let bv: [&mut [f32; L]; 3] = [
                (&mut b0[v..v + L]).try_into().unwrap(),
                (&mut b1[v..v + L]).try_into().unwrap(),
                (&mut b2[v..v + L]).try_into().unwrap(),
            ];
            for l in 0..L {
                let dx = mx - pxv[l];
                let g = gv[l];
                let alpha_raw = o * g;
                let alpha = min_finite(alpha_raw, cut.alpha_max);
                let ok = pos < nv[l] && alpha >= cut.alpha_min;
                // Lanes that did not blend take alpha 0: their t and `behind` come out unchanged
                // (`t * 1`, `+ 0`) and their weight 0 without further selects (t is finite, >= 0).
                let a = if ok { alpha } else { 0.0 };
                // One division per vector (a vector divide costs as much as ~16 multiplies).
                let inv_one_minus = 1.0 / (1.0 - a);
                let t_i = tv[l] * inv_one_minus;
                let w = a * t_i;
                // Products summed with multiply-adds (fused where the instruction set has them).
                let mut grad_alpha = 0.0f32;
                for ch in 0..3 {
                    let gp = gpv[ch][l];
                    s[5 + ch][l] = M::ma(w, gp, s[5 + ch][l]);
                    let d = M::ma(col[ch], t_i, -(bv[ch][l] * inv_one_minus));
                    grad_alpha = if ch == 0 {
                        gp * d
                    } else {
                        M::ma(gp, d, grad_alpha)
                    };
                    bv[ch][l] = M::ma(col[ch], w, bv[ch][l]);
                }
                tv[l] = t_i;
                let free = ok && alpha_raw <= cut.alpha_max;
                let ga = if free { grad_alpha } else { 0.0 };
                s[8][l] = M::ma(ga, g, s[8][l]);
                // The power gradient's moments, sum gpow (dx, dy, dx^2, dx dy, dy^2): the mean and
                // conic gradients are linear in them (combined once per Gaussian below), and dy is
                // one value per vector, so each costs one multiply-add per lane.
                let gpow = ga * o * g;
                let u = gpow * dx;
                s[0][l] += u;
                s[1][l] = M::ma(gpow, dy, s[1][l]);
                s[2][l] = M::ma(u, dx, s[2][l]);
                s[3][l] = M::ma(u, dy, s[3][l]);
                s[4][l] = M::ma(gpow, dy2, s[4][l]);
                if ABS {
                    // d power / d mean = (-a dx - b dy, -c dy - b dx), with -a = 2 ha (`a` is alpha
                    // here) and -c = 2 hc.
                    s_abs[0][l] += (gpow * M::ma(2.0 * ha, dx, -b * dy)).abs();
                    s_abs[1][l] += (gpow * M::ma(2.0 * hc, dy, -b * dx)).abs();
                }
            }
        }
        acc[k] = if touched {
            let sum = |j: usize| s[j].iter().sum::<f32>();
            let [x, y, xx, xy, yy] = [0, 1, 2, 3, 4].map(|j| sum(j) as f64);
            let (a, b, c) = (a as f64, b as f64, c as f64);
            // d power / d mean = (-a dx - b dy, -c dy - b dx); d power / d conic = -(dx^2 / 2, dx dy,
            // dy^2 / 2).
            [
                (-a * x - b * y) as f32,
                (-c * y - b * x) as f32,
                (-0.5 * xx) as f32,
                -xy as f32,
                (-0.5 * yy) as f32,
                sum(5),
                sum(6),
                sum(7),
                sum(8),
            ]
        } else {
            [0.0; 9]
        };
        if ABS {
            acc_abs[k] = [s_abs[0].iter().sum(), s_abs[1].iter().sum()];
        }
    }
}

macro_rules! dispatch {
    ($fwd:ident, $bwd:ident, $lanes:literal, $features:literal) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn $fwd(
            gs: &[TileGaussian],
            x0: u32,
            y0: u32,
            tw: usize,
            th: usize,
            cut: &Cut,
            out: &mut TileOut,
        ) {
            forward_tile::<$lanes, Fused>(gs, x0, y0, tw, th, cut, out)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn $bwd<const ABS: bool>(
            gs: &[TileGaussian],
            x0: u32,
            y0: u32,
            cut: &Cut,
            inp: &TileGradIn,
            acc: &mut [[f32; 9]],
            acc_abs: &mut [[f32; 2]],
        ) {
            backward_tile::<$lanes, Fused, ABS>(gs, x0, y0, cut, inp, acc, acc_abs)
        }
    };
}

dispatch!(forward_avx2, backward_avx2, 8, "avx2,fma");
dispatch!(
    forward_avx512,
    backward_avx512,
    16,
    "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma"
);

/// `level` if this CPU runs it, else the portable level (the feature test is a cached load).
#[inline]
fn supported(level: SimdLevel) -> SimdLevel {
    #[cfg(target_arch = "x86_64")]
    {
        let ok = match level {
            SimdLevel::Avx512 => {
                std::is_x86_feature_detected!("avx512f")
                    && std::is_x86_feature_detected!("avx512vl")
                    && std::is_x86_feature_detected!("avx512bw")
                    && std::is_x86_feature_detected!("avx512dq")
                    && std::is_x86_feature_detected!("avx2")
                    && std::is_x86_feature_detected!("fma")
            }
            SimdLevel::Avx2 => {
                std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
            }
            _ => false,
        };
        if ok {
            return level;
        }
    }
    let _ = level;
    SimdLevel::Portable
}

/// Forward over one tile with the kernels of `level` (`Scalar` is not handled here).
pub fn forward(
    level: SimdLevel,
    gs: &[TileGaussian],
    x0: u32,
    y0: u32,
    tw: usize,
    th: usize,
    cut: &Cut,
    out: &mut TileOut,
) {
    match supported(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `supported` returned this level only after detecting its features on this CPU.
        SimdLevel::Avx512 => unsafe { forward_avx512(gs, x0, y0, tw, th, cut, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for AVX2 and FMA.
        SimdLevel::Avx2 => unsafe { forward_avx2(gs, x0, y0, tw, th, cut, out) },
        _ => forward_tile::<4, Separate>(gs, x0, y0, tw, th, cut, out),
    }
}

/// Backward over one tile with the kernels of `level`; `acc_abs` is written only with `ABS`.
#[allow(clippy::too_many_arguments)]
pub fn backward<const ABS: bool>(
    level: SimdLevel,
    gs: &[TileGaussian],
    x0: u32,
    y0: u32,
    cut: &Cut,
    inp: &TileGradIn,
    acc: &mut [[f32; 9]],
    acc_abs: &mut [[f32; 2]],
) {
    match supported(level) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: see `forward`.
        SimdLevel::Avx512 => unsafe { backward_avx512::<ABS>(gs, x0, y0, cut, inp, acc, acc_abs) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: see `forward`.
        SimdLevel::Avx2 => unsafe { backward_avx2::<ABS>(gs, x0, y0, cut, inp, acc, acc_abs) },
        _ => backward_tile::<4, Separate, ABS>(gs, x0, y0, cut, inp, acc, acc_abs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_neg_is_accurate() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x <= 0.0 {
            let e = (x as f64).exp();
            let rel = ((exp_neg(x) as f64 - e) / e).abs();
            worst = worst.max(rel);
            x += 0.0137;
        }
        assert!(worst < 1e-6, "worst relative error {worst:e}");
        let mut worst_fused = 0.0f64;
        let mut x = -87.0f32;
        while x <= 0.0 {
            let e = (x as f64).exp();
            worst_fused = worst_fused.max(((exp_neg_with::<Fused>(x) as f64 - e) / e).abs());
            x += 0.0137;
        }
        assert!(
            worst_fused < 1e-6,
            "fused: worst relative error {worst_fused:e}"
        );
        assert_eq!(exp_neg(0.0), 1.0);
        assert!(exp_neg(-1000.0) < 1e-37);
    }
}
