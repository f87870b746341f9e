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
    use splat_io::dataset::colmap::{write, ColmapImage, Points};
    std::fs::create_dir_all(dir).expect("truth folder");
    let images: Vec<ColmapImage> = cams
        .iter()
        .enumerate()
        .map(|(i, c)| ColmapImage {
            id: i as u32 + 1,
            qvec: splat_core::math::mat_to_quat(&c.rotation),
            tvec: c.translation,
            camera_id: 1,
            name: format!("photo_{i:03}.jpg"),
        })
        .collect();
    let c = &cams[0];
    let files = [
        (
            "cameras.txt",
            write::cameras_txt(&[(
                1,
                "PINHOLE",
                c.width as u64,
                c.height as u64,
                vec![c.fx, c.fy, c.cx, c.cy],
            )]),
        ),
        ("images.txt", write::images_txt(&images)),
        ("points3D.txt", write::points3d_txt(&Points::default())),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("truth file");
    }
}
