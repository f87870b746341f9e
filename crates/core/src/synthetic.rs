//! Procedurally generated scenes: the built-in default scene and seeded random scenes for tests.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::sh::{rgb_to_dc, SH_C1};
use crate::{logit, Camera, Gaussians};

/// The built-in scene: a glossy banded sphere and a ring of beads on a checkered floor, about `count`
/// Gaussians with SH degree 1 (the sphere's highlight moves with the view). Deterministic for a count.
pub fn builtin_scene(count: usize) -> Gaussians<f32> {
    let count = count.max(16);
    let mut rng = ChaCha8Rng::seed_from_u64(BUILTIN_SEED);
    let mut g = Gaussians::new(1);
    let n_floor = count * 4 / 10;
    let n_sphere = count * 4 / 10;
    let n_ring = count - n_floor - n_sphere;
    let zero_rest = [0.0f32; 9];

    // Floor: a jittered grid on z = 0, 6 x 6 units, checkered in 0.75-unit squares.
    let side = (n_floor as f64).sqrt().ceil() as usize;
    let cell = 6.0 / side as f64;
    for k in 0..n_floor {
        let (i, j) = (k % side, k / side);
        let x = -3.0 + (i as f64 + rng.random::<f64>()) * cell;
        let y = -3.0 + (j as f64 + rng.random::<f64>()) * cell;
        let checker = ((x / 0.75).floor() as i64 + (y / 0.75).floor() as i64).rem_euclid(2) == 0;
        let rgb = if checker {
            [0.85, 0.82, 0.75]
        } else {
            [0.25, 0.27, 0.32]
        };
        let s = (cell * 0.7).ln() as f32;
        g.push(
            [x as f32, y as f32, 0.0],
            [s, s, (cell * 0.05).ln() as f32],
            [1.0, 0.0, 0.0, 0.0],
            logit(0.95f32),
            rgb.map(|c: f64| rgb_to_dc(c) as f32),
            &zero_rest,
        );
    }

    // Sphere of radius 1 at (0, 0, 1): hue bands by height; SH degree 1 makes the side facing +x brighter.
    let surface_cell = (4.0 * std::f64::consts::PI / n_sphere.max(1) as f64).sqrt();
    for k in 0..n_sphere {
        // Fibonacci sphere for even coverage.
        let t = (k as f64 + 0.5) / n_sphere as f64;
        let z = 1.0 - 2.0 * t;
        let r = (1.0 - z * z).sqrt();
        let phi = k as f64 * 2.399_963_229_728_653;
        let n = [r * phi.cos(), r * phi.sin(), z];
        let hue = (z * 1.5 + 1.5) % 1.0;
        let rgb = hsv(hue * 360.0, 0.7, 0.9);
        let mean = [n[0], n[1], 1.0 + n[2]];
        // Surfel aligned with the surface: rotate z onto the normal.
        let q = quat_from_z_to(n);
        let s_t = (surface_cell * 0.6).ln() as f32;
        let mut rest = zero_rest;
        // Degree-1 coefficients: basis_3 = -C1 x, so a negative coefficient brightens views along +x.
        for ch in 0..3 {
            rest[2 * 3 + ch] = (-0.25 / SH_C1) as f32;
        }
        g.push(
            mean.map(|v| v as f32),
            [s_t, s_t, (surface_cell * 0.08).ln() as f32],
            q.map(|v| v as f32),
            logit(0.98f32),
            rgb.map(|c| rgb_to_dc(c) as f32),
            &rest,
        );
    }

    // Ring of beads around the sphere.
    for k in 0..n_ring {
        let a = k as f64 / n_ring.max(1) as f64 * std::f64::consts::TAU;
        let jitter = [
            rng.random::<f64>() - 0.5,
            rng.random::<f64>() - 0.5,
            rng.random::<f64>() - 0.5,
        ];
        let mean = [
            1.7 * a.cos() + 0.05 * jitter[0],
            1.7 * a.sin() + 0.05 * jitter[1],
            1.0 + 0.3 * (3.0 * a).sin() + 0.05 * jitter[2],
        ];
        let rgb = hsv(a.to_degrees(), 0.9, 1.0);
        let s = 0.04f32.ln();
        g.push(
            mean.map(|v| v as f32),
            [s, s, s],
            [1.0, 0.0, 0.0, 0.0],
            logit(0.9f32),
            rgb.map(|c| rgb_to_dc(c) as f32),
            &zero_rest,
        );
    }
    g
}

/// The default view of the built-in scene.
pub fn builtin_camera(width: u32, height: u32) -> Camera {
    Camera::look_at(
        [4.0, -3.2, 2.6],
        [0.0, 0.0, 0.8],
        [0.0, 0.0, 1.0],
        55.0,
        width,
        height,
    )
}

const BUILTIN_SEED: u64 = 0x5eed_0001;

fn hsv(h: f64, s: f64, v: f64) -> [f64; 3] {
    let c = v * s;
    let hp = (h.rem_euclid(360.0)) / 60.0;
    let x = c * (1.0 - (hp % 2.0 - 1.0).abs());
    let (r, g, b) = match hp as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = v - c;
    [r + m, g + m, b + m]
}

/// Quaternion `(w, x, y, z)` rotating +z onto the unit vector `n`.
fn quat_from_z_to(n: [f64; 3]) -> [f64; 4] {
    let (x, y, z) = (n[0], n[1], n[2]);
    if z < -0.999_999 {
        return [0.0, 1.0, 0.0, 0.0];
    }
    // axis = z x n = (-y, x, 0), w = 1 + z, then normalize.
    let q = [1.0 + z, -y, x, 0.0];
    let norm = q.iter().map(|v| v * v).sum::<f64>().sqrt();
    q.map(|v| v / norm)
}

/// Options for [`random_scene`].
#[derive(Clone, Debug)]
pub struct RandomSceneOptions {
    pub count: usize,
    pub sh_degree: usize,
    /// Range of the log of the scale (before per-axis jitter).
    pub log_scale_range: (f64, f64),
    /// Range of opacity (not logit).
    pub opacity_range: (f64, f64),
    /// Half-extent of the box (in camera-independent world units) the means are drawn from, centred at the origin.
    pub extent: f64,
}

impl Default for RandomSceneOptions {
    fn default() -> Self {
        RandomSceneOptions {
            count: 200,
            sh_degree: 3,
            log_scale_range: (-3.0, -1.0),
            opacity_range: (0.05, 0.95),
            extent: 1.0,
        }
    }
}

/// Seeded random Gaussians: means uniform in a cube, anisotropic scales, random rotations, random SH.
pub fn random_scene(seed: u64, opts: &RandomSceneOptions) -> Gaussians<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut g = Gaussians::new(opts.sh_degree);
    let rest_len = g.sh_rest_len();
    for _ in 0..opts.count {
        let mean = std::array::from_fn(|_| rng.random_range(-opts.extent..opts.extent));
        let base = rng.random_range(opts.log_scale_range.0..opts.log_scale_range.1);
        let log_scale = std::array::from_fn(|_| base + rng.random_range(-0.5..0.5));
        let rotation = std::array::from_fn(|_| rng.random_range(-1.0..1.0));
        let opacity = rng.random_range(opts.opacity_range.0..opts.opacity_range.1);
        let dc = std::array::from_fn(|_| rgb_to_dc(rng.random_range(0.1..0.9)));
        let rest: Vec<f64> = (0..rest_len).map(|_| rng.random_range(-0.3..0.3)).collect();
        g.push(mean, log_scale, rotation, logit(opacity), dc, &rest);
    }
    g
}
