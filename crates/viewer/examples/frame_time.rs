//! Time of one viewer frame (render + encode), as the server produces it, from a dataset camera at
//! its own size and at twice its size: PNG at rest, half-size JPEG while moving. Median of 10.
//!
//! `cargo run --release -p splat-viewer --example frame_time -- PLY DATASET [IMAGES_SUBDIR]`

use std::path::Path;
use std::time::Instant;

use splat_io::dataset::{self, LoadOptions};
use splat_render::{Buffers, CpuBackend};
use splat_viewer::{render_frame, scaled};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (ply, data) = (Path::new(&args[0]), Path::new(&args[1]));
    let opts = LoadOptions {
        images: args.get(2).cloned(),
        ..Default::default()
    };
    let g = splat_io::read_ply(ply).expect("PLY");
    let ds = dataset::load(data, &opts).expect("dataset");
    let cam = &ds.train[0].camera;
    let mut backend = CpuBackend::new();
    let mut buffers = Buffers::default();
    for s in [1.0, 2.0] {
        let full = scaled(cam, s);
        for (what, c, png) in [
            ("rest (PNG)", full.clone(), true),
            ("moving (JPEG, half size)", scaled(&full, 0.5), false),
        ] {
            let mut times = Vec::new();
            let mut bytes = 0;
            for _ in 0..12 {
                let t = Instant::now();
                bytes = render_frame(
                    &mut backend,
                    &mut buffers,
                    &g,
                    g.sh_degree,
                    ds.background,
                    &c,
                    png,
                )
                .len();
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
            times.drain(..2);
            times.sort_by(f64::total_cmp);
            println!(
                "{} Gaussians, {} x {} {what}: {:.1} ms median, {bytes} bytes",
                g.len(),
                c.width,
                c.height,
                times[times.len() / 2]
            );
        }
    }
}
