//! `splat view --data`'s display photos (`dataset::display`): the cameras are the training load's,
//! the photos at most the long edge, made once into the cache and read from it afterwards, and made
//! again when the image file changes.

use std::path::Path;

use splat_core::math::mat_to_quat;
use splat_io::dataset::colmap::{write, ColmapImage, Points};
use splat_io::dataset::demo::{demo_cameras, DemoOptions};
use splat_io::dataset::display::{shrink, DisplayPhotos};
use splat_io::dataset::imageload::Rgb8Image;
use splat_io::dataset::{self, LoadOptions};

const W: u32 = 1400;
const H: u32 = 1050;

/// A capture of 3 photos of W x H with an OPENCV lens (so undistortion runs), pattern `seed`.
fn write_capture(root: &Path, seed: u32) {
    let opts = DemoOptions {
        width: W,
        height: H,
        views: 3,
        points: 10,
        seed: 5,
        ..Default::default()
    };
    let images: Vec<ColmapImage> = demo_cameras(&opts)
        .iter()
        .enumerate()
        .map(|(i, c)| ColmapImage {
            id: i as u32 + 1,
            qvec: mat_to_quat(&c.rotation),
            tvec: c.translation,
            camera_id: 1,
            name: format!("img_{i}.png"),
        })
        .collect();
    let sparse = root.join("sparse/0");
    std::fs::create_dir_all(&sparse).unwrap();
    std::fs::create_dir_all(root.join("images")).unwrap();
    let params = vec![1200.0, 1200.0, 700.0, 525.0, -0.05, 0.01, 0.001, -0.001];
    let cams = write::cameras_txt(&[(1, "OPENCV", W as u64, H as u64, params)]);
    std::fs::write(sparse.join("cameras.txt"), cams).unwrap();
    std::fs::write(sparse.join("images.txt"), write::images_txt(&images)).unwrap();
    let points = Points {
        positions: (0..10).map(|i| [i as f64 * 0.1, 0.0, 0.5]).collect(),
        colors: vec![[128, 128, 128]; 10],
    };
    std::fs::write(sparse.join("points3D.txt"), write::points3d_txt(&points)).unwrap();
    for (n, im) in images.iter().enumerate() {
        let img = image::RgbImage::from_fn(W, H, |x, y| {
            let t = (x as f64 / 97.0, y as f64 / 61.0, (n as u32 + seed) as f64);
            let v = |f: f64| (128.0 + 100.0 * (t.0 * f + t.1 + t.2).sin()) as u8;
            image::Rgb([v(1.0), v(1.7), v(2.3)])
        });
        img.save(root.join("images").join(&im.name)).unwrap();
    }
}

fn psnr(a: &Rgb8Image, b: &Rgb8Image) -> f64 {
    assert_eq!((a.width, a.height), (b.width, b.height));
    let mse: f64 = a
        .data
        .iter()
        .zip(&b.data)
        .map(|(&x, &y)| (x as f64 - y as f64).powi(2))
        .sum::<f64>()
        / a.data.len() as f64;
    10.0 * (255.0f64 * 255.0 / mse.max(1e-12)).log10()
}

fn load(root: &Path, cache: &Path) -> dataset::Dataset {
    let opts = LoadOptions {
        display: Some(DisplayPhotos {
            long_edge: 1024,
            cache_dir: Some(cache.to_path_buf()),
        }),
        ..Default::default()
    };
    dataset::load(root, &opts).unwrap()
}

fn cache_files(cache: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(cache)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn display_photos_keep_the_cameras_shrink_the_photos_and_are_cached() {
    let dir = tempfile::tempdir().unwrap();
    let (root, cache) = (dir.path().join("data"), dir.path().join("cache"));
    write_capture(&root, 0);
    let full = dataset::load(&root, &LoadOptions::default()).unwrap();

    let first = load(&root, &cache);
    assert_eq!(first.train.len(), 3);
    assert_eq!(cache_files(&cache).len(), 3, "one cache file per photo");
    assert!(first
        .notes
        .iter()
        .any(|n| n.contains("0 of 3 from the cache")));
    for (d, f) in first.train.iter().zip(&full.train) {
        // The camera is the training load's (1400 is below the 1,600 default width).
        assert_eq!(d.camera, f.camera);
        assert_eq!((d.image.width, d.image.height), (1024, 768));
        // The photo is the training photo (undistorted) brought to the long edge.
        let p = psnr(&d.image, &shrink(&f.image, 1024));
        assert!(
            p > 40.0,
            "display photo {p:.1} dB from the shrunk training photo"
        );
    }

    // A second load reads the cache: a cache file replaced by a grey picture comes back grey.
    let second = load(&root, &cache);
    assert!(second
        .notes
        .iter()
        .any(|n| n.contains("3 of 3 from the cache")));
    for (a, b) in second.train.iter().zip(&first.train) {
        assert_eq!(a.camera, b.camera);
        assert!(psnr(&a.image, &b.image) > 40.0);
    }
    let grey = image::RgbImage::from_pixel(1024, 768, image::Rgb([77, 77, 77]));
    let files = cache_files(&cache);
    for f in &files {
        grey.save_with_format(f, image::ImageFormat::Jpeg).unwrap();
    }
    let third = load(&root, &cache);
    assert!(third
        .train
        .iter()
        .all(|v| v.image.data.iter().all(|&c| c.abs_diff(77) <= 2)));

    // A changed image file is made again (a new cache file), not taken from the old one.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write_capture(&root, 9);
    let fourth = load(&root, &cache);
    assert!(fourth
        .notes
        .iter()
        .any(|n| n.contains("0 of 3 from the cache")));
    assert_eq!(cache_files(&cache).len(), 6);
    assert!(fourth
        .train
        .iter()
        .all(|v| !v.image.data.iter().all(|&c| c.abs_diff(77) <= 2)));
}

#[test]
fn display_photos_without_a_writable_cache_are_made_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    write_capture(&root, 0);
    // The cache "folder" is a file: nothing can be written under it, and loading still works.
    let blocked = dir.path().join("not-a-folder");
    std::fs::write(&blocked, b"x").unwrap();
    let ds = load(&root, &blocked);
    assert_eq!(ds.train.len(), 3);
    assert!(ds.train.iter().all(|v| v.image.width == 1024));
    // No cache at all.
    let opts = LoadOptions {
        display: Some(DisplayPhotos {
            long_edge: 512,
            cache_dir: None,
        }),
        ..Default::default()
    };
    let ds = dataset::load(&root, &opts).unwrap();
    assert!(ds
        .train
        .iter()
        .all(|v| (v.image.width, v.image.height) == (512, 384)));
    assert!(ds.train.iter().all(|v| v.camera.width == W));
}
