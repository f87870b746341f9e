//! Evaluation: render views and compare with their photos (PSNR, SSIM with the loss's window, and the
//! colour-corrected PSNR), over the pixels each view's mask keeps.
//!
//! Colour-corrected PSNR (`cc_psnr`, gsplat's `--use_color_correction_metric` default "affine"): per
//! channel, the least-squares `a gt + b = render` over the kept pixels, the render mapped back by
//! `(x - b) / a`, then PSNR. Test views have no appearance model of their own, so this says how much of
//! a view's error is a colour shift (exposure, white balance) rather than the scene.

use serde::{Deserialize, Serialize};
use splat_core::Gaussians;
use splat_io::dataset::View;
use splat_render::{Backend, Buffers, RenderSettings};

use crate::loss::{ssim_weighted, SsimScratch};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewMetrics {
    pub name: String,
    pub psnr: f64,
    pub ssim: f64,
    /// Colour-corrected PSNR (absent in files written before it was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc_psnr: Option<f64>,
}

/// Renders each view (from `cameras[i]` where given, e.g. refined poses, else the view's own camera),
/// calls `on_render` with the image (clamped to [0, 1]) and returns the metrics.
pub fn evaluate(
    backend: &mut dyn Backend,
    gaussians: &Gaussians<f32>,
    views: &[View],
    cameras: Option<&[splat_core::Camera]>,
    background: [f32; 3],
    sh_degree: usize,
    mut on_render: impl FnMut(&View, &[f32]),
) -> Vec<ViewMetrics> {
    let mut settings = RenderSettings::new(sh_degree);
    settings.background = background;
    let mut buffers = Buffers::default();
    let mut target = Vec::new();
    let mut weights = Vec::new();
    let mut out = Vec::new();
    for (i, v) in views.iter().enumerate() {
        let camera = cameras.map_or(&v.camera, |c| &c[i]);
        splat_render::render(backend, gaussians, camera, &settings, &mut buffers);
        let img: Vec<f32> = buffers
            .raster
            .image
            .iter()
            .map(|x| x.clamp(0.0, 1.0))
            .collect();
        v.image.to_f32(&mut target);
        let mask = v.mask.as_ref().map(|m| {
            m.weights(&mut weights);
            &weights[..]
        });
        let (w, h) = (v.camera.width as usize, v.camera.height as usize);
        out.push(view_metrics(&v.name, &img, &target, mask, w, h));
        on_render(v, &img);
    }
    out
}

/// PSNR, SSIM and colour-corrected PSNR of `img` against `target` over the pixels `mask` keeps.
pub fn view_metrics(
    name: &str,
    img: &[f32],
    target: &[f32],
    mask: Option<&[f32]>,
    w: usize,
    h: usize,
) -> ViewMetrics {
    let corrected = color_corrected(img, target, mask);
    let (img_m, target_m) = match mask {
        Some(m) => (masked(img, m), masked(target, m)),
        None => (img.to_vec(), target.to_vec()),
    };
    let mut s = SsimScratch::default();
    ViewMetrics {
        name: name.to_string(),
        psnr: masked_psnr(img, target, mask),
        ssim: ssim_weighted(&img_m, &target_m, w, h, mask, &mut s, None),
        cc_psnr: Some(masked_psnr(&corrected, target, mask)),
    }
}

fn masked(img: &[f32], mask: &[f32]) -> Vec<f32> {
    let m = mask.iter().flat_map(|&k| [k; 3]);
    img.iter().zip(m).map(|(v, k)| v * k).collect()
}

/// PSNR in dB over the values whose pixel `mask` keeps (all without one); `img` clamped to [0, 1].
pub fn masked_psnr(img: &[f32], target: &[f32], mask: Option<&[f32]>) -> f64 {
    let (mut se, mut n) = (0.0f64, 0.0f64);
    for (i, (&x, &y)) in img.iter().zip(target).enumerate() {
        let k = mask.map_or(1.0, |m| m[i / 3] as f64);
        let d = x.clamp(0.0, 1.0) as f64 - y as f64;
        se += k * d * d;
        n += k;
    }
    if se <= 0.0 {
        f64::INFINITY
    } else {
        -10.0 * (se / n).log10()
    }
}

/// The render mapped to the photo's colours per channel: the least-squares `a gt + b = img` over the
/// kept pixels, and `(img - b) / a`. A channel whose fit is degenerate (a flat photo, `|a| < 1e-6`)
/// is left as it is.
pub fn color_corrected(img: &[f32], target: &[f32], mask: Option<&[f32]>) -> Vec<f32> {
    let mut out = img.to_vec();
    for c in 0..3 {
        let (mut n, mut sg, mut sr, mut sgg, mut sgr) = (0.0f64, 0.0, 0.0, 0.0, 0.0);
        for (p, (x, y)) in img.chunks_exact(3).zip(target.chunks_exact(3)).enumerate() {
            let k = mask.map_or(1.0, |m| m[p] as f64);
            let (r, g) = (x[c] as f64, y[c] as f64);
            n += k;
            sg += k * g;
            sr += k * r;
            sgg += k * g * g;
            sgr += k * g * r;
        }
        if n == 0.0 {
            continue;
        }
        let var = sgg / n - (sg / n).powi(2);
        let cov = sgr / n - (sg / n) * (sr / n);
        if var <= 0.0 {
            continue;
        }
        let a = cov / var;
        if a.abs() < 1e-6 {
            continue;
        }
        let b = sr / n - a * sg / n;
        for px in out.chunks_exact_mut(3) {
            px[c] = ((px[c] as f64 - b) / a) as f32;
        }
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

/// Mean colour-corrected PSNR over the views that have one.
pub fn mean_cc_psnr(m: &[ViewMetrics]) -> Option<f64> {
    let cc: Vec<f64> = m.iter().filter_map(|v| v.cc_psnr).collect();
    (!cc.is_empty()).then(|| cc.iter().sum::<f64>() / cc.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn color_correction_undoes_an_affine_shift_per_channel() {
        let target: Vec<f32> = (0..300).map(|i| ((i * 37) % 101) as f32 / 100.0).collect();
        let gains = [0.5f32, 1.3, 0.9];
        let offsets = [0.1f32, -0.05, 0.02];
        let img: Vec<f32> = (0..300)
            .map(|i| target[i] * gains[i % 3] + offsets[i % 3])
            .collect();
        let cc = color_corrected(&img, &target, None);
        for (a, b) in cc.iter().zip(&target) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
        assert!(masked_psnr(&img, &target, None) < 20.0);
        // The fit uses only the kept pixels: garbage elsewhere changes nothing there.
        let mut mask = vec![1.0f32; 100];
        let mut bad = img.clone();
        for p in (0..100).step_by(7) {
            mask[p] = 0.0;
            bad[p * 3] = 0.9;
        }
        let cc2 = color_corrected(&bad, &target, Some(&mask));
        for p in (0..100).filter(|p| mask[*p] == 1.0) {
            assert!((cc2[p * 3] - target[p * 3]).abs() < 1e-5);
        }
    }
}
