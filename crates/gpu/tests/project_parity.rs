//! The GPU project + SH stage against the CPU reference on seeded random scenes, and with device limits
//! lowered so that the work is split into chunks and 2D dispatches (results must not change).
//!
//! Needs a GPU or lavapipe (`mesa-vulkan-drivers`); without one the tests print why and pass, unless
//! `SPLAT_REQUIRE_GPU=1` (set by `.ci/run`) turns that into a failure.

mod common;

use common::context;
use splat_core::{Camera, Gaussians, Projection};
use splat_gpu::GpuProject;
use splat_render::{project, Projected, RenderSettings};

fn camera(w: u32, h: u32) -> Camera {
    Camera::look_at(
        [0.4, -0.3, -3.0],
        [0.0, 0.0, 0.0],
        [0.0, -1.0, 0.0],
        60.0,
        w,
        h,
    )
}

/// [`camera`] as an equidistant fisheye seeing 160 degrees across (the scene surrounds it: Gaussians on
/// the axis, at the side and behind).
fn fisheye_camera(w: u32, h: u32) -> Camera {
    let mut cam = camera(w, h);
    cam.projection = Projection::Equidistant;
    cam.fx = 0.5 * w as f64 / 80f64.to_radians();
    cam.fy = cam.fx;
    cam
}

/// The 320 x 240 test camera, pinhole or fisheye.
fn camera_of(fisheye: bool) -> Camera {
    if fisheye {
        fisheye_camera(320, 240)
    } else {
        camera(320, 240)
    }
}

fn scene(seed: u64, count: usize, degree: usize) -> Gaussians<f32> {
    common::random_gaussians(seed, count, degree)
}

fn rel_close(what: &str, i: usize, a: f32, b: f32, rel: f32, abs: f32) {
    let tol = rel * a.abs().max(b.abs()) + abs;
    assert!(
        (a - b).abs() <= tol,
        "{what}[{i}]: gpu {a} vs reference {b}"
    );
}

/// Compares two projections; returns how many Gaussians are visible in both.
fn compare(gpu: &Projected<f32>, reference: &Projected<f32>, cam: &Camera) -> usize {
    let centre = [cam.cx as f32, cam.cy as f32];
    let mut both = 0;
    let mut borderline = 0;
    for i in 0..reference.len() {
        let (g, r) = (gpu.radii[i], reference.radii[i]);
        if (g == 0) != (r == 0) || g.abs_diff(r) > 1 || gpu.tile_rects[i] != reference.tile_rects[i]
        {
            // A decision taken on a value within rounding of a threshold (ceil of the radius, a tile
            // edge, the near plane) may go either way; anything more is a bug.
            borderline += 1;
            continue;
        }
        if r == 0 {
            continue;
        }
        both += 1;
        // u = fx x / z + cx rounds like fx x / z, which can be far larger than u (the fisheye's
        // atan2 differs by ulps between devices): relative to the offset from the principal point.
        for k in 0..2 {
            let offset = (reference.means2d[i][k] - centre[k]).abs();
            rel_close(
                "means2d",
                i,
                gpu.means2d[i][k],
                reference.means2d[i][k],
                1e-5,
                1e-4 + 1e-5 * offset,
            );
        }
        // The off-diagonal's rounding is relative to the diagonal (f32 against f64 on the fisheye:
        // 1e-3 of a nearly round Gaussian's tiny off-diagonal, 1e-8 of its diagonal).
        let diagonal = reference.conics[i][0]
            .abs()
            .max(reference.conics[i][2].abs());
        for k in 0..3 {
            rel_close(
                "conics",
                i,
                gpu.conics[i][k],
                reference.conics[i][k],
                1e-4,
                1e-7 + 1e-5 * diagonal,
            );
            rel_close(
                "colors",
                i,
                gpu.colors[i][k],
                reference.colors[i][k],
                0.0,
                1e-5,
            );
        }
        // depth = row . mean + t sums terms of the scene's size (~4): a GPU that contracts to FMA
        // (NVIDIA) differs by ulps of those terms, not of a small depth.
        rel_close("depths", i, gpu.depths[i], reference.depths[i], 1e-6, 1e-6);
        rel_close(
            "opacities",
            i,
            gpu.opacities[i],
            reference.opacities[i],
            0.0,
            1e-6,
        );
        for k in 0..3 {
            if gpu.color_clamped[i][k] != reference.color_clamped[i][k] {
                assert!(reference.colors[i][k].abs() < 1e-5, "clamp flag {i}.{k}");
            }
        }
    }
    assert!(
        borderline * 200 <= reference.len(),
        "{borderline} of {} Gaussians differ in visibility, radius or tiles",
        reference.len()
    );
    both
}

#[test]
fn project_matches_reference_every_degree() {
    let Some(ctx) = context(|_| {}) else { return };
    let stage = GpuProject::new(&ctx);
    let cases = [
        (0, false),
        (1, false),
        (2, true),
        (3, false),
        (3, true),
        (1, false),
    ];
    for (k, (degree, antialiased)) in cases.into_iter().enumerate() {
        let mut g = scene(10 + k as u64, 3000, degree);
        g.antialiased = antialiased;
        // The last case through the fisheye.
        let fisheye = k == cases.len() - 1;
        let cam = camera_of(fisheye);
        let settings = RenderSettings::new(degree);
        let mut reference = Projected::default();
        project::project(&g, &cam, &settings, &mut reference);
        let mut gpu = Projected::default();
        stage
            .run(&ctx, &g, &cam, &settings, &mut gpu)
            .expect("GPU project");
        let visible = compare(&gpu, &reference, &cam);
        assert!(visible > 500, "degree {degree}: only {visible} visible");
        if fisheye {
            // Beyond 60 degrees from the axis, where the fisheye is far from any pinhole.
            let wide = (0..g.len())
                .filter(|&i| reference.radii[i] > 0)
                .filter(|&i| {
                    let [u, v] = reference.means2d[i];
                    (u - 160.0).hypot(v - 120.0) > cam.fx as f32 * 60f32.to_radians()
                })
                .count();
            assert!(wide > 100, "only {wide} Gaussians beyond 60 degrees");
        }
        let compensated = (0..g.len())
            .filter(|&i| {
                reference.radii[i] > 0
                    && reference.opacities[i] < 0.9 * splat_core::sigmoid(g.opacity_logits[i])
            })
            .count();
        assert_eq!(compensated > 50, antialiased, "{compensated} compensated");
    }
}

#[test]
fn lowered_limits_split_the_work_without_changing_results() {
    let Some(full) = context(|_| {}) else { return };
    let Some(small) = context(|l| {
        // 64 KiB bindings: 362 Gaussians of SH rest per chunk, rounded down to whole alignment units.
        l.max_storage_buffer_binding_size = 64 * 1024;
        // 4 workgroups per dimension: 2D dispatches.
        l.max_compute_workgroups_per_dimension = 4;
    }) else {
        return;
    };
    let g = scene(77, 5000, 3);
    let chunk = GpuProject::chunk_len(&small, g.sh_rest_len());
    assert!(
        g.len().div_ceil(chunk) >= 10,
        "the lowered limits should split 5000 Gaussians into many chunks, got chunks of {chunk}"
    );
    let cam = camera(200, 150);
    let settings = RenderSettings::new(3);
    let mut a = Projected::default();
    let mut b = Projected::default();
    GpuProject::new(&full)
        .run(&full, &g, &cam, &settings, &mut a)
        .expect("full limits");
    GpuProject::new(&small)
        .run(&small, &g, &cam, &settings, &mut b)
        .expect("lowered limits");
    assert_eq!(a.radii, b.radii);
    assert_eq!(a.tile_rects, b.tile_rects);
    for i in 0..a.len() {
        if a.radii[i] > 0 {
            assert_eq!(a.means2d[i], b.means2d[i], "{i}");
            assert_eq!(a.conics[i], b.conics[i], "{i}");
            assert_eq!(a.colors[i], b.colors[i], "{i}");
        }
    }
}

/// `|a - b| <= rel max(|a|, |b|) + 1e-5 max|b|` elementwise; returns the largest difference as a
/// fraction of its tolerance.
fn close(what: &str, a: &[f32], b: &[f32], rel: f32) -> f32 {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let scale = b.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let mut worst = 0.0f32;
    for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
        let tol = rel * x.abs().max(y.abs()) + 1e-5 * scale;
        assert!(
            (x - y).abs() <= tol,
            "{what}[{i}]: gpu {x} vs reference {y}"
        );
        worst = worst.max((x - y).abs() / tol);
    }
    worst
}

#[test]
fn project_backward_matches_reference_every_degree() {
    use rand::{Rng, SeedableRng};
    use splat_gpu::GpuProjectBackward;
    use splat_render::{project_bwd, GaussianGrads, ProjectedGrads};
    let Some(ctx) = context(|_| {}) else { return };
    let stage = GpuProjectBackward::new(&ctx);
    let cases = [
        (0, false),
        (1, true),
        (2, false),
        (3, false),
        (3, true),
        (2, true),
    ];
    for (k, (degree, antialiased)) in cases.into_iter().enumerate() {
        let mut g = scene(30 + k as u64, 2000, degree);
        g.antialiased = antialiased;
        let cam = camera_of(k == cases.len() - 1);
        let mut settings = RenderSettings::new(degree);
        // The camera pose's gradient on every other case (the packed stride grows by 12).
        settings.pose_grads = k % 2 == 1;
        let mut p = Projected::default();
        project::project(&g, &cam, &settings, &mut p);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(k as u64);
        let mut r = || rng.random_range(-1.0f32..1.0);
        let mut pg = ProjectedGrads::default();
        pg.reset(g.len());
        for i in 0..g.len() {
            pg.grad_means2d[i] = [r(), r()];
            pg.grad_conics[i] = [r() * 10.0, r() * 10.0, r() * 10.0];
            pg.grad_colors[i] = [r(), r(), r()];
            pg.grad_opacities[i] = r();
        }
        let mut reference = GaussianGrads::default();
        let pose_reference =
            project_bwd::project_backward(&g, &cam, &settings, &p, &pg, &mut reference);
        let mut gpu = GaussianGrads::default();
        let pose_gpu = stage
            .run(&ctx, &g, &cam, &settings, &p, &pg, &mut gpu)
            .expect("GPU project backward");
        if settings.pose_grads {
            check_pose(&pose_gpu.to_array(), &pose_reference.to_array());
        } else {
            assert_eq!(pose_gpu, splat_render::PoseGrads::default());
        }
        let mut worst = 0.0f32;
        for (what, a, b) in [
            (
                "means",
                gpu.means.as_flattened(),
                reference.means.as_flattened(),
            ),
            (
                "log_scales",
                gpu.log_scales.as_flattened(),
                reference.log_scales.as_flattened(),
            ),
            (
                "rotations",
                gpu.rotations.as_flattened(),
                reference.rotations.as_flattened(),
            ),
            (
                "opacity_logits",
                &gpu.opacity_logits[..],
                &reference.opacity_logits[..],
            ),
            (
                "sh_dc",
                gpu.sh_dc.as_flattened(),
                reference.sh_dc.as_flattened(),
            ),
            ("sh_rest", &gpu.sh_rest[..], &reference.sh_rest[..]),
        ] {
            worst = worst.max(close(what, a, b, 1e-3));
        }
        eprintln!("degree {degree}: largest difference {worst:.2} of the tolerance");
        assert!(reference.means.iter().any(|m| m[0] != 0.0));
    }
}

/// The camera pose's gradient (sums over every Gaussian of f32 terms): within 1e-4 of its largest entry.
fn check_pose(gpu: &[f64; 12], reference: &[f64; 12]) {
    let scale = reference.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(scale > 0.0, "no pose gradient");
    let worst = gpu
        .iter()
        .zip(reference)
        .map(|(a, b)| (a - b).abs() / scale)
        .fold(0.0, f64::max);
    eprintln!("pose gradient: largest difference {worst:.2e} of the largest entry");
    assert!(worst < 1e-4, "{gpu:?} vs {reference:?}");
}
