//! Posed-image datasets: COLMAP, NeRF-synthetic and instant-ngp/nerfstudio `transforms.json`, LLFF
//! `poses_bounds.npy`. Every loader produces the same [`Dataset`]: OpenCV-convention pinhole cameras
//! matching the images as decoded (undistorted where the capture had distortion), the images in memory,
//! initial points, and the train/test split.

pub mod colmap;
pub mod demo;
pub mod demo_variants;
pub mod display;
pub mod imageload;
pub mod llff;
pub mod masks;
pub mod poses;
pub mod random_init;
pub mod transforms;

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use splat_core::Camera;

pub use colmap::Points;
pub use imageload::Rgb8Image;
pub use masks::{AlphaMode, Mask, MaskOptions};

/// A dataset problem, naming the file or folder.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    #[error(
        "{}: the {views} images need {} in memory, more than the {} available for them",
        path.display(),
        human_bytes(*needed),
        human_bytes(*budget)
    )]
    TooLarge {
        path: PathBuf,
        views: usize,
        needed: u64,
        budget: u64,
    },
}

/// `1.5 GiB`, `320.0 MiB`, `12 KiB`.
pub fn human_bytes(b: u64) -> String {
    const K: f64 = 1024.0;
    let f = b as f64;
    if f >= K * K * K {
        format!("{:.1} GiB", f / (K * K * K))
    } else if f >= K * K {
        format!("{:.1} MiB", f / (K * K))
    } else {
        format!("{} KiB", (f / K).ceil())
    }
}

impl DatasetError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        DatasetError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
    pub fn invalid(path: &Path, message: impl Into<String>) -> Self {
        DatasetError::Invalid {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
    /// The same error with `suffix` appended to its message (a hint).
    pub fn with_suffix(self, suffix: &str) -> Self {
        match self {
            DatasetError::Io { path, source } => DatasetError::Invalid {
                path,
                message: format!("{source}{suffix}"),
            },
            DatasetError::Invalid { path, message } => DatasetError::Invalid {
                path,
                message: message + suffix,
            },
            e @ DatasetError::TooLarge { .. } => e,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DatasetFormat {
    Colmap,
    NerfSynthetic,
    Transforms,
    Llff,
}

impl DatasetFormat {
    pub fn name(self) -> &'static str {
        match self {
            DatasetFormat::Colmap => "COLMAP",
            DatasetFormat::NerfSynthetic => "NeRF-synthetic",
            DatasetFormat::Transforms => "transforms.json",
            DatasetFormat::Llff => "LLFF",
        }
    }
}

/// How to load a dataset.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadOptions {
    /// Force a format instead of detecting it.
    pub format: Option<DatasetFormat>,
    /// Image folder under the root (COLMAP: default `images`; LLFF: default the smallest `images_N`).
    pub images: Option<String>,
    /// Integer downscale factor applied after decoding.
    pub downscale: Option<u32>,
    /// Hold out test views (every 8th by name, or the dataset's own test split).
    pub eval: bool,
    /// Background for RGBA images and the renderer (default: white for NeRF-synthetic, else black).
    pub background: Option<[f32; 3]>,
    /// Skip (with a warning) images that are missing or cannot be decoded instead of failing.
    #[serde(default)]
    pub skip_bad_images: bool,
    /// Refuse (before decoding) when the decoded images would take more bytes than this.
    #[serde(skip)]
    pub image_memory_budget: Option<u64>,
    /// Where masks come from and what they mean ([`masks`]).
    #[serde(default)]
    pub masks: MaskOptions,
    /// Camera poses from this COLMAP `images.txt` in place of the dataset's ([`poses`]).
    #[serde(default)]
    pub poses: Option<PathBuf>,
    /// Photos at a display size, for the viewer ([`display`]); the cameras stay at the loaded size.
    #[serde(skip)]
    pub display: Option<display::DisplayPhotos>,
}

/// One posed image.
#[derive(Clone, Debug)]
pub struct View {
    pub name: String,
    pub camera: Camera,
    pub image: Rgb8Image,
    /// The pixels that count (none: all of them), at the image's size.
    pub mask: Option<Mask>,
    /// With [`LoadOptions::display`]: the photo as the viewer sends it (a JPEG of `image`).
    pub display_jpeg: Option<Vec<u8>>,
}

#[derive(Clone, Debug)]
pub struct Dataset {
    pub root: PathBuf,
    pub format: DatasetFormat,
    pub train: Vec<View>,
    pub test: Vec<View>,
    /// Initial points with colours (SfM points, or random ones where the dataset has none).
    pub points: Points,
    /// Whether `points` came from the dataset (true) or were generated.
    pub points_from_dataset: bool,
    pub background: [f32; 3],
    /// 1.1 x the largest distance of a camera centre from the mean centre.
    pub scene_extent: f64,
    /// Things the user should know (missing frames, name matching by order).
    pub warnings: Vec<String>,
    /// What was done (undistortion, downscaling), for the log.
    pub notes: Vec<String>,
}

impl Dataset {
    pub fn all_views(&self) -> impl Iterator<Item = &View> {
        self.train.iter().chain(self.test.iter())
    }

    /// The views metrics are reported on, and which split they are: the test views, or the training
    /// views when there is no test split.
    pub fn eval_views(&self) -> (&[View], &'static str) {
        if self.test.is_empty() {
            (&self.train, "train")
        } else {
            (&self.test, "test")
        }
    }

    /// The views of [`Dataset::eval_views`], to change.
    pub fn eval_views_mut(&mut self) -> &mut Vec<View> {
        if self.test.is_empty() {
            &mut self.train
        } else {
            &mut self.test
        }
    }
}

impl View {
    /// File name for a render of this view: the image's stem plus `.png`.
    pub fn render_file_name(&self) -> String {
        let stem = Path::new(&self.name)
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| self.name.replace('/', "_"));
        format!("{stem}.png")
    }
}

/// Detects the format of a dataset folder.
pub fn detect(root: &Path) -> Result<DatasetFormat, DatasetError> {
    if !root.is_dir() {
        return Err(DatasetError::invalid(
            root,
            "not a folder (expected a dataset folder)",
        ));
    }
    if colmap::find_model_dir(root).is_some() {
        Ok(DatasetFormat::Colmap)
    } else if root.join("transforms_train.json").is_file() {
        Ok(DatasetFormat::NerfSynthetic)
    } else if root.join("transforms.json").is_file() {
        Ok(DatasetFormat::Transforms)
    } else if root.join("poses_bounds.npy").is_file() {
        Ok(DatasetFormat::Llff)
    } else {
        Err(DatasetError::invalid(
            root,
            "no dataset found: expected sparse/0 (COLMAP), transforms_train.json (NeRF-synthetic), \
             transforms.json (instant-ngp/nerfstudio) or poses_bounds.npy (LLFF)",
        ))
    }
}

/// Loads a dataset.
pub fn load(root: &Path, opts: &LoadOptions) -> Result<Dataset, DatasetError> {
    let format = match opts.format {
        Some(f) => f,
        None => detect(root)?,
    };
    if let Some(0) = opts.downscale {
        return Err(DatasetError::invalid(
            root,
            "--downscale must be at least 1",
        ));
    }
    let mut ds = match format {
        DatasetFormat::Colmap => load_colmap(root, opts)?,
        DatasetFormat::NerfSynthetic => transforms::load_nerf_synthetic(root, opts)?,
        DatasetFormat::Transforms => transforms::load_transforms(root, opts)?,
        DatasetFormat::Llff => llff::load_llff(root, opts)?,
    };
    if let Some(path) = &opts.poses {
        poses::apply_poses(&mut ds, path)?;
    }
    ds.scene_extent = scene_extent(ds.all_views().map(|v| &v.camera));
    // Loaders that load several splits report the same things once.
    let mut seen = std::collections::HashSet::new();
    ds.notes.retain(|n| seen.insert(n.clone()));
    Ok(ds)
}

/// 1.1 x the largest distance of a camera centre from the mean of the centres (the original's
/// `spatial_lr_scale`).
pub fn scene_extent<'a>(cameras: impl Iterator<Item = &'a Camera>) -> f64 {
    let centers: Vec<[f64; 3]> = cameras.map(|c| c.center()).collect();
    if centers.is_empty() {
        return 1.0;
    }
    let n = centers.len() as f64;
    let mean: [f64; 3] = std::array::from_fn(|k| centers.iter().map(|c| c[k]).sum::<f64>() / n);
    let max = centers
        .iter()
        .map(|c| (0..3).map(|k| (c[k] - mean[k]).powi(2)).sum::<f64>().sqrt())
        .fold(0.0, f64::max);
    let extent = 1.1 * max;
    if extent > 0.0 {
        extent
    } else {
        1.0
    }
}

/// A view to be loaded: where its image is and how to turn it into a pinhole camera.
pub(crate) struct PendingView {
    pub name: String,
    pub path: PathBuf,
    /// World-to-camera rotation and translation.
    pub rotation: [[f64; 3]; 3],
    pub translation: [f64; 3],
    /// Intrinsics at the resolution `ref_size`; scaled to the image as decoded.
    pub intrinsics: imageload::Intrinsics,
    pub ref_size: (f64, f64),
    /// Its mask file, when the dataset names one (transforms.json's `mask_path`).
    pub mask: Option<PathBuf>,
}

/// Without `--downscale`, wider images are resized to this width.
pub const MAX_DEFAULT_WIDTH: u32 = 1600;

/// Size of an image of `w x h` once loaded: divided by `--downscale`, or brought to
/// [`MAX_DEFAULT_WIDTH`] when wider and no factor is given.
pub fn decoded_size(w: u32, h: u32, downscale: Option<u32>) -> (u32, u32) {
    match downscale {
        None if w > MAX_DEFAULT_WIDTH => (
            MAX_DEFAULT_WIDTH,
            ((h as u64 * MAX_DEFAULT_WIDTH as u64 / w as u64) as u32).max(1),
        ),
        f => {
            let f = f.unwrap_or(1).max(1);
            ((w / f).max(1), (h / f).max(1))
        }
    }
}

/// Decodes, downscales and undistorts pending views (and their masks, [`masks`]) in parallel. Missing
/// or unreadable images are skipped with a warning when others load; if none load, the first error is
/// returned. `root` is the dataset folder (its `masks/` is the default mask folder).
pub(crate) fn load_views(
    mut pending: Vec<PendingView>,
    opts: &LoadOptions,
    background: [f32; 3],
    root: &Path,
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<Vec<View>, DatasetError> {
    if let Some(display) = &opts.display {
        return display::load_views(pending, opts, background, display, warnings, notes);
    }
    check_memory(&pending, opts)?;
    attach_masks(&mut pending, opts, root, notes)?;
    let results: Vec<Result<View, DatasetError>> = pending
        .into_par_iter()
        .map(|p| load_view(p, opts, background))
        .collect();
    let views = gather_views(results, opts, warnings)?;
    let factor = opts.downscale.unwrap_or(1);
    if factor > 1 {
        notes.push(format!("images downscaled by {factor}"));
    }
    if opts.downscale.is_none() && views.iter().any(|v| v.image.width == MAX_DEFAULT_WIDTH) {
        notes.push(format!(
            "images wider than {MAX_DEFAULT_WIDTH} pixels were resized to {MAX_DEFAULT_WIDTH} wide (--downscale 1 keeps full resolution)"
        ));
    }
    Ok(views)
}

/// The loaded views, or the first error when none loaded or one failed without
/// `--skip-bad-images`; skipped ones are listed in a warning.
pub(crate) fn gather_views(
    results: impl IntoIterator<Item = Result<View, DatasetError>>,
    opts: &LoadOptions,
    warnings: &mut Vec<String>,
) -> Result<Vec<View>, DatasetError> {
    let mut views = Vec::new();
    let mut failed = Vec::new();
    for r in results {
        match r {
            Ok(v) => views.push(v),
            Err(e) => failed.push(e),
        }
    }
    if views.is_empty() || (!failed.is_empty() && !opts.skip_bad_images) {
        let more = failed.len() - 1;
        let first = failed
            .into_iter()
            .next()
            .expect("no views at all is caught earlier");
        return Err(if more > 0 {
            first.with_suffix(&format!(
                " (and {more} more bad image(s); --skip-bad-images trains without them)"
            ))
        } else {
            first.with_suffix(" (--skip-bad-images trains without it)")
        });
    }
    if !failed.is_empty() {
        let list: Vec<String> = failed.iter().take(10).map(|e| e.to_string()).collect();
        warnings.push(format!(
            "{} image(s) could not be loaded and are skipped: {}{}",
            failed.len(),
            list.join("; "),
            if failed.len() > 10 { "; ..." } else { "" }
        ));
    }
    Ok(views)
}

/// Refuses, from the image headers and before anything is decoded, images that would take more
/// memory than the budget.
fn check_memory(pending: &[PendingView], opts: &LoadOptions) -> Result<(), DatasetError> {
    let Some(budget) = opts.image_memory_budget else {
        return Ok(());
    };
    let needed: u64 = pending
        .par_iter()
        .filter_map(|p| image::image_dimensions(&p.path).ok())
        .map(|(w, h)| {
            let (w, h) = decoded_size(w, h, opts.downscale);
            w as u64 * h as u64 * 3
        })
        .sum();
    if needed > budget {
        let dir = pending
            .first()
            .and_then(|p| p.path.parent())
            .unwrap_or(Path::new("."));
        return Err(DatasetError::TooLarge {
            path: dir.to_path_buf(),
            views: pending.len(),
            needed,
            budget,
        });
    }
    Ok(())
}

/// Finds the mask file of each pending view without one (see [`masks`]); notes how many were found.
fn attach_masks(
    pending: &mut [PendingView],
    opts: &LoadOptions,
    root: &Path,
    notes: &mut Vec<String>,
) -> Result<(), DatasetError> {
    if opts.masks.ignore {
        for p in pending.iter_mut() {
            p.mask = None;
        }
        return Ok(());
    }
    let named = pending.iter().filter(|p| p.mask.is_some()).count();
    let Some(dir) = masks::mask_dir(root, &opts.masks)? else {
        if named > 0 {
            notes.push(format!(
                "masks named by the dataset for {named} of {} images",
                pending.len()
            ));
        }
        return Ok(());
    };
    let names: Vec<String> = pending.iter().map(|p| p.name.clone()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut found: Vec<Option<PathBuf>> = pending.iter_mut().map(|p| p.mask.take()).collect();
    let note = masks::find_masks(&dir, &names, &mut found, opts.masks.dir.is_some())?;
    for (p, f) in pending.iter_mut().zip(found) {
        p.mask = f;
    }
    notes.extend(note);
    Ok(())
}

/// Decodes one view's image (and mask), brings it to the loaded size and undistorts it.
fn load_view(
    p: PendingView,
    opts: &LoadOptions,
    background: [f32; 3],
) -> Result<View, DatasetError> {
    let (raw, alpha) = imageload::load_rgb_alpha(&p.path, background)?;
    let mask = match (&p.mask, opts.masks.alpha) {
        (Some(path), _) => {
            let m = masks::load_mask(path, opts.masks.invert)?;
            let m = masks::to_image_size(m, raw.width, raw.height);
            if (m.width, m.height) != (raw.width, raw.height) {
                return Err(DatasetError::invalid(
                    path,
                    format!(
                        "mask is {} x {} but its image {} is {} x {} (nor a whole multiple of it)",
                        m.width,
                        m.height,
                        p.path.display(),
                        raw.width,
                        raw.height
                    ),
                ));
            }
            Some(m)
        }
        (None, AlphaMode::Mask) => {
            alpha.map(|a| Mask::from_levels(raw.width, raw.height, &a, false))
        }
        (None, AlphaMode::Background) => None,
    };
    let resize = |img: &Rgb8Image| match opts.downscale {
        // As the original: images wider than 1,600 pixels are brought to 1,600 unless a factor is given.
        None if img.width > MAX_DEFAULT_WIDTH => imageload::resize_to_width(img, MAX_DEFAULT_WIDTH),
        _ => imageload::downscale(img, opts.downscale.unwrap_or(1)),
    };
    let img = resize(&raw);
    let (k, camera) = view_camera(&p, (raw.width, raw.height), (img.width, img.height))?;
    let distorted = !k.distortion.is_identity();
    let finish = |img: Rgb8Image| {
        if distorted {
            imageload::undistort(&img, &k)
        } else {
            img
        }
    };
    let mask = mask.map(|m| m.resampled(|g| finish(resize(g))));
    let image = finish(img);
    let fisheye = k.distortion.is_fisheye();
    // A fisheye photo resampled to the equidistant camera: pixels the lens did not photograph are left out.
    let mask = if fisheye && distorted {
        let valid = imageload::fisheye_validity(image.width, image.height, &k);
        Some(masks::keep_both(
            mask,
            Mask::from_keep(image.width, image.height, valid),
        ))
    } else {
        mask
    };
    Ok(View {
        name: p.name,
        camera,
        image,
        mask,
        display_jpeg: None,
    })
}

/// The camera of a view whose image file is `raw` pixels and is loaded at `size`: the pose, and the
/// intrinsics scaled from the dataset's reference size (an error for another aspect ratio).
pub(crate) fn view_camera(
    p: &PendingView,
    raw: (u32, u32),
    size: (u32, u32),
) -> Result<(imageload::Intrinsics, Camera), DatasetError> {
    let sx = size.0 as f64 / p.ref_size.0;
    let sy = size.1 as f64 / p.ref_size.1;
    if (sx - sy).abs() > 0.02 * sx.max(sy) {
        return Err(DatasetError::invalid(
            &p.path,
            format!(
                "image is {} x {} but its camera is {} x {} (a different aspect ratio)",
                raw.0, raw.1, p.ref_size.0, p.ref_size.1
            ),
        ));
    }
    let k = imageload::Intrinsics {
        fx: p.intrinsics.fx * sx,
        fy: p.intrinsics.fy * sy,
        cx: p.intrinsics.cx * sx,
        cy: p.intrinsics.cy * sy,
        distortion: p.intrinsics.distortion,
    };
    let camera = Camera {
        projection: if k.distortion.is_fisheye() {
            splat_core::Projection::Equidistant
        } else {
            splat_core::Projection::Pinhole
        },
        width: size.0,
        height: size.1,
        fx: k.fx,
        fy: k.fy,
        cx: k.cx,
        cy: k.cy,
        rotation: p.rotation,
        translation: p.translation,
    };
    Ok((k, camera))
}

/// Every 8th view (sorted by name) is a test view when `eval`; otherwise all train.
pub(crate) fn split_every_8th(mut views: Vec<View>, eval: bool) -> (Vec<View>, Vec<View>) {
    views.sort_by(|a, b| a.name.cmp(&b.name));
    if !eval {
        return (views, Vec::new());
    }
    let mut train = Vec::new();
    let mut test = Vec::new();
    for (i, v) in views.into_iter().enumerate() {
        if i % 8 == 0 {
            test.push(v);
        } else {
            train.push(v);
        }
    }
    (train, test)
}

/// The PNG and JPEG files of a folder (not its subfolders), by name.
pub fn list_images(dir: &Path) -> Result<Vec<String>, DatasetError> {
    let rd = std::fs::read_dir(dir).map_err(|e| DatasetError::io(dir, e))?;
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| {
            let l = n.to_ascii_lowercase();
            l.ends_with(".png") || l.ends_with(".jpg") || l.ends_with(".jpeg")
        })
        .collect();
    names.sort();
    Ok(names)
}

/// "undistorting to pinhole: 70 SIMPLE_RADIAL cameras, 1 OPENCV camera" (fisheye cameras say where
/// they go): one entry per camera
/// model (a phone capture can have a camera per photo), `None` when nothing is distorted.
fn undistort_note<'a>(cameras: impl Iterator<Item = &'a colmap::ColmapCamera>) -> Option<String> {
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for c in cameras.filter(|c| c.is_distorted() || c.distortion.is_fisheye()) {
        match counts.iter_mut().find(|(m, _)| *m == c.model.name()) {
            Some((_, n)) => *n += 1,
            None => counts.push((c.model.name(), 1)),
        }
    }
    (!counts.is_empty()).then(|| {
        let parts: Vec<String> = counts
            .iter()
            .map(|(m, n)| format!("{n} {m} camera{}", if *n == 1 { "" } else { "s" }))
            .collect();
        let fisheye = counts.iter().any(|(m, _)| m.ends_with("FISHEYE"));
        let to = if fisheye {
            "undistorting (fisheye: to the equidistant fisheye, rendered natively; pixels outside the \
             lens's image are left out)"
        } else {
            "undistorting to pinhole"
        };
        format!("{to}: {}", parts.join(", "))
    })
}

/// The views of a COLMAP reconstruction whose images are in `image_dir` (matched by name, or by
/// sorted order when no name matches and the counts agree), with their cameras. Missing images are an
/// error, or with `--skip-bad-images` a warning.
fn colmap_views(
    recon: &colmap::Reconstruction,
    image_dir: &Path,
    model_dir: &Path,
    opts: &LoadOptions,
    warnings: &mut Vec<String>,
) -> Result<Vec<PendingView>, DatasetError> {
    let present = list_images(image_dir)?;
    let any_by_name = recon
        .images
        .iter()
        .any(|im| image_dir.join(&im.name).is_file());
    let by_order = !any_by_name && present.len() == recon.images.len();
    if by_order {
        warnings.push(format!(
            "image names in {} are not in {}; matching the {} images by sorted order (as the LLFF tools do)",
            model_dir.display(),
            image_dir.display(),
            present.len()
        ));
    }
    let mut pending = Vec::new();
    let mut missing = Vec::new();
    for (i, im) in recon.images.iter().enumerate() {
        let path = if by_order {
            image_dir.join(&present[i])
        } else {
            image_dir.join(&im.name)
        };
        if !path.is_file() {
            missing.push(im.name.clone());
            continue;
        }
        let cam = &recon.cameras[&im.camera_id];
        pending.push(PendingView {
            name: im.name.clone(),
            path,
            rotation: colmap::qvec_to_rotation(im.qvec),
            translation: im.tvec,
            intrinsics: imageload::Intrinsics {
                fx: cam.fx,
                fy: cam.fy,
                cx: cam.cx,
                cy: cam.cy,
                distortion: cam.distortion,
            },
            ref_size: (cam.width as f64, cam.height as f64),
            mask: None,
        });
    }
    if pending.is_empty() {
        return Err(DatasetError::invalid(
            image_dir,
            format!(
                "none of the {} images of the reconstruction is here (first: {:?}) and the folder has {} images",
                recon.images.len(),
                recon.images[0].name,
                present.len()
            ),
        ));
    }
    if !missing.is_empty() && !opts.skip_bad_images {
        return Err(DatasetError::invalid(
            &image_dir.join(&missing[0]),
            format!(
                "image listed in the reconstruction is missing{} (--skip-bad-images trains without {})",
                if missing.len() > 1 {
                    format!(", and {} more", missing.len() - 1)
                } else {
                    String::new()
                },
                if missing.len() > 1 { "them" } else { "it" }
            ),
        ));
    }
    if !missing.is_empty() {
        warnings.push(format!(
            "{} image(s) listed in the reconstruction are missing from {} and are skipped: {}",
            missing.len(),
            image_dir.display(),
            missing
                .iter()
                .take(10)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(pending)
}

fn load_colmap(root: &Path, opts: &LoadOptions) -> Result<Dataset, DatasetError> {
    let model_dir = colmap::find_model_dir(root)
        .ok_or_else(|| DatasetError::invalid(root, "no COLMAP model in sparse/0 or sparse"))?;
    let recon = colmap::read_model(&model_dir)?;
    let folder = opts.images.clone().unwrap_or_else(|| "images".to_string());
    let image_dir = root.join(&folder);
    if !image_dir.is_dir() {
        return Err(DatasetError::invalid(
            &image_dir,
            "image folder not found (use --images SUBDIR)",
        ));
    }
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    let pending = colmap_views(&recon, &image_dir, &model_dir, opts, &mut warnings)?;
    if let Some(note) = undistort_note(recon.cameras.values()) {
        notes.push(note);
    }
    let background = opts.background.unwrap_or([0.0; 3]);
    let views = load_views(pending, opts, background, root, &mut warnings, &mut notes)?;
    let (train, test) = split_every_8th(views, opts.eval);
    let has_points = !recon.points.positions.is_empty();
    let mut ds = Dataset {
        root: root.to_path_buf(),
        format: DatasetFormat::Colmap,
        train,
        test,
        points: recon.points,
        points_from_dataset: has_points,
        background,
        scene_extent: 1.0,
        warnings,
        notes,
    };
    if !has_points {
        ds.warnings
            .push("the reconstruction has no 3D points; starting from random points".into());
        let (points, note) = random_init::random_points_seen(&ds, random_init::RANDOM_POINTS, 0);
        ds.points = points;
        ds.notes.push(note);
    }
    Ok(ds)
}

#[cfg(test)]
mod tests {
    use super::colmap::{CameraModel, ColmapCamera};

    fn camera(model: CameraModel, k1: f64) -> ColmapCamera {
        ColmapCamera {
            model,
            width: 8,
            height: 6,
            fx: 10.0,
            fy: 10.0,
            cx: 4.0,
            cy: 3.0,
            distortion: splat_core::lens::Distortion::opencv(k1, 0.0, 0.0, 0.0),
        }
    }

    #[test]
    fn one_undistort_entry_per_camera_model() {
        let mut cams: Vec<ColmapCamera> = (0..70)
            .map(|_| camera(CameraModel::SimpleRadial, 0.01))
            .collect();
        cams.push(camera(CameraModel::OpenCv, -0.02));
        cams.push(camera(CameraModel::Pinhole, 0.0));
        assert_eq!(
            super::undistort_note(cams.iter()).as_deref(),
            Some("undistorting to pinhole: 70 SIMPLE_RADIAL cameras, 1 OPENCV camera")
        );
        assert_eq!(super::undistort_note(cams[71..].iter()), None);
    }
}
