//! Renders of a scene decoded from each format against renders of the scene itself, on the CPU
//! backend, from four cameras around the built-in scene (20,000 Gaussians, SH degree 1).

use splat_core::synthetic::builtin_scene;
use splat_core::Camera;
use splat_io::formats::{SceneFormat, WriteOptions};
use splat_render::cpu::CpuBackend;
use splat_train::fidelity::measure;

#[test]
fn every_format_renders_close_to_the_ply() {
    let g = builtin_scene(20_000);
    let cameras: Vec<Camera> = (0..4)
        .map(|k| {
            let a = k as f64 * std::f64::consts::FRAC_PI_2 + 0.3;
            Camera::look_at(
                [5.0 * a.cos(), 5.0 * a.sin(), 2.5],
                [0.0, 0.0, 0.8],
                [0.0, 0.0, 1.0],
                55.0,
                160,
                120,
            )
        })
        .collect();
    let mut backend = CpuBackend::default();
    let figures = measure(
        &mut backend,
        &g,
        &cameras,
        [0.0; 3],
        &WriteOptions::default(),
    )
    .unwrap();
    for f in &figures {
        eprintln!("{}: {} bytes, PSNR {:.2} dB", f.format, f.bytes, f.psnr);
    }
    let psnr = |format: SceneFormat| figures.iter().find(|f| f.format == format).unwrap().psnr;
    // Lossless up to float rounding of exp/sigmoid and their inverses.
    assert!(psnr(SceneFormat::Ply) >= 199.0);
    assert!(psnr(SceneFormat::Glb) > 150.0 && psnr(SceneFormat::Gltf) > 150.0);
    // The quantized formats: thresholds about 3 dB under what they measured when this test was
    // written (compressed PLY 45.6, SPZ 42.9, SOG 61.9, .splat 26.8 dB), so that a change in the
    // quantization shows. .splat keeps no degree-1 SH and clamps colours to [0, 1].
    assert!(psnr(SceneFormat::CompressedPly) > 42.0);
    assert!(psnr(SceneFormat::Spz) > 40.0);
    assert!(psnr(SceneFormat::Sog) > 58.0);
    assert!(psnr(SceneFormat::Splat) > 24.0);
}
