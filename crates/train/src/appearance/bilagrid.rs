//! The bilateral grid of one image (Wang et al. 2024, "Bilateral Guided Radiance Field Processing"; as
//! gsplat's `lib_bilagrid.py`): 16 x 16 x 8 cells over (x, y, guidance), each a 3 x 4 affine colour
//! matrix. A rendered pixel `rgb` at `(i + 0.5, j + 0.5)` in a `w x h` image reads the grid at
//! `x = (i + 0.5) / w * 15`, `y = (j + 0.5) / h * 15`, `z = gray * 7` with `gray = 0.299 r + 0.587 g +
//! 0.114 b` (PyTorch's `grid_sample` with `align_corners=True`, so 0 and 1 are the first and last
//! cells, and `padding_mode="border"`, so `z` is clamped into the grid and has no gradient outside
//! it), trilinearly; then `out = A[:, :3] rgb + A[:, 3]`.
//!
//! Backward, per pixel with output gradient `go`: `dA = go (rgb, 1)^T` goes to the eight cells by their
//! trilinear weights; `rgb` gets `A[:, :3]^T go` directly and, through the guidance,
//! `lum dz/dgray sum_c dw_c/dz <cell_c, dA>`.
//!
//! Regularizer: 10 x total variation, as gsplat: per axis the mean squared difference of neighbouring
//! cells over every grid and channel, summed over the axes and divided by the number of grids.
//!
//! Cells are stored `[z][y][x][12]` (row-major 3 x 4 matrices), identity at the start.

use splat_core::Real;

/// Cells along x, y and the guidance.
pub const GRID_W: usize = 16;
pub const GRID_H: usize = 16;
pub const GRID_L: usize = 8;
/// Values per image.
pub const PER_IMAGE: usize = GRID_W * GRID_H * GRID_L * 12;
/// Luminance weights of the guidance.
pub const LUMA: [f64; 3] = [0.299, 0.587, 0.114];
/// gsplat's weight of the total-variation loss.
pub const TV_WEIGHT: f64 = 10.0;

/// One grid at the identity.
pub fn identity<F: Real>(out: &mut [F]) {
    for (i, v) in out.iter_mut().enumerate() {
        let k = i % 12;
        *v = if k == 0 || k == 5 || k == 10 {
            F::one()
        } else {
            F::zero()
        };
    }
}

/// Where pixel `(px, py)` of colour `rgb` reads the grid: the 8 cells and their weights, and the
/// derivative of each weight with respect to the guidance `gray`.
struct Sample<F> {
    cells: [usize; 8],
    weights: [F; 8],
    dweights_dgray: [F; 8],
}

/// Lower cell and fraction of a continuous index in `0 ..= size - 1`.
fn split<F: Real>(t: F, size: usize) -> (usize, F) {
    let i0 = (t.as_f64().floor().max(0.0) as usize).min(size - 2);
    (i0, t - F::c(i0 as f64))
}

fn sample<F: Real>(px: usize, py: usize, w: usize, h: usize, rgb: [F; 3]) -> Sample<F> {
    let x = F::c((px as f64 + 0.5) / w as f64 * (GRID_W - 1) as f64);
    let y = F::c((py as f64 + 0.5) / h as f64 * (GRID_H - 1) as f64);
    let gray = F::c(LUMA[0]) * rgb[0] + F::c(LUMA[1]) * rgb[1] + F::c(LUMA[2]) * rgb[2];
    let zmax = F::c((GRID_L - 1) as f64);
    let zs = gray * zmax;
    // Border padding: clamped, and no gradient where clamped.
    let (z, dz) = if zs < F::zero() {
        (F::zero(), F::zero())
    } else if zs > zmax {
        (zmax, F::zero())
    } else {
        (zs, zmax)
    };
    let (x0, tx) = split(x, GRID_W);
    let (y0, ty) = split(y, GRID_H);
    let (z0, tz) = split(z, GRID_L);
    let mut s = Sample {
        cells: [0; 8],
        weights: [F::zero(); 8],
        dweights_dgray: [F::zero(); 8],
    };
    for c in 0..8 {
        let (bx, by, bz) = (c & 1, (c >> 1) & 1, c >> 2);
        let wx = if bx == 1 { tx } else { F::one() - tx };
        let wy = if by == 1 { ty } else { F::one() - ty };
        let wz = if bz == 1 { tz } else { F::one() - tz };
        let sign = if bz == 1 { F::one() } else { -F::one() };
        s.cells[c] = (((z0 + bz) * GRID_H + y0 + by) * GRID_W + x0 + bx) * 12;
        s.weights[c] = wx * wy * wz;
        s.dweights_dgray[c] = wx * wy * sign * dz;
    }
    s
}

/// The interpolated 3 x 4 matrix of a sample.
fn matrix<F: Real>(grid: &[F], s: &Sample<F>) -> [F; 12] {
    let mut a = [F::zero(); 12];
    for c in 0..8 {
        let cell = &grid[s.cells[c]..s.cells[c] + 12];
        for k in 0..12 {
            a[k] += s.weights[c] * cell[k];
        }
    }
    a
}

fn affine<F: Real>(a: &[F; 12], rgb: [F; 3]) -> [F; 3] {
    std::array::from_fn(|r| {
        a[r * 4] * rgb[0] + a[r * 4 + 1] * rgb[1] + a[r * 4 + 2] * rgb[2] + a[r * 4 + 3]
    })
}

/// Applies the grid to rows `y0 ..` of a `w x h` image (`render` and `out` hold those rows).
pub fn apply_rows<F: Real>(grid: &[F], render: &[F], w: usize, h: usize, y0: usize, out: &mut [F]) {
    for (k, (px, o)) in render
        .chunks_exact(3)
        .zip(out.chunks_exact_mut(3))
        .enumerate()
    {
        let rgb = [px[0], px[1], px[2]];
        let s = sample(k % w, y0 + k / w, w, h, rgb);
        o.copy_from_slice(&affine(&matrix(grid, &s), rgb));
    }
}

/// Backward of [`apply_rows`]: writes `dL/drender` into `grad_render` and adds `dL/dgrid` into
/// `grad_grid`.
#[allow(clippy::too_many_arguments)]
pub fn backward_rows<F: Real>(
    grid: &[F],
    render: &[F],
    grad_out: &[F],
    w: usize,
    h: usize,
    y0: usize,
    grad_render: &mut [F],
    grad_grid: &mut [F],
) {
    let rows = render.chunks_exact(3).zip(grad_out.chunks_exact(3));
    for (k, ((px, go), gr)) in rows.zip(grad_render.chunks_exact_mut(3)).enumerate() {
        let rgb = [px[0], px[1], px[2]];
        let s = sample(k % w, y0 + k / w, w, h, rgb);
        let a = matrix(grid, &s);
        // dL/dA (row-major 3 x 4).
        let da: [F; 12] = std::array::from_fn(|i| {
            let (r, c) = (i / 4, i % 4);
            go[r] * if c < 3 { rgb[c] } else { F::one() }
        });
        let mut dgray = F::zero();
        for c in 0..8 {
            let cell = s.cells[c];
            let mut dot = F::zero();
            for i in 0..12 {
                grad_grid[cell + i] += s.weights[c] * da[i];
                dot += grid[cell + i] * da[i];
            }
            dgray += s.dweights_dgray[c] * dot;
        }
        for (ch, g) in gr.iter_mut().enumerate() {
            let direct = a[ch] * go[0] + a[4 + ch] * go[1] + a[8 + ch] * go[2];
            *g = direct + dgray * F::c(LUMA[ch]);
        }
    }
}

/// The total-variation loss of `images` grids (`grids` holds them one after another) times
/// [`TV_WEIGHT`], adding its gradient into `grad`.
pub fn total_variation<F: Real>(grids: &[F], images: usize, grad: &mut [F]) -> f64 {
    if images == 0 {
        return 0.0;
    }
    let strides = [12, GRID_W * 12, GRID_W * GRID_H * 12];
    let sizes = [GRID_W, GRID_H, GRID_L];
    let mut total = 0.0;
    for axis in 0..3 {
        let pairs_per_image = PER_IMAGE / sizes[axis] * (sizes[axis] - 1);
        let count = (pairs_per_image * images) as f64;
        let k = F::c(TV_WEIGHT / (count * images as f64));
        let mut sum = 0.0;
        for g in 0..images {
            let base = g * PER_IMAGE;
            for i in 0..PER_IMAGE {
                let along = (i / strides[axis]) % sizes[axis];
                if along + 1 == sizes[axis] {
                    continue;
                }
                let (a, b) = (base + i, base + i + strides[axis]);
                let d = grids[b] - grids[a];
                sum += (d * d).as_f64();
                let gd = F::c(2.0) * k * d;
                grad[b] += gd;
                grad[a] -= gd;
            }
        }
        total += sum / count;
    }
    TV_WEIGHT * total / images as f64
}
