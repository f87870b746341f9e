//! `splat render` (one camera to a PNG, or with `--data` every test view of a dataset into a
//! folder), `splat builtin-scene`, `splat info`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use splat_core::camera::LookAtError;
use splat_core::synthetic::{self, builtin_camera};
use splat_core::{Camera, Gaussians};
use splat_render::{Buffers, RenderSettings};
use splat_train::eval::{evaluate, means};

use crate::dataset_args::load_dataset;

#[derive(Args)]
pub struct RenderArgs {
    /// Scene to render, in any format splat reads (see `splat convert --help`). Without it, the
    /// built-in scene is rendered.
    pub ply: Option<PathBuf>,
    /// Output PNG (with --data: output folder).
    #[arg(long, short, default_value = "render.png")]
    pub out: PathBuf,
    /// Render every test view of this dataset (all views if it has no test split) into the --out folder.
    #[arg(long, requires = "ply")]
    pub data: Option<PathBuf>,
    #[command(flatten)]
    pub data_args: crate::dataset_args::DataArgs,
    /// Image width in pixels.
    #[arg(long, default_value_t = 640)]
    pub width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 480)]
    pub height: u32,
    /// Camera position "x,y,z" in world space. Default: the built-in view, or for a PLY a view from
    /// -z towards the scene's median point (COLMAP-style scenes look along +z with y down).
    #[arg(long, value_parser = crate::parse::parse_vec3, allow_hyphen_values = true)]
    pub look_from: Option<[f64; 3]>,
    /// Point "x,y,z" the camera looks at. Default: the scene's median point.
    #[arg(long, value_parser = crate::parse::parse_vec3, allow_hyphen_values = true)]
    pub look_at: Option<[f64; 3]>,
    /// World direction "x,y,z" that appears up in the image. Default: +z for the built-in scene, -y for a PLY.
    #[arg(long, value_parser = crate::parse::parse_vec3, allow_hyphen_values = true)]
    pub up: Option<[f64; 3]>,
    /// Horizontal field of view in degrees.
    #[arg(long, default_value_t = 55.0)]
    pub fov: f64,
    /// SH degree used for colour (default: all the scene has).
    #[arg(long)]
    pub sh_degree: Option<usize>,
    /// Number of Gaussians of the built-in scene.
    #[arg(long, default_value_t = 20_000)]
    pub gaussians: usize,
    /// Render this many times and report the median time per stage (for timing).
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Pipeline implementation.
    #[arg(long, value_enum, default_value_t = crate::backend_args::BackendArg::Cpu)]
    pub backend: crate::backend_args::BackendArg,
    /// Also run and time the backward pass (gradient of the summed image), as a training step would.
    #[arg(long)]
    pub time_backward: bool,
}

fn camera_for(args: &RenderArgs, g: &Gaussians, builtin: bool) -> Result<Camera> {
    if args.width == 0 || args.height == 0 || args.width > 16384 || args.height > 16384 {
        bail!(
            "image size {} x {} is outside 1..=16384",
            args.width,
            args.height
        );
    }
    if !(args.fov > 0.5 && args.fov < 179.0) {
        bail!("--fov {} must be between 0.5 and 179 degrees", args.fov);
    }
    if builtin && args.look_from.is_none() && args.look_at.is_none() && args.up.is_none() {
        let mut cam = builtin_camera(args.width, args.height);
        let default_fov: f64 = 55.0;
        let scale = (0.5 * default_fov).to_radians().tan() / (0.5 * args.fov).to_radians().tan();
        cam.fx *= scale;
        cam.fy *= scale;
        return Ok(cam);
    }
    let target = match args.look_at {
        Some(t) => t,
        None => g.median_mean(),
    };
    let up = args.up.unwrap_or(if builtin {
        [0.0, 0.0, 1.0]
    } else {
        [0.0, -1.0, 0.0]
    });
    let eye = match args.look_from {
        Some(e) => e,
        None => {
            let r = g.distance_quantile(target, 0.5);
            [target[0], target[1], target[2] - 3.0 * r]
        }
    };
    Camera::try_look_at(eye, target, up, args.fov, args.width, args.height).map_err(|e| match e {
        LookAtError::SamePoint => anyhow::anyhow!("--look-from and --look-at are the same point"),
        LookAtError::UpAlongView => anyhow::anyhow!("--up is parallel to the viewing direction"),
    })
}

pub fn render(args: RenderArgs) -> Result<()> {
    if let (Some(data), Some(ply)) = (&args.data, &args.ply) {
        return render_dataset(&args, ply, data);
    }
    let (gaussians, builtin) = match &args.ply {
        Some(path) => (crate::scene_files::load_scene(path)?, false),
        None => {
            if args.gaussians == 0 || args.gaussians > 50_000_000 {
                bail!("--gaussians {} is outside 1..=50000000", args.gaussians);
            }
            (synthetic::builtin_scene(args.gaussians), true)
        }
    };
    let camera = camera_for(&args, &gaussians, builtin)?;
    let sh_degree = args.sh_degree.unwrap_or(gaussians.sh_degree);
    if sh_degree > 3 {
        bail!("--sh-degree {sh_degree} is above 3");
    }
    let mut settings = RenderSettings::new(sh_degree);
    let background = args.data_args.background.unwrap_or([0.0; 3]);
    for k in 0..3 {
        if !(0.0..=1.0).contains(&background[k]) {
            bail!("--background values must be in [0, 1]");
        }
        settings.background[k] = background[k] as f32;
    }
    let mut backend = args.backend.make()?;
    let mut buffers = Buffers::default();
    let mut stage_times: Vec<Vec<(&'static str, Duration)>> = Vec::new();
    let mut totals = Vec::new();
    let grad_image = vec![1.0f32; camera.num_pixels() * 3];
    if args.repeat == 0 || args.repeat > 10_000 {
        bail!("--repeat {} is outside 1..=10000", args.repeat);
    }
    for _ in 0..args.repeat {
        let start = Instant::now();
        splat_render::render(
            backend.as_mut(),
            &gaussians,
            &camera,
            &settings,
            &mut buffers,
        );
        if args.time_backward {
            splat_render::backward(
                backend.as_mut(),
                &gaussians,
                &camera,
                &settings,
                &grad_image,
                &mut buffers,
            );
        }
        totals.push(start.elapsed());
        stage_times.push(buffers.timings.clone());
    }
    splat_io::images::save_png(
        &args.out,
        camera.width,
        camera.height,
        &buffers.raster.image,
    )
    .context("writing the image")?;

    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let stages: Vec<String> = stage_times[0]
        .iter()
        .enumerate()
        .map(|(i, (name, _))| {
            let t = median(stage_times.iter().map(|s| s[i].1).collect());
            format!("{name} {:.1} ms", t.as_secs_f64() * 1e3)
        })
        .collect();
    println!(
        "rendered {} Gaussians ({} visible, {} tile intersections) at {} x {} with the {} backend",
        gaussians.len(),
        buffers.projected.num_visible(),
        buffers.bins.num_intersections(),
        camera.width,
        camera.height,
        backend.name(),
    );
    println!(
        "time (median of {}): {:.1} ms = {}",
        totals.len(),
        median(totals.clone()).as_secs_f64() * 1e3,
        stages.join(", ")
    );
    println!("wrote {}", args.out.display());
    Ok(())
}

#[derive(Args)]
pub struct BuiltinArgs {
    /// Output PLY.
    #[arg(long, short, default_value = "builtin.ply")]
    pub out: PathBuf,
    /// Number of Gaussians.
    #[arg(long, default_value_t = 20_000)]
    pub gaussians: usize,
}

pub fn write_builtin_scene(args: BuiltinArgs) -> Result<()> {
    if args.gaussians == 0 || args.gaussians > 50_000_000 {
        bail!("--gaussians {} is outside 1..=50000000", args.gaussians);
    }
    let g = synthetic::builtin_scene(args.gaussians);
    splat_io::write_ply(&args.out, &g)?;
    println!(
        "wrote {} Gaussians (SH degree {}) to {}",
        g.len(),
        g.sh_degree,
        args.out.display()
    );
    Ok(())
}

#[derive(Args)]
pub struct InfoArgs {
    /// Scene in any format splat reads (see `splat convert --help`), or a training output folder.
    pub ply: PathBuf,
}

pub fn info(args: InfoArgs) -> Result<()> {
    let file = crate::scene_files::scene_file(&args.ply);
    let g = splat_io::read_scene(&file)?;
    let format = std::fs::read(&file)
        .ok()
        .and_then(|b| splat_io::formats::detect(&b, &file).ok())
        .map_or("SOG folder".to_string(), |f| f.to_string());
    println!(
        "{} ({format}): {} Gaussians, SH degree {}",
        args.ply.display(),
        g.len(),
        g.sh_degree
    );
    if !g.is_empty() {
        let mut lo = [f32::INFINITY; 3];
        let mut hi = [f32::NEG_INFINITY; 3];
        for m in &g.means {
            for k in 0..3 {
                lo[k] = lo[k].min(m[k]);
                hi[k] = hi[k].max(m[k]);
            }
        }
        println!("bounds: min {lo:?}, max {hi:?}");
        let c = g.median_mean();
        println!(
            "median point: {c:?}, median radius {:.4}",
            g.distance_quantile(c, 0.5)
        );
    }
    Ok(())
}

/// `splat render SCENE --data DATA --out DIR`: every test view (all views without a split) to PNGs.
fn render_dataset(args: &RenderArgs, ply: &Path, data: &Path) -> Result<()> {
    let out = &args.out;
    let g = crate::scene_files::load_scene(ply)?;
    let ds = load_dataset(data, &args.data_args.options(true)?)?;
    let (views, _) = ds.eval_views();
    std::fs::create_dir_all(out)
        .with_context(|| format!("{}: cannot create the folder", out.display()))?;
    let degree = args.sh_degree.unwrap_or(g.sh_degree).min(g.sh_degree);
    let mut backend = args.backend.make()?;
    let mut err = None;
    let m = evaluate(
        backend.as_mut(),
        &g,
        views,
        None,
        ds.background,
        degree,
        |v, img| {
            let path = out.join(v.render_file_name());
            if let Err(e) = splat_io::images::save_png(&path, v.camera.width, v.camera.height, img)
            {
                err.get_or_insert(e);
            }
        },
    );
    if let Some(e) = err {
        return Err(e.into());
    }
    let (p, s) = means(&m);
    println!(
        "rendered {} views to {} (PSNR {p:.2} dB, SSIM {s:.4})",
        m.len(),
        out.display()
    );
    Ok(())
}
