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
//! Regularizer: 10 x total variation, as gsplat: per axis the squared differences of neighbouring cells
//! summed over every grid and channel and divided by the pairs of one grid, summed over the axes and
//! divided by the number of grids (the mean over the grids of each grid's total variation).
//!
//! Cells are stored `[z][y][x][12]` (row-major 3 x 4 matrices), identity at the start.

use rayon::prelude::*;
use splat_core::Real;

use super::{apply_matrix, matrix_transpose_times};

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

/// Applies the grid to rows `y0 ..` of a `w x h` image (`render` and `out` hold those rows).
pub fn apply_rows<F: Real>(grid: &[F], render: &[F], w: usize, h: usize, y0: usize, out: &mut [F]) {
    for (k, (px, o)) in render
        .chunks_exact(3)
        .zip(out.chunks_exact_mut(3))
        .enumerate()
    {
        let rgb = [px[0], px[1], px[2]];
        let s = sample(k % w, y0 + k / w, w, h, rgb);
        o.copy_from_slice(&apply_matrix(&matrix(grid, &s), rgb));
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
        let direct = matrix_transpose_times(&a, go);
        for (ch, g) in gr.iter_mut().enumerate() {
            *g = direct[ch] + dgray * F::c(LUMA[ch]);
        }
    }
}

/// The total-variation loss of `images` grids (`grids` holds them one after another) times
/// [`TV_WEIGHT`], adding its gradient into `grad`. Grids are independent: they run in parallel, each
/// walking its cells once (no index arithmetic per value), and their sums are added in grid order.
pub fn total_variation<F: Real>(grids: &[F], images: usize, grad: &mut [F]) -> f64 {
    total_variation_with(grids, images, grad, &mut Vec::new())
}

/// [`total_variation`] with the per-grid sums in `sums` (kept between steps: nothing allocated).
pub fn total_variation_with<F: Real>(
    grids: &[F],
    images: usize,
    grad: &mut [F],
    sums: &mut Vec<[f64; 3]>,
) -> f64 {
    if images == 0 {
        return 0.0;
    }
    // Per axis (x, y, guidance): the stride between neighbours and the number of pairs of one grid.
    let strides = [12, GRID_W * 12, GRID_W * GRID_H * 12];
    let sizes = [GRID_W, GRID_H, GRID_L];
    // gsplat divides each axis's sum by the pairs of one grid (its `_num_tensor_elems` leaves out the
    // batch dimension) and the total by the number of grids: the mean over grids of each grid's TV.
    let counts: [f64; 3] = std::array::from_fn(|a| (PER_IMAGE / sizes[a] * (sizes[a] - 1)) as f64);
    let k: [F; 3] = std::array::from_fn(|a| F::c(2.0 * TV_WEIGHT / (counts[a] * images as f64)));
    sums.clear();
    sums.resize(images, [0.0; 3]);
    grids[..images * PER_IMAGE]
        .par_chunks(PER_IMAGE)
        .zip(grad.par_chunks_mut(PER_IMAGE))
        .zip(sums.par_iter_mut())
        .for_each(|((p, g), sum)| {
            for z in 0..GRID_L {
                for y in 0..GRID_H {
                    for x in 0..GRID_W {
                        let base = ((z * GRID_H + y) * GRID_W + x) * 12;
                        let has = [x + 1 < GRID_W, y + 1 < GRID_H, z + 1 < GRID_L];
                        for axis in 0..3 {
                            if !has[axis] {
                                continue;
                            }
                            let next = base + strides[axis];
                            for c in 0..12 {
                                let d = p[next + c] - p[base + c];
                                sum[axis] += (d * d).as_f64();
                                let gd = k[axis] * d;
                                g[next + c] += gd;
                                g[base + c] -= gd;
                            }
                        }
                    }
                }
            }
        });
    let total: f64 = (0..3)
        .map(|a| sums.iter().map(|s| s[a]).sum::<f64>() / counts[a])
        .sum();
    TV_WEIGHT * total / images as f64
}
