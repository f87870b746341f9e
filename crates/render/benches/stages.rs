//! The pipeline stages one by one on the built-in scene (10,000 Gaussians, SH degree 3, 504 x 378, the
//! fern benchmark's size), for the fast CPU backend and the reference: `cargo bench -p splat-render`.
//! Whole training steps on real data: `splat bench` (BENCHMARKS.md).

use divan::Bencher;
use splat_core::synthetic::{builtin_camera, builtin_scene};
use splat_core::tiles::TileGrid;
use splat_core::{Camera, Gaussians};
use splat_render::{Backend, Buffers, CpuBackend, ReferenceBackend, RenderSettings};

fn main() {
    divan::main();
}

struct Setup {
    scene: Gaussians<f32>,
    camera: Camera,
    settings: RenderSettings,
    grid: TileGrid,
    buffers: Buffers,
    grad_image: Vec<f32>,
}

/// A rendered and backpropagated view, so every stage has its inputs.
fn setup(backend: &mut dyn Backend) -> Setup {
    let scene = builtin_scene(10_000);
    let camera = builtin_camera(504, 378);
    let settings = RenderSettings::new(3);
    let mut buffers = Buffers::default();
    splat_render::render(backend, &scene, &camera, &settings, &mut buffers);
    let grad_image: Vec<f32> = (0..buffers.raster.image.len())
        .map(|i| ((i % 7) as f32 - 3.0) * 1e-6)
        .collect();
    splat_render::backward(
        backend,
        &scene,
        &camera,
        &settings,
        &grad_image,
        &mut buffers,
    );
    let grid = TileGrid::new(camera.width, camera.height);
    Setup {
        scene,
        camera,
        settings,
        grid,
        buffers,
        grad_image,
    }
}

fn backend(name: &str) -> Box<dyn Backend> {
    match name {
        "cpu" => Box::new(CpuBackend::new()),
        _ => Box::new(ReferenceBackend),
    }
}

const BACKENDS: &[&str] = &["cpu", "reference"];

#[divan::bench(args = BACKENDS)]
fn project(bencher: Bencher, name: &str) {
    let mut b = backend(name);
    let mut s = setup(b.as_mut());
    bencher.bench_local(|| b.project(&s.scene, &s.camera, &s.settings, &mut s.buffers.projected));
}

#[divan::bench(args = BACKENDS)]
fn bin(bencher: Bencher, name: &str) {
    let mut b = backend(name);
    let mut s = setup(b.as_mut());
    bencher.bench_local(|| b.bin(&s.buffers.projected, &s.grid, &mut s.buffers.bins));
}

#[divan::bench(args = BACKENDS)]
fn rasterize_forward(bencher: Bencher, name: &str) {
    let mut b = backend(name);
    let mut s = setup(b.as_mut());
    bencher.bench_local(|| {
        b.rasterize_forward(
            &s.buffers.projected,
            &s.buffers.bins,
            &s.grid,
            &s.settings,
            &mut s.buffers.raster,
        )
    });
}

#[divan::bench(args = BACKENDS)]
fn rasterize_backward(bencher: Bencher, name: &str) {
    let mut b = backend(name);
    let mut s = setup(b.as_mut());
    bencher.bench_local(|| {
        b.rasterize_backward(
            &s.buffers.projected,
            &s.buffers.bins,
            &s.grid,
            &s.settings,
            &s.buffers.raster,
            &s.grad_image,
            &mut s.buffers.projected_grads,
        )
    });
}

#[divan::bench(args = BACKENDS)]
fn project_backward(bencher: Bencher, name: &str) {
    let mut b = backend(name);
    let mut s = setup(b.as_mut());
    bencher.bench_local(|| {
        b.project_backward(
            &s.scene,
            &s.camera,
            &s.settings,
            &s.buffers.projected,
            &s.buffers.projected_grads,
            &mut s.buffers.grads,
        )
    });
}
