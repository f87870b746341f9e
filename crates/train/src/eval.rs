//! Evaluation: render views and compare with their photos (PSNR, SSIM with the loss's window).

use serde::{Deserialize, Serialize};
use splat_core::Gaussians;
use splat_io::dataset::View;
use splat_render::{Backend, Buffers, RenderSettings};

use crate::loss::{psnr, ssim};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewMetrics {
    pub name: String,
    pub psnr: f64,
    pub ssim: f64,
}

/// Renders each view, calls `on_render` with the image (clamped to [0, 1]) and returns the metrics.
pub fn evaluate(
    backend: &mut dyn Backend,
    gaussians: &Gaussians<f32>,
    views: &[View],
    background: [f32; 3],
    sh_degree: usize,
    mut on_render: impl FnMut(&View, &[f32]),
) -> Vec<ViewMetrics> {
    let mut settings = RenderSettings::new(sh_degree);
    settings.background = background;
    let mut buffers = Buffers::default();
    let mut target = Vec::new();
    let mut out = Vec::new();
    for v in views {
        splat_render::render(backend, gaussians, &v.camera, &settings, &mut buffers);
        let img: Vec<f32> = buffers
            .raster
            .image
            .iter()
            .map(|x| x.clamp(0.0, 1.0))
            .collect();
        v.image.to_f32(&mut target);
        out.push(ViewMetrics {
            name: v.name.clone(),
            psnr: psnr(&img, &target),
            ssim: ssim(
                &img,
                &target,
                v.camera.width as usize,
                v.camera.height as usize,
            ),
        });
        on_render(v, &img);
    }
    out
}

/// Mean PSNR and SSIM over views.
pub fn means(m: &[ViewMetrics]) -> (f64, f64) {
    let n = m.len().max(1) as f64;
    (
        m.iter().map(|v| v.psnr).sum::<f64>() / n,
        m.iter().map(|v| v.ssim).sum::<f64>() / n,
    )
}
