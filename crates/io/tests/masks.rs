//! Masks through the loaders: COLMAP's `masks/NAME.png`, `--masks DIR`, transforms.json's `mask_path`,
//! RGBA alpha as a mask, inversion, downscaling, and the errors and notes for bad or missing masks.

use std::path::Path;

use splat_io::dataset::demo::{write_demo_dataset, DemoOptions};
use splat_io::dataset::demo_variants::DemoVariant;
use splat_io::dataset::{self, AlphaMode, LoadOptions, MaskOptions};

fn demo(dir: &Path, variant: DemoVariant) -> std::path::PathBuf {
    let root = dir.join("data");
    let opts = DemoOptions {
        width: 48,
        height: 36,
        views: 9,
        points: 200,
        seed: 3,
        variant,
    };
    write_demo_dataset(&root, &opts).unwrap();
    root
}

fn load(root: &Path, masks: MaskOptions) -> Result<dataset::Dataset, dataset::DatasetError> {
    dataset::load(
        root,
        &LoadOptions {
            masks,
            ..Default::default()
        },
    )
}

#[test]
fn colmap_masks_are_found_inverted_downscaled_or_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let root = demo(dir.path(), DemoVariant::Mover);
    let ds = load(&root, MaskOptions::default()).unwrap();
    assert!(
        ds.notes.iter().any(|n| n.contains("for all 9 images")),
        "{:?}",
        ds.notes
    );
    let v1 = ds.train.iter().find(|v| v.name == "view_001.png").unwrap();
    let m = v1.mask.as_ref().unwrap();
    assert_eq!((m.width, m.height), (48, 36));
    let left_out = m.keep.len() - m.kept();
    assert!(left_out > 50, "{left_out}");
    // view_002 has no mover: all kept.
    let v2 = ds.train.iter().find(|v| v.name == "view_002.png").unwrap();
    assert_eq!(v2.mask.as_ref().unwrap().kept(), 48 * 36);
    let inv = load(
        &root,
        MaskOptions {
            invert: true,
            ..Default::default()
        },
    )
    .unwrap();
    let i1 = inv.train.iter().find(|v| v.name == "view_001.png").unwrap();
    assert_eq!(i1.mask.as_ref().unwrap().kept(), left_out);
    let none = load(
        &root,
        MaskOptions {
            ignore: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(none.train.iter().all(|v| v.mask.is_none()));
    // Downscaled with the image; a pixel is kept only where all its sources were.
    let half = dataset::load(
        &root,
        &LoadOptions {
            downscale: Some(2),
            ..Default::default()
        },
    )
    .unwrap();
    let h1 = half
        .train
        .iter()
        .find(|v| v.name == "view_001.png")
        .unwrap();
    let hm = h1.mask.as_ref().unwrap();
    assert_eq!((hm.width, hm.height), (24, 18));
    for y in 0..18 {
        for x in 0..24 {
            let all = (0..4).all(|k| m.keep[(2 * y + k / 2) * 48 + 2 * x + k % 2] == 1);
            assert_eq!(hm.keep[y * 24 + x] == 1, all, "({x}, {y})");
        }
    }
}

#[test]
fn bad_and_missing_masks_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let root = demo(dir.path(), DemoVariant::Mover);
    // One mask missing: allowed, with a note.
    std::fs::remove_file(root.join("masks/view_003.png.png")).unwrap();
    let ds = load(&root, MaskOptions::default()).unwrap();
    assert!(
        ds.notes
            .iter()
            .any(|n| n.contains("for 8 of 9 images; the 1 without one train on every pixel")),
        "{:?}",
        ds.notes
    );
    // A mask of another size (not a whole multiple): one line naming it.
    image::GrayImage::new(30, 20)
        .save(root.join("masks/view_003.png.png"))
        .unwrap();
    let err = load(&root, MaskOptions::default()).unwrap_err().to_string();
    assert!(
        err.contains("view_003.png.png: mask is 30 x 20 but its image"),
        "{err}"
    );
    // A full-size mask of a downscaled image folder is brought to its size.
    image::GrayImage::from_pixel(96, 72, image::Luma([255]))
        .save(root.join("masks/view_003.png.png"))
        .unwrap();
    let ds = load(&root, MaskOptions::default()).unwrap();
    let v3 = ds.all_views().find(|v| v.name == "view_003.png").unwrap();
    assert_eq!(v3.mask.as_ref().unwrap().kept(), 48 * 36);
    // Unreadable.
    std::fs::write(root.join("masks/view_003.png.png"), b"not a png").unwrap();
    let err = load(&root, MaskOptions::default()).unwrap_err().to_string();
    assert!(
        err.contains("view_003.png.png: cannot decode mask"),
        "{err}"
    );
    // --masks naming a folder without any of them, or no folder at all.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let opts = |d: &Path| MaskOptions {
        dir: Some(d.to_path_buf()),
        ..Default::default()
    };
    let err = load(&root, opts(&empty)).unwrap_err().to_string();
    assert!(
        err.contains("--masks: holds no mask for any of the 9 images"),
        "{err}"
    );
    let err = load(&root, opts(&dir.path().join("nope")))
        .unwrap_err()
        .to_string();
    assert!(err.contains("--masks: not a folder"), "{err}");
}

#[test]
fn transforms_mask_path_and_rgba_alpha() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (w, h) = (16u32, 12u32);
    std::fs::create_dir_all(root.join("images")).unwrap();
    std::fs::create_dir_all(root.join("m")).unwrap();
    let mut frames = Vec::new();
    for i in 0..3 {
        // RGBA: the left half transparent.
        let img = image::RgbaImage::from_fn(w, h, |x, _| {
            image::Rgba([200, 100, 50, if x < w / 2 { 0 } else { 255 }])
        });
        img.save(root.join(format!("images/f{i}.png"))).unwrap();
        let mask =
            image::GrayImage::from_fn(w, h, |_, y| image::Luma([if y < 3 { 0 } else { 255 }]));
        mask.save(root.join(format!("m/f{i}.png"))).unwrap();
        let c = i as f64;
        frames.push(format!(
            r#"{{"file_path": "images/f{i}.png", "mask_path": "m/f{i}.png",
               "transform_matrix": [[1,0,0,{c}],[0,1,0,0],[0,0,1,3],[0,0,0,1]]}}"#
        ));
    }
    let json = format!(
        r#"{{"fl_x": 20, "fl_y": 20, "cx": 8, "cy": 6, "w": {w}, "h": {h}, "frames": [{}]}}"#,
        frames.join(",")
    );
    std::fs::write(root.join("transforms.json"), json).unwrap();
    let ds = load(root, MaskOptions::default()).unwrap();
    for v in &ds.train {
        assert_eq!(v.mask.as_ref().unwrap().kept(), 16 * 9, "{}", v.name);
    }
    // The mask named by the frame wins over the alpha; without it the alpha is the mask.
    let alpha = MaskOptions {
        ignore: true,
        alpha: AlphaMode::Mask,
        ..Default::default()
    };
    let ds = load(root, alpha).unwrap();
    for v in &ds.train {
        let m = v.mask.as_ref().unwrap();
        assert_eq!(m.kept(), 8 * 12);
        assert_eq!(m.keep[0], 0);
    }
    // A frame's mask that is missing is that frame's error.
    std::fs::remove_file(root.join("m/f1.png")).unwrap();
    let err = load(root, MaskOptions::default()).unwrap_err().to_string();
    assert!(err.contains("f1.png"), "{err}");
}
