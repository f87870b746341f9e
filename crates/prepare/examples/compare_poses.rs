//! Poses of one COLMAP model against another's after a similarity alignment (images matched by
//! name): `cargo run --release -p splat-prepare --example compare_poses -- ESTIMATED_MODEL KNOWN_MODEL`
//! (each a folder with cameras/images/points3D .bin or .txt, e.g. DATASET/sparse/0).
use splat_prepare::align::{compare, read_poses, PoseErrors};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [est, known] = args.as_slice() else {
        eprintln!("usage: compare_poses ESTIMATED_MODEL KNOWN_MODEL");
        std::process::exit(2);
    };
    let read = |p: &str| {
        read_poses(std::path::Path::new(p)).unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(1)
        })
    };
    let (est, known) = (read(est), read(known));
    let Some(e) = compare(&est, &known) else {
        eprintln!("error: fewer than 3 images in common, or all centres in one place");
        std::process::exit(1);
    };
    println!(
        "{} of {} known images matched; scale {:.4}; centre and orientation alignments {:.3} deg apart\n\
         rotation error: median {:.3} deg, max {:.3} deg\n\
         position error: median {:.4}, max {:.4} (known units; camera spread {:.4}: median {:.2}% of it)",
        e.matched,
        known.len(),
        e.similarity.scale,
        e.alignment_gap_deg,
        PoseErrors::median(&e.rotation_deg),
        PoseErrors::max(&e.rotation_deg),
        PoseErrors::median(&e.position),
        PoseErrors::max(&e.position),
        e.extent,
        100.0 * PoseErrors::median(&e.position) / e.extent
    );
}
