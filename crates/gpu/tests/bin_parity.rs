//! The GPU bin stage against the reference: the same intersection list (tile, then depth, then id) and
//! the same tile ranges, exactly, on scenes large enough for three levels of prefix sum, and with the
//! per-dimension workgroup limit lowered so every kernel runs as a 2D dispatch. The scenes hold
//! Gaussians of every opacity, some under `alpha_min` (visible, in no tile: their rects are empty, and
//! inverted), so the ellipse test (`splat_core::Footprint`) keeps and leaves out tiles both ways.

mod common;

use common::context;
use splat_core::synthetic::{random_scene, RandomSceneOptions};
use splat_core::{Camera, TileGrid};
use splat_gpu::{GpuBin, GpuContext};
use splat_render::{bin, project, Bins, Projected, RenderSettings};

fn projected(seed: u64, count: usize, w: u32, h: u32) -> Projected<f32> {
    let mut g = random_scene(
        seed,
        &RandomSceneOptions {
            count,
            sh_degree: 0,
            extent: 2.0,
            log_scale_range: (-4.5, -1.0),
            opacity_range: (0.001, 0.99),
        },
    )
    .cast::<f32>();
    // Every 9th under alpha_min (1/255): visible, in no tile.
    for i in (0..g.len()).step_by(9) {
        g.opacity_logits[i] = (0.002f32 / 0.998).ln();
    }
    let cam = Camera::look_at([0.3, -0.2, -3.0], [0.0; 3], [0.0, -1.0, 0.0], 60.0, w, h);
    let mut p = Projected::default();
    project::project(&g, &cam, &RenderSettings::new(0), &mut p);
    // Equal depths: ties must fall back to the id, as in the reference.
    for i in (0..p.len()).step_by(7) {
        p.depths[i] = p.depths[i / 7 * 7 / 2];
    }
    p
}

fn check(ctx: &GpuContext, p: &Projected<f32>, w: u32, h: u32) -> usize {
    let grid = TileGrid::new(w, h);
    let mut reference = Bins::default();
    bin::bin(p, &grid, &mut reference);
    let mut gpu = Bins::default();
    GpuBin::new(ctx)
        .run(ctx, p, &grid, &mut gpu)
        .expect("GPU bin");
    // The cases are there: Gaussians visible in no tile, and tiles of rects the ellipse leaves out.
    let visible = (0..p.len()).filter(|&i| p.radii[i] > 0);
    let in_none = visible
        .clone()
        .filter(|&i| p.tiles(i).next().is_none())
        .count();
    let inverted = visible
        .clone()
        .filter(|&i| p.tile_rects[i].x0 > p.tile_rects[i].x1)
        .count();
    let rect_area: usize = visible.map(|i| p.tile_rects[i].area()).sum();
    if !p.is_empty() {
        // An inverted rect once counted as (x1 - x0) (y1 - y0) in u32: the whole grid, wrapped twice.
        assert!(
            in_none > 0 && inverted > 0,
            "{in_none} visible Gaussians without tiles, {inverted} inverted rects"
        );
        assert!(
            reference.num_intersections() * 20 < rect_area * 19,
            "{} intersections of {rect_area} rect tiles",
            reference.num_intersections()
        );
    }
    assert_eq!(gpu.tile_ranges, reference.tile_ranges, "tile ranges");
    assert_eq!(
        gpu.gaussian_ids, reference.gaussian_ids,
        "intersection list"
    );
    reference.num_intersections()
}

#[test]
fn bin_matches_reference_exactly() {
    let Some(ctx) = context(|_| {}) else { return };
    // Empty, small, and large (over 65,536 intersections: three scan levels).
    assert_eq!(check(&ctx, &projected(1, 0, 64, 48), 64, 48), 0);
    let small = check(&ctx, &projected(2, 300, 100, 70), 100, 70);
    assert!(small > 300, "{small}");
    let large = check(&ctx, &projected(3, 40_000, 640, 480), 640, 480);
    assert!(large > 70_000, "only {large} intersections");
}

#[test]
fn bin_with_lowered_dispatch_limit() {
    let Some(ctx) = context(|l| l.max_compute_workgroups_per_dimension = 32) else {
        return;
    };
    let n = check(&ctx, &projected(4, 3000, 320, 240), 320, 240);
    assert!(
        n > 32 * 256,
        "{n}: the dispatches would not need a second dimension"
    );
}
