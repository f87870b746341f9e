//! Entry points of the fuzz targets (`fuzz/`, run with `cargo +nightly fuzz run TARGET`) and of
//! the corpus-replay test that runs in CI: one function per reader, taking the raw bytes of one file.
//!
//! Each target asserts more than "no panic": a rejected input must give an error naming the file,
//! and an accepted one must satisfy the reader's contract (a PLY writes back and re-reads to the
//! same scene; parsed values are finite).

use std::path::Path;

use crate::dataset::{colmap, imageload, llff, transforms};
use crate::formats::{self, SceneFormat};

/// The readers that are fuzzed, by target name.
pub const TARGETS: &[&str] = &[
    "ply",
    "colmap_cameras_bin",
    "colmap_images_bin",
    "colmap_points_bin",
    "colmap_cameras_txt",
    "colmap_images_txt",
    "colmap_points_txt",
    "transforms_json",
    "poses_bounds_npy",
    "image",
    "compressed_ply",
    "splat",
    "spz",
    "sog",
    "glb",
    "gltf",
];

/// The name errors must carry; no file of this name is read.
pub const FUZZ_PATH: &str = "/nonexistent/splat-fuzz-input";

/// Feeds `bytes` to the reader named `target`. `Ok(true)` when the reader accepted the input,
/// `Ok(false)` when it refused it properly; panics (the finding) when a contract is broken.
pub fn run(target: &str, bytes: &[u8]) -> Result<bool, String> {
    let path = Path::new(FUZZ_PATH);
    let outcome: Result<(), String> = match target {
        "ply" => crate::read_ply_bytes(bytes, path)
            .map(|g| {
                // Whatever loads writes back, and what is written reads back identically.
                let out = crate::ply_bytes(&g).expect("a loaded scene is finite");
                let again = crate::read_ply_bytes(&out, path).expect("written PLY re-reads");
                assert_eq!(again.len(), g.len());
                assert_eq!(crate::ply_bytes(&again).unwrap(), out, "PLY round trip");
            })
            .map_err(|e| e.to_string()),
        "colmap_cameras_bin" => colmap::parse_cameras_bin(bytes, path)
            .map(|c| check_cameras(&c))
            .map_err(|e| e.to_string()),
        "colmap_cameras_txt" => colmap::parse_cameras_txt(bytes, path)
            .map(|c| check_cameras(&c))
            .map_err(|e| e.to_string()),
        "colmap_images_bin" => colmap::parse_images_bin(bytes, path)
            .map(|i| check_images(&i))
            .map_err(|e| e.to_string()),
        "colmap_images_txt" => colmap::parse_images_txt(bytes, path)
            .map(|i| check_images(&i))
            .map_err(|e| e.to_string()),
        "colmap_points_bin" => colmap::parse_points_bin(bytes, path)
            .map(|p| check_points(&p))
            .map_err(|e| e.to_string()),
        "colmap_points_txt" => colmap::parse_points_txt(bytes, path)
            .map(|p| check_points(&p))
            .map_err(|e| e.to_string()),
        "transforms_json" => transforms::parse_transforms_frames(bytes, path, (64, 48))
            .map(|n| assert!(n > 0))
            .map_err(|e| e.to_string()),
        "poses_bounds_npy" => llff::parse_npy(path, bytes)
            .map(|(rows, cols, v)| {
                assert_eq!(rows.checked_mul(cols), Some(v.len()));
                // Values come from bytes that are present: at least 4 bytes each.
                assert!(v.len() * 4 <= bytes.len());
            })
            .map_err(|e| e.to_string()),
        "image" => imageload::decode_rgb(bytes, path, [0.0; 3])
            .map(|img| {
                assert!(img.width > 0 && img.height > 0);
                assert_eq!(img.data.len(), img.width as usize * img.height as usize * 3);
                // The resamplers the loader applies must take any decoded image.
                let small = imageload::downscale(&img, 2);
                assert_eq!(
                    small.data.len(),
                    small.width as usize * small.height as usize * 3
                );
            })
            .map_err(|e| e.to_string()),
        "compressed_ply" => scene_target(SceneFormat::CompressedPly, bytes, path),
        "splat" => scene_target(SceneFormat::Splat, bytes, path),
        "spz" => scene_target(SceneFormat::Spz, bytes, path),
        "sog" => scene_target(SceneFormat::Sog, bytes, path),
        "glb" => scene_target(SceneFormat::Glb, bytes, path),
        "gltf" => scene_target(SceneFormat::Gltf, bytes, path),
        other => panic!("unknown fuzz target {other:?}; known: {TARGETS:?}"),
    };
    match outcome {
        Ok(()) => Ok(true),
        Err(message) => {
            assert!(
                message.contains(FUZZ_PATH),
                "error does not name the file: {message}"
            );
            Err(message)
        }
    }
}

/// A scene reader's contract: what loads is finite and consistent, writes back in its format and
/// reads again to the same count.
fn scene_target(format: SceneFormat, bytes: &[u8], path: &Path) -> Result<(), String> {
    let g = formats::decode(format, bytes, path).map_err(|e| e.to_string())?;
    g.check_consistent().expect("consistent arrays");
    let finite = g
        .means
        .iter()
        .chain(&g.log_scales)
        .flatten()
        .chain(g.rotations.iter().flatten())
        .chain(&g.opacity_logits)
        .chain(g.sh_dc.iter().flatten())
        .chain(&g.sh_rest)
        .all(|v| v.is_finite());
    assert!(finite, "a decoded {format} scene has a non-finite value");
    // SOG re-encoding runs k-means: keep the fuzzer fast on large inputs.
    if format != SceneFormat::Sog || g.len() <= 4096 {
        let out = formats::encode(format, &g, &formats::WriteOptions::default())
            .expect("a decoded scene writes back");
        let again = formats::decode(format, &out, path).expect("a written scene reads back");
        assert_eq!(again.len(), g.len(), "{format} round trip count");
    }
    Ok(())
}

fn check_cameras(c: &std::collections::BTreeMap<u32, colmap::ColmapCamera>) {
    for cam in c.values() {
        assert!(cam.fx > 0.0 && cam.fy > 0.0 && cam.fx.is_finite() && cam.fy.is_finite());
    }
}

fn check_images(images: &[colmap::ColmapImage]) {
    for i in images {
        assert!(i.qvec.iter().chain(&i.tvec).all(|v| v.is_finite()));
    }
}

fn check_points(p: &crate::dataset::Points) {
    assert_eq!(p.positions.len(), p.colors.len());
    assert!(p.positions.iter().flatten().all(|v| v.is_finite()));
}
