//! How faithfully each scene format keeps a scene: the scene written and read back in every format,
//! rendered from the same cameras as the original, the PSNR of each render against the original's,
//! with the bytes a splat and the write and read times. Used by the `format_fidelity` test and
//! example (the BENCHMARKS table).

use std::time::Instant;

use splat_core::{Camera, Gaussians};
use splat_io::formats::{decode, encode, SceneFormat, WriteOptions};
use splat_render::{Backend, Buffers, RenderSettings};

use crate::loss::psnr;

/// One format's figures.
#[derive(Clone, Debug)]
pub struct FormatFidelity {
    pub format: SceneFormat,
    pub bytes: usize,
    pub write_seconds: f64,
    pub read_seconds: f64,
    /// Mean PSNR over the cameras of the decoded scene's renders against the original's (dB;
    /// infinite where the images are equal).
    pub psnr: f64,
}

fn render_all(
    backend: &mut dyn Backend,
    g: &Gaussians<f32>,
    cameras: &[Camera],
    settings: &RenderSettings,
) -> Vec<Vec<f32>> {
    let mut buffers = Buffers::default();
    cameras
        .iter()
        .map(|c| {
            splat_render::render(backend, g, c, settings, &mut buffers);
            buffers
                .raster
                .image
                .iter()
                .map(|x| x.clamp(0.0, 1.0))
                .collect()
        })
        .collect()
}

/// The figures of every single-file format (the SOG folder holds the same bytes as `.sog`).
pub fn measure(
    backend: &mut dyn Backend,
    g: &Gaussians<f32>,
    cameras: &[Camera],
    background: [f32; 3],
    opts: &WriteOptions,
) -> Result<Vec<FormatFidelity>, splat_io::FormatError> {
    let mut settings = RenderSettings::new(g.sh_degree);
    settings.background = background;
    let reference = render_all(backend, g, cameras, &settings);
    let mut out = Vec::new();
    for format in SceneFormat::ALL {
        if format == SceneFormat::SogFolder {
            continue;
        }
        let t = Instant::now();
        let bytes = encode(format, g, opts)
            .map_err(|k| k.with_path(std::path::Path::new(format.name())))?;
        let write_seconds = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let back = decode(format, &bytes, std::path::Path::new(format.name()))?;
        let read_seconds = t.elapsed().as_secs_f64();
        let mut s = settings;
        s.sh_degree = back.sh_degree;
        let images = render_all(backend, &back, cameras, &s);
        let mean = images
            .iter()
            .zip(&reference)
            .map(|(a, b)| psnr(a, b).min(200.0))
            .sum::<f64>()
            / cameras.len().max(1) as f64;
        out.push(FormatFidelity {
            format,
            bytes: bytes.len(),
            write_seconds,
            read_seconds,
            psnr: mean,
        });
    }
    Ok(out)
}
