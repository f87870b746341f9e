//! The BENCHMARKS table of the scene formats: a trained scene written and read back in every
//! format, each rendered at the dataset's test views against the scene's own renders.
//!
//! `cargo run --release -p splat-train --example format_fidelity -- DATA PLY [IMAGES]`
//! (IMAGES: the image folder the scene was trained on, e.g. images_8).

use std::path::Path;

use splat_io::dataset::{self, LoadOptions};
use splat_io::formats::WriteOptions;
use splat_render::cpu::CpuBackend;
use splat_train::fidelity::measure;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: format_fidelity DATA PLY [IMAGES]".into());
    }
    let opts = LoadOptions {
        images: args.get(3).cloned(),
        eval: true,
        ..Default::default()
    };
    let ds = dataset::load(Path::new(&args[1]), &opts)?;
    let (views, split) = ds.eval_views();
    let cameras: Vec<_> = views.iter().map(|v| v.camera.clone()).collect();
    let g = splat_io::read_scene(Path::new(&args[2]))?;
    println!(
        "{} Gaussians, SH degree {}, {} {split} views",
        g.len(),
        g.sh_degree,
        cameras.len()
    );
    let figures = measure(
        &mut CpuBackend::default(),
        &g,
        &cameras,
        ds.background,
        &WriteOptions::default(),
    )?;
    println!("| format | bytes | bytes a splat | write s | read s | PSNR vs PLY (dB) |");
    println!("|---|---|---|---|---|---|");
    for f in figures {
        println!(
            "| {} | {} | {:.1} | {:.3} | {:.3} | {} |",
            f.format,
            f.bytes,
            f.bytes as f64 / g.len().max(1) as f64,
            f.write_seconds,
            f.read_seconds,
            if f.psnr >= 199.0 {
                "identical".to_string()
            } else {
                format!("{:.2}", f.psnr)
            }
        );
    }
    Ok(())
}
