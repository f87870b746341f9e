//! Measures the two ways the GPU rasterize backward sums a Gaussian's per-tile gradients (issue 7 asks
//! for the comparison): per-intersection records and a gather (deterministic, the default) against
//! compare-and-swap float atomics. One view of a dataset at its initial Gaussians; the forward comes from
//! the CPU path, each backward is timed whole (upload, kernels, read-back) in alternation.
//!
//! `cargo run --release -p splat-gpu --example raster_backward_sums -- ../shared/data/fern images_8 [runs]`

use std::sync::Arc;
use std::time::Instant;

use splat_core::TileGrid;
use splat_gpu::{AdapterChoice, BackwardSums, GpuContext, GpuRasterize};
use splat_io::dataset::{self, LoadOptions};
use splat_render::{Buffers, CpuBackend, ProjectedGrads, RenderSettings};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let data = args.get(1).map_or("../shared/data/fern", |s| s.as_str());
    let images = args.get(2).map_or("images_8", |s| s.as_str());
    let runs: usize = args.get(3).map_or(Ok(5), |s| s.parse())?;
    let ds = dataset::load(
        std::path::Path::new(data),
        &LoadOptions {
            images: Some(images.into()),
            ..Default::default()
        },
    )?;
    let ctx = Arc::new(GpuContext::new(AdapterChoice::Any)?);
    eprintln!("GPU: {}", ctx.describe());
    let g = splat_train::init::gaussians_from_points(&ds.points, 3);
    let cam = &ds.train[0].camera;
    let settings = RenderSettings::new(3);
    let mut cpu = CpuBackend::new();
    let mut b = Buffers::default();
    splat_render::render(&mut cpu, &g, cam, &settings, &mut b);
    let grid = TileGrid::new(cam.width, cam.height);
    let grad_image: Vec<f32> = (0..b.raster.image.len())
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    let mut raster = GpuRasterize::new(&ctx);
    let mut out = [ProjectedGrads::default(), ProjectedGrads::default()];
    let mut times = [Vec::new(), Vec::new()];
    for run in 0..=runs {
        for (k, sums) in [BackwardSums::Records, BackwardSums::Atomic]
            .into_iter()
            .enumerate()
        {
            raster.sums = sums;
            let t = Instant::now();
            raster.backward(
                &ctx,
                &b.projected,
                &b.bins,
                &grid,
                &settings,
                &b.raster,
                &grad_image,
                &mut out[k],
            )?;
            if run > 0 {
                times[k].push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (r, a) = (median(&mut times[0]), median(&mut times[1]));
    let flat = |g: &ProjectedGrads<f32>| -> Vec<f32> {
        g.grad_means2d
            .as_flattened()
            .iter()
            .chain(g.grad_conics.as_flattened())
            .chain(g.grad_colors.as_flattened())
            .chain(&g.grad_opacities)
            .copied()
            .collect()
    };
    let (x, y) = (flat(&out[0]), flat(&out[1]));
    let scale = x.iter().fold(0.0f32, |m, v| m.max(v.abs())).max(1e-30);
    let diff = x
        .iter()
        .zip(&y)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max)
        / scale;
    println!(
        "{} Gaussians, {} intersections, {} x {}: records + gather {r:.1} ms, atomics {a:.1} ms \
         (median of {runs}; atomics / records = {:.3}); largest difference {diff:.1e} of the largest gradient",
        g.len(),
        b.bins.gaussian_ids.len(),
        cam.width,
        cam.height,
        a / r
    );
    Ok(())
}
