//! Helpers shared by the render tests: seeded scenes, cameras and a full f64/f32 pass.
#![allow(dead_code)]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use splat_core::synthetic::{random_scene, RandomSceneOptions};
use splat_core::{logit, Camera, Gaussians, Real, TileGrid};
use splat_render::{bin, project, project_bwd, rasterize_bwd, rasterize_fwd};
use splat_render::{Bins, GaussianGrads, Projected, ProjectedGrads, RasterOutput, RenderSettings};

/// A camera 4 units from the origin looking at it.
pub fn test_camera(width: u32, height: u32) -> Camera {
    Camera::look_at(
        [0.4, -0.3, -4.0],
        [0.0, 0.0, 0.0],
        [0.0, -1.0, 0.0],
        60.0,
        width,
        height,
    )
}

/// Everything one forward pass produces, in any scalar type.
pub struct Pass<F> {
    pub projected: Projected<F>,
    pub bins: Bins,
    pub raster: RasterOutput<F>,
}

/// Runs project, bin and rasterize with the reference functions; outputs are poisoned first.
pub fn forward<F: Real>(g: &Gaussians<F>, cam: &Camera, settings: &RenderSettings) -> Pass<F> {
    let grid = TileGrid::new(cam.width, cam.height);
    let mut projected = Projected::default();
    project::project(g, cam, settings, &mut projected);
    let mut bins = Bins::default();
    bin::bin(&projected, &grid, &mut bins);
    let mut raster = RasterOutput::default();
    raster.resize(cam.width, cam.height);
    raster.poison();
    rasterize_fwd::rasterize_forward(&projected, &bins, &grid, settings, &mut raster);
    Pass {
        projected,
        bins,
        raster,
    }
}

/// Runs the whole backward after [`forward`].
pub fn backward<F: Real>(
    g: &Gaussians<F>,
    cam: &Camera,
    settings: &RenderSettings,
    pass: &Pass<F>,
    grad_image: &[F],
) -> (ProjectedGrads<F>, GaussianGrads<F>) {
    let grid = TileGrid::new(cam.width, cam.height);
    let mut pg = ProjectedGrads::default();
    rasterize_bwd::rasterize_backward(
        &pass.projected,
        &pass.bins,
        &grid,
        settings,
        &pass.raster,
        grad_image,
        &mut pg,
    );
    let mut grads = GaussianGrads::default();
    project_bwd::project_backward(g, cam, settings, &pass.projected, &pg, &mut grads);
    (pg, grads)
}

/// Seeded weights in [-1, 1]: the loss `sum(w * image)` makes every pixel matter with a different sign.
pub fn random_weights(seed: u64, n: usize) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-1.0..1.0)).collect()
}

/// A scene that exercises the corner cases of the tiled path: ordinary Gaussians, a dense clump (hundreds
/// per tile), partly off-screen ones, ones behind the camera or on the near plane, huge and tiny ones.
pub fn stress_scene(seed: u64, sh_degree: usize) -> Gaussians<f64> {
    let mut g = random_scene(
        seed,
        &RandomSceneOptions {
            count: 150,
            sh_degree,
            ..Default::default()
        },
    );
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xabcdef);
    let rest_len = g.sh_rest_len();
    let add = |g: &mut Gaussians<f64>,
               mean: [f64; 3],
               log_scale: f64,
               opacity: f64,
               rng: &mut ChaCha8Rng| {
        let rot = std::array::from_fn(|_| rng.random_range(-1.0..1.0));
        let dc = std::array::from_fn(|_| rng.random_range(-1.0..1.5));
        let rest: Vec<f64> = (0..rest_len).map(|_| rng.random_range(-0.3..0.3)).collect();
        let ls = std::array::from_fn(|_| log_scale + rng.random_range(-0.7..0.7));
        g.push(mean, ls, rot, logit(opacity), dc, &rest);
    };
    // Dense clump: 300 Gaussians within 0.15 units around a point.
    for _ in 0..300 {
        let m = std::array::from_fn(|k| [0.2, 0.1, 0.0][k] + rng.random_range(-0.15..0.15));
        let o = rng.random_range(0.02..0.6);
        add(&mut g, m, -2.5, o, &mut rng);
    }
    // Partly off-screen, beyond the Jacobian clamp.
    for _ in 0..20 {
        let side = if rng.random::<bool>() { 1.0 } else { -1.0 };
        let m = [
            side * rng.random_range(2.3..4.0),
            rng.random_range(-3.0..3.0),
            rng.random_range(-0.5..1.0),
        ];
        add(&mut g, m, -0.5, 0.7, &mut rng);
    }
    // Behind the camera (camera is at z = -4 looking along +z) and straddling the near plane.
    for _ in 0..10 {
        let m = [
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-8.0..-3.85),
        ];
        add(&mut g, m, -1.0, 0.8, &mut rng);
    }
    // Huge (covering the whole image) and tiny (below a pixel, the dilation dominates).
    for _ in 0..3 {
        let m = std::array::from_fn(|_| rng.random_range(-0.5..0.5));
        add(&mut g, m, 1.2, 0.3, &mut rng);
    }
    for _ in 0..30 {
        let m = std::array::from_fn(|_| rng.random_range(-1.0..1.0));
        add(&mut g, m, -9.0, 0.9, &mut rng);
    }
    g
}
