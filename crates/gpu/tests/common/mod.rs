//! Shared by the GPU tests.

use splat_gpu::{AdapterChoice, GpuContext};

/// A device with limits passed through `lower`, any adapter (lavapipe included). Without one the test is
/// skipped with a message, unless `SPLAT_REQUIRE_GPU=1` (set by `.ci/run`) makes that a failure.
pub fn context(lower: impl FnOnce(&mut wgpu::Limits)) -> Option<GpuContext> {
    context_with(lower, splat_gpu::context::OPTIONAL_FEATURES)
}

/// [`context`] using only these optional features.
#[allow(dead_code)]
pub fn context_with(
    lower: impl FnOnce(&mut wgpu::Limits),
    features: wgpu::Features,
) -> Option<GpuContext> {
    match GpuContext::with_options(AdapterChoice::Any, lower, features) {
        Ok(ctx) => {
            eprintln!("GPU: {}", ctx.describe());
            Some(ctx)
        }
        Err(e) => {
            if std::env::var("SPLAT_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("SPLAT_REQUIRE_GPU=1 but no GPU: {e}");
            }
            eprintln!("skipped: {e}");
            None
        }
    }
}

/// A seeded random scene for the projection's tests: some Gaussians behind the camera, some huge, some
/// off-screen (seen from `Camera::look_at([0.4, -0.3, -3.0], origin, ...)`).
#[allow(dead_code)]
pub fn random_gaussians(seed: u64, count: usize, degree: usize) -> splat_core::Gaussians<f32> {
    use splat_core::synthetic::{random_scene, RandomSceneOptions};
    random_scene(
        seed,
        &RandomSceneOptions {
            count,
            sh_degree: degree,
            extent: 3.5,
            log_scale_range: (-4.0, 0.5),
            ..Default::default()
        },
    )
    .cast::<f32>()
}
