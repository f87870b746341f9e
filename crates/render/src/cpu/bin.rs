//! Binning by counting sort: count intersections per tile, prefix-sum into offsets, scatter Gaussian ids in
//! id order, then sort each tile's slice by (depth, id) in parallel. The result equals the reference's.

use rayon::prelude::*;
use splat_core::TileGrid;

use crate::types::{Bins, Projected};

pub fn bin(projected: &Projected<f32>, grid: &TileGrid, out: &mut Bins) {
    let num_tiles = grid.num_tiles();
    out.tile_ranges.clear();
    out.tile_ranges.resize(num_tiles, [0, 0]);
    // Counts, stored in tile_ranges[t][1] for now.
    for (i, rect) in projected.tile_rects.iter().enumerate() {
        if projected.radii[i] == 0 {
            continue;
        }
        for ty in rect.y0..rect.y1 {
            for tx in rect.x0..rect.x1 {
                out.tile_ranges[(ty * grid.tiles_x + tx) as usize][1] += 1;
            }
        }
    }
    let mut offset = 0u32;
    for r in out.tile_ranges.iter_mut() {
        let count = r[1];
        *r = [offset, offset];
        offset += count;
    }
    out.gaussian_ids.clear();
    out.gaussian_ids.resize(offset as usize, 0);
    // Scatter in id order; tile_ranges[t][1] is the fill cursor and ends at the range end.
    for (i, rect) in projected.tile_rects.iter().enumerate() {
        if projected.radii[i] == 0 {
            continue;
        }
        for ty in rect.y0..rect.y1 {
            for tx in rect.x0..rect.x1 {
                let r = &mut out.tile_ranges[(ty * grid.tiles_x + tx) as usize];
                out.gaussian_ids[r[1] as usize] = i as u32;
                r[1] += 1;
            }
        }
    }
    // Split the id list into per-tile slices and sort each by (depth, id).
    let mut slices: Vec<&mut [u32]> = Vec::with_capacity(num_tiles);
    let mut rest: &mut [u32] = &mut out.gaussian_ids;
    for r in &out.tile_ranges {
        let (head, tail) = rest.split_at_mut((r[1] - r[0]) as usize);
        slices.push(head);
        rest = tail;
    }
    let depths = &projected.depths;
    slices.par_iter_mut().for_each(|s| {
        // Depths are > 0.2, so their bit patterns order like the values.
        s.sort_unstable_by_key(|&id| ((depths[id as usize].to_bits() as u64) << 32) | id as u64);
    });
}
