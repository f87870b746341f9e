//! The bin stage: list every visible Gaussian in each tile of its rectangle its ellipse reaches
//! ([`Projected::tiles`]), sort by (tile, depth) and
//! give each tile its `[start, end)` range of the sorted list.
//!
//! The order within a tile is ascending camera-space depth, ties broken by Gaussian id, so it is a total
//! order and every implementation produces the same list. A fast implementation sorts 64-bit keys
//! `(tile << 32) | depth_bits` (positive `f32` depths order like their bit patterns) with a stable radix
//! sort over keys emitted in id order, which gives exactly this order.

use std::cmp::Ordering;

use splat_core::{Real, TileGrid};

use crate::types::{Bins, Projected};

/// The sort key a radix-sorting implementation uses for one (tile, Gaussian) intersection.
#[inline]
pub fn sort_key(tile: u32, depth: f32) -> u64 {
    ((tile as u64) << 32) | depth.to_bits() as u64
}

/// Bins the visible Gaussians of `projected` into `out`.
pub fn bin<F: Real>(projected: &Projected<F>, grid: &TileGrid, out: &mut Bins) {
    let mut entries: Vec<(u32, F, u32)> = Vec::new();
    for id in 0..projected.len() {
        for (tx, ty) in projected.tiles(id) {
            entries.push((ty * grid.tiles_x + tx, projected.depths[id], id as u32));
        }
    }
    entries.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(a.1.partial_cmp(&b.1).unwrap_or(Ordering::Equal))
            .then(a.2.cmp(&b.2))
    });
    out.gaussian_ids.clear();
    out.gaussian_ids.extend(entries.iter().map(|e| e.2));
    out.tile_ranges.clear();
    out.tile_ranges.resize(grid.num_tiles(), [0, 0]);
    let mut start = 0;
    while start < entries.len() {
        let tile = entries[start].0;
        let mut end = start;
        while end < entries.len() && entries[end].0 == tile {
            end += 1;
        }
        out.tile_ranges[tile as usize] = [start as u32, end as u32];
        start = end;
    }
}
