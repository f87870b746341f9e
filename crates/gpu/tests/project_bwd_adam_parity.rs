//! The projection backward fused with Adam (`GpuProjectBackwardAdam`, the resident step's) against the
//! unfused kernels it replaces (`GpuProjectBackward` storing the gradients, then `GpuAdam` per group):
//! the same bits over several steps, every SH degree, antialiased or not, groups left out on some steps,
//! and in chunks under lowered binding limits; a non-finite gradient changes nothing.

mod common;

use rand::{Rng, SeedableRng};
use splat_core::{Camera, Gaussians};
use splat_gpu::{GpuAdam, GpuContext, GpuProjectBackward, GpuProjectBackwardAdam};
use splat_render::{project, GaussianGrads, Projected, ProjectedGrads, RenderSettings};
use splat_train::adam::{AdamState, BETA1, BETA2, EPS};
use splat_train::state::{group_params, group_width, GROUPS};

fn camera() -> Camera {
    Camera::look_at(
        [0.4, -0.3, -3.0],
        [0.0, 0.0, 0.0],
        [0.0, -1.0, 0.0],
        60.0,
        160,
        120,
    )
}

fn scene(seed: u64, count: usize, degree: usize, antialiased: bool) -> Gaussians<f32> {
    let mut g = common::random_gaussians(seed, count, degree);
    g.antialiased = antialiased;
    g
}

fn random_grads(n: usize, seed: u64) -> ProjectedGrads<f32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut r = || rng.random_range(-1.0f32..1.0);
    let mut pg = ProjectedGrads::default();
    pg.reset(n);
    for i in 0..n {
        pg.grad_means2d[i] = [r(), r()];
        pg.grad_conics[i] = [r() * 10.0, r() * 10.0, r() * 10.0];
        pg.grad_colors[i] = [r(), r(), r()];
        pg.grad_opacities[i] = r();
    }
    pg
}

/// Group `g` of the stored gradients, flattened like [`group_params`].
fn group_grads(grads: &GaussianGrads<f32>, g: usize) -> &[f32] {
    match g {
        0 => grads.means.as_flattened(),
        1 => grads.sh_dc.as_flattened(),
        2 => &grads.sh_rest,
        3 => &grads.opacity_logits,
        4 => grads.log_scales.as_flattened(),
        _ => grads.rotations.as_flattened(),
    }
}

/// Learning rates of step `s`: every group, but the opacities on the second and the SH rest on the third.
fn lrs(s: usize) -> [Option<f64>; 6] {
    let mut lrs = [0.0016, 0.0025, 0.000125, 0.05, 0.005, 0.001].map(Some);
    match s {
        1 => lrs[3] = None,
        2 => lrs[2] = None,
        _ => {}
    }
    lrs
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// Three steps both ways from the same scene; returns how many values were compared.
fn fused_equals_unfused(ctx: &GpuContext, degree: usize, antialiased: bool, count: usize) -> usize {
    let unfused_bwd = GpuProjectBackward::new(ctx);
    let adam = GpuAdam::new(ctx);
    let fused =
        GpuProjectBackwardAdam::new(ctx).expect("lavapipe binds 32 storage buffers a stage");
    let cam = camera();
    let settings = RenderSettings::new(degree);
    let start = scene(40 + degree as u64, count, degree, antialiased);
    let moments = |g: &Gaussians<f32>| -> Vec<AdamState> {
        (0..GROUPS.len())
            .map(|k| AdamState::zeros(g.len() * group_width(g, k)))
            .collect()
    };
    let (mut a, mut b) = (start.clone(), start.clone());
    let (mut adam_a, mut adam_b) = (moments(&a), moments(&b));
    for s in 0..3 {
        // The projection of the (equal) current state; the rasterizer's gradients at random.
        assert_eq!(bits(a.means.as_flattened()), bits(b.means.as_flattened()));
        let mut p = Projected::default();
        project::project(&a, &cam, &settings, &mut p);
        let pg = random_grads(a.len(), s as u64);
        let mut stored = GaussianGrads::default();
        unfused_bwd
            .run(ctx, &a, &cam, &settings, &p, &pg, &mut stored)
            .expect("project backward");
        for (g, lr) in lrs(s).iter().enumerate() {
            let Some(lr) = *lr else { continue };
            let state = &mut adam_a[g];
            state.step += 1;
            let (m, v) = (&mut state.m, &mut state.v);
            adam.update(
                ctx,
                group_params(&mut a, g),
                group_grads(&stored, g),
                m,
                v,
                lr,
                (BETA1, BETA2),
                EPS,
                state.step,
            )
            .expect("Adam");
        }
        let applied = fused
            .run(
                ctx,
                &mut b,
                &mut adam_b,
                &cam,
                &settings,
                &p,
                &pg,
                lrs(s),
                ((BETA1, BETA2), EPS),
            )
            .expect("fused");
        assert!(applied, "every gradient is finite");
    }
    let mut compared = 0;
    for g in 0..GROUPS.len() {
        let name = GROUPS[g];
        assert_eq!(adam_a[g].step, adam_b[g].step, "{name}");
        let pairs = [
            (
                group_params(&mut a, g).to_vec(),
                group_params(&mut b, g).to_vec(),
            ),
            (adam_a[g].m.clone(), adam_b[g].m.clone()),
            (adam_a[g].v.clone(), adam_b[g].v.clone()),
        ];
        for (x, y) in pairs {
            if let Some(i) = (0..x.len()).find(|&i| x[i].to_bits() != y[i].to_bits()) {
                panic!(
                    "{name}[{i}] (degree {degree}): unfused {} vs fused {}",
                    x[i], y[i]
                );
            }
            compared += x.len();
        }
    }
    // The steps moved something: the moments of every updated group are not all zero.
    assert!(adam_b
        .iter()
        .filter(|s| !s.m.is_empty())
        .all(|s| s.m.iter().any(|&m| m != 0.0)));
    compared
}

#[test]
fn fused_backward_and_adam_equal_the_unfused_kernels() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    for (degree, antialiased) in [(0, false), (1, true), (2, false), (3, false), (3, true)] {
        let compared = fused_equals_unfused(&ctx, degree, antialiased, 1500);
        eprintln!("degree {degree}, antialiased {antialiased}: {compared} values, the same bits");
    }
}

/// 64 KiB bindings: chunks of 256 Gaussians (the most whose stored gradients, 236 bytes each at SH 3, fit,
/// rounded down to the 256 a chunk's offsets stay aligned with), so 1,500 Gaussians take six.
#[test]
fn fused_backward_and_adam_in_chunks_change_nothing() {
    let Some(ctx) = common::context(|l| l.max_storage_buffer_binding_size = 64 * 1024) else {
        return;
    };
    assert_eq!(GpuProjectBackwardAdam::chunk_len(&ctx, 45), 256);
    fused_equals_unfused(&ctx, 3, false, 1500);
}

#[test]
fn a_non_finite_gradient_changes_nothing() {
    let Some(ctx) = common::context(|_| {}) else {
        return;
    };
    let fused = GpuProjectBackwardAdam::new(&ctx).unwrap();
    let cam = camera();
    let settings = RenderSettings::new(3);
    let start = scene(7, 500, 3, false);
    let mut p = Projected::default();
    project::project(&start, &cam, &settings, &mut p);
    let visible = (0..start.len())
        .find(|&i| p.radii[i] > 0)
        .expect("a visible Gaussian");
    let mut pg = random_grads(start.len(), 9);
    pg.grad_conics[visible][1] = f32::INFINITY;
    let mut g = start.clone();
    let mut adam: Vec<AdamState> = (0..GROUPS.len())
        .map(|k| AdamState::zeros(g.len() * group_width(&g, k)))
        .collect();
    let step = |g: &mut Gaussians<f32>, adam: &mut [AdamState], pg: &ProjectedGrads<f32>| {
        let betas = ((BETA1, BETA2), EPS);
        fused
            .run(&ctx, g, adam, &cam, &settings, &p, pg, lrs(0), betas)
            .unwrap()
    };
    assert!(!step(&mut g, &mut adam, &pg));
    assert_eq!(
        bits(g.means.as_flattened()),
        bits(start.means.as_flattened())
    );
    assert_eq!(bits(&g.sh_rest), bits(&start.sh_rest));
    assert!(adam
        .iter()
        .all(|s| s.step == 0 && s.m.iter().all(|&m| m == 0.0)));
    // The same gradients made finite apply.
    pg.grad_conics[visible][1] = 1.0;
    assert!(step(&mut g, &mut adam, &pg));
    assert_ne!(
        bits(g.means.as_flattened()),
        bits(start.means.as_flattened())
    );
}

/// An adapter binding fewer storage buffers a stage than the fused kernel needs is told so.
#[test]
fn too_few_storage_bindings_are_refused_with_the_limit() {
    let Some(ctx) = common::context(|l| l.max_storage_buffers_per_shader_stage = 16) else {
        return;
    };
    let err = GpuProjectBackwardAdam::new(&ctx).err().expect("refused");
    assert!(
        err.contains("16 storage buffers") && err.contains("24"),
        "{err}"
    );
}
