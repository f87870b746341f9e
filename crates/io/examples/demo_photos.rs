//! Writes the demo room's textured photo capture (no poses), the input `splat prepare` is tested on:
//! `cargo run --release -p splat-io --example demo_photos -- DIR [VIEWS] [WIDTH] [HEIGHT]`.
//! The true poses go to `DIR-truth/sparse/0` (COLMAP text), outside DIR, to compare an estimate with.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first() else {
        eprintln!("usage: demo_photos DIR [VIEWS] [WIDTH] [HEIGHT]");
        std::process::exit(2);
    };
    let mut opts = splat_io::dataset::demo::PhotoOptions::default();
    let num = |i: usize, d: u32| args.get(i).map_or(d, |s| s.parse().expect("a number"));
    opts.views = num(1, opts.views as u32) as usize;
    opts.width = num(2, opts.width);
    opts.height = num(3, opts.height);
    match splat_io::dataset::demo::write_demo_photos(std::path::Path::new(dir), &opts) {
        Ok(cams) => {
            let truth = std::path::PathBuf::from(format!("{dir}-truth")).join("sparse/0");
            write_truth(&truth, &cams);
            println!(
                "{} photos in {dir}; their poses in {}",
                cams.len(),
                truth.display()
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

fn write_truth(dir: &std::path::Path, cams: &[splat_core::Camera]) {
    let names: Vec<String> = (0..cams.len())
        .map(|i| format!("photo_{i:03}.jpg"))
        .collect();
    let points = splat_io::dataset::Points::default();
    if let Err(e) = splat_io::dataset::demo::write_pinhole_model(dir, cams, &names, &points) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
