//! The tiled path against the brute-force twin on seeded scenes with every corner case.

mod common;

use common::{forward, stress_scene, test_camera};
use splat_core::TileGrid;
use splat_render::brute::render_brute_force;
use splat_render::{RasterOutput, RenderSettings};

fn compare(seed: u64, sh_degree: usize, width: u32, height: u32, background: [f32; 3]) {
    let g32 = stress_scene(seed, sh_degree).cast::<f32>();
    let cam = test_camera(width, height);
    let mut settings = RenderSettings::new(sh_degree);
    settings.background = background;
    let pass = forward(&g32, &cam, &settings);

    // The scene really has the cases it claims.
    let visible = pass.projected.num_visible();
    assert!(
        visible > 300 && visible < g32.len(),
        "visible {visible} of {}",
        g32.len()
    );
    let longest = pass
        .bins
        .tile_ranges
        .iter()
        .map(|r| r[1] - r[0])
        .max()
        .unwrap();
    assert!(longest >= 200, "longest tile list {longest}");
    assert!(pass.raster.n_contrib.iter().any(|&n| n >= 50));

    let mut brute = RasterOutput::default();
    brute.resize(width, height);
    brute.poison();
    render_brute_force(
        &pass.projected,
        &TileGrid::new(width, height),
        &settings,
        &mut brute,
    );

    for (name, a, b) in [
        ("image", &pass.raster.image, &brute.image),
        (
            "final T",
            &pass.raster.final_transmittance,
            &brute.final_transmittance,
        ),
    ] {
        assert!(
            a.iter().all(|v| v.is_finite()),
            "{name}: tiled left a pixel unwritten"
        );
        assert!(
            b.iter().all(|v| v.is_finite()),
            "{name}: brute force left a pixel unwritten"
        );
        let max_diff = a
            .iter()
            .zip(b.iter())
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max);
        assert!(
            max_diff <= 1e-5,
            "{name}: seed {seed} degree {sh_degree}: max diff {max_diff}"
        );
    }
    assert!(pass.raster.n_contrib.iter().all(|&n| n != u32::MAX));
}

#[test]
fn tiled_equals_brute_force_every_degree() {
    for degree in 0..=3 {
        // 100 x 75: partial tiles on the right and bottom edges.
        compare(10 + degree as u64, degree, 100, 75, [0.0; 3]);
    }
}

#[test]
fn tiled_equals_brute_force_with_background_and_other_sizes() {
    compare(21, 3, 64, 48, [0.2, 0.5, 0.9]);
    compare(22, 1, 17, 130, [1.0, 1.0, 1.0]);
}
