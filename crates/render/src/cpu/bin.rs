//! Binning by counting sort: count intersections per tile, prefix-sum into offsets, scatter Gaussian ids in
//! id order, then sort each tile's slice by (depth, id) in parallel. The result equals the reference's.

use splat_core::TileGrid;

use crate::types::{Bins, Projected};

pub fn bin(projected: &Projected<f32>, grid: &TileGrid, out: &mut Bins) {
    let num_tiles = grid.num_tiles();
    out.tile_ranges.clear();
    out.tile_ranges.resize(num_tiles, [0, 0]);
    // Counts, stored in tile_ranges[t][1] for now.
    for i in 0..projected.len() {
        for (tx, ty) in projected.tiles(i) {
            out.tile_ranges[(ty * grid.tiles_x + tx) as usize][1] += 1;
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
    for i in 0..projected.len() {
        for (tx, ty) in projected.tiles(i) {
            let r = &mut out.tile_ranges[(ty * grid.tiles_x + tx) as usize];
            out.gaussian_ids[r[1] as usize] = i as u32;
            r[1] += 1;
        }
    }
    // Sort each tile's slice by (depth, id), tiles in parallel (recursive halving: no allocation).
    sort_tiles(&mut out.gaussian_ids, &out.tile_ranges, &projected.depths);
}

fn sort_tiles(ids: &mut [u32], ranges: &[[u32; 2]], depths: &[f32]) {
    // Below this many entries the split is not worth a task.
    const SEQUENTIAL: usize = 4096;
    if ranges.len() == 1 || ids.len() <= SEQUENTIAL {
        let base = ranges.first().map_or(0, |r| r[0]);
        for r in ranges {
            let s = &mut ids[(r[0] - base) as usize..(r[1] - base) as usize];
            // Depths are > 0.2, so their bit patterns order like the values.
            s.sort_unstable_by_key(|&id| {
                ((depths[id as usize].to_bits() as u64) << 32) | id as u64
            });
        }
        return;
    }
    let mid = ranges.len() / 2;
    let (left, right) = ids.split_at_mut((ranges[mid][0] - ranges[0][0]) as usize);
    rayon::join(
        || sort_tiles(left, &ranges[..mid], depths),
        || sort_tiles(right, &ranges[mid..], depths),
    );
}
