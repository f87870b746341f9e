//! Compares the fast CPU backend with the reference on a trained scene, view by view: the rendered
//! image, the loss gradient's effect on every parameter group, and the densification statistics.
//! The parity tests use small random scenes; this checks the scenes training actually makes.
//!
//! `cargo run --release -p splat-train --example backend_parity_on_scene -- DATA IMAGES PLY
//! [--reset-opacity]` (the last caps opacities at 0.01, as an opacity reset does). Both backwards get
//! the reference's loss gradient, so only the backends differ. Measured in session 9 (BENCHMARKS.md).

use splat_core::Gaussians;
use splat_io::dataset::{self, LoadOptions};
use splat_render::cpu::CpuBackend;
use splat_render::{Backend, Buffers, ReferenceBackend, RenderSettings};
use splat_train::densify;
use splat_train::loss::{loss_grad_and_psnr, SsimScratch};
use splat_train::TrainConfig;

fn rel(a: &[f32], b: &[f32]) -> (f64, f64) {
    let (mut num, mut den, mut max_abs) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        let d = (x as f64 - y as f64).abs();
        num += d * d;
        den += (y as f64) * (y as f64);
        max_abs = max_abs.max(d);
    }
    ((num / den.max(1e-300)).sqrt(), max_abs)
}

fn groups(g: &Gaussians<f32>) -> Vec<(&'static str, Vec<f32>)> {
    vec![
        ("means", g.means.as_flattened().to_vec()),
        ("log_scales", g.log_scales.as_flattened().to_vec()),
        ("rotations", g.rotations.as_flattened().to_vec()),
        ("opacity_logits", g.opacity_logits.clone()),
        ("sh_dc", g.sh_dc.as_flattened().to_vec()),
        ("sh_rest", g.sh_rest.clone()),
    ]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        return Err("usage: backend_parity_on_scene DATA IMAGES PLY [--reset-opacity]".into());
    }
    let opts = LoadOptions {
        images: Some(args[2].clone()),
        eval: true,
        ..Default::default()
    };
    let ds = dataset::load(std::path::Path::new(&args[1]), &opts)?;
    let mut g = splat_io::ply::read_ply(std::path::Path::new(&args[3]))?;
    if args.get(4).map(String::as_str) == Some("--reset-opacity") {
        // As after an opacity reset: opacities at most 0.01, where most pairs sit near the alpha cutoff.
        let cap = splat_core::gaussians::logit(0.01f32);
        for o in &mut g.opacity_logits {
            *o = o.min(cap);
        }
    }
    let n = g.len();
    println!("{n} Gaussians, {} train views", ds.train.len());
    let mut settings = RenderSettings::new(g.sh_degree);
    settings.background = ds.background;
    let mut backends: [Box<dyn Backend>; 2] =
        [Box::new(ReferenceBackend), Box::new(CpuBackend::new())];
    let mut bufs = [Buffers::default(), Buffers::default()];
    let mut stats = [
        [vec![0f32; n], vec![0f32; n], vec![0f32; n]],
        [vec![0f32; n], vec![0f32; n], vec![0f32; n]],
    ];
    let mut target = Vec::new();
    let mut ssim = SsimScratch::default();
    let mut grad_image = Vec::new();
    let mut worst: Vec<(&str, f64)> = Vec::new();
    let cfg = TrainConfig::default();
    for view in &ds.train {
        let cam = &view.camera;
        view.image.to_f32(&mut target);
        let (w, h) = (cam.width as usize, cam.height as usize);
        for k in 0..2 {
            splat_render::render(backends[k].as_mut(), &g, cam, &settings, &mut bufs[k]);
            // Both backwards get the reference's loss gradient, so only the backends differ.
            if k == 0 {
                loss_grad_and_psnr(
                    &bufs[0].raster.image,
                    &target,
                    w,
                    h,
                    cfg.lambda_dssim,
                    &mut ssim,
                    &mut grad_image,
                );
            }
            splat_render::backward(
                backends[k].as_mut(),
                &g,
                cam,
                &settings,
                &grad_image,
                &mut bufs[k],
            );
            let [nm, ct, rd] = &mut stats[k];
            densify::view_stats(
                &bufs[k].projected,
                &bufs[k].projected_grads,
                false,
                cam.width,
                cam.height,
                nm,
                ct,
                rd,
            );
        }
        let (_, img_max) = rel(&bufs[1].raster.image, &bufs[0].raster.image);
        let contrib_diff = bufs[0]
            .raster
            .n_contrib
            .iter()
            .zip(&bufs[1].raster.n_contrib)
            .filter(|(a, b)| a != b)
            .count();
        // Pixels where a pair near the alpha cutoff went one way on one path and the other on the other.
        let (mut up, mut down) = (0, 0);
        for (f, r) in bufs[1].raster.image.iter().zip(&bufs[0].raster.image) {
            up += (*f > r + 1e-4) as usize;
            down += (*f < r - 1e-4) as usize;
        }
        let mut line = format!(
            "{}: image max|d| {img_max:.2e} (fast brighter/darker by >1e-4: {up}/{down} values), n_contrib differ {contrib_diff} px",
            view.name
        );
        let (gr, gf) = (groups(&bufs[0].grads), groups(&bufs[1].grads));
        for ((name, r), (_, f)) in gr.iter().zip(&gf) {
            let (e, _) = rel(f, r);
            line += &format!(", {name} {e:.1e}");
            match worst.iter_mut().find(|(k, _)| k == name) {
                Some(x) => x.1 = x.1.max(e),
                None => worst.push((name, e)),
            }
        }
        let pg = |b: &Buffers| b.projected_grads.grad_means2d.as_flattened().to_vec();
        let (e, _) = rel(&pg(&bufs[1]), &pg(&bufs[0]));
        line += &format!(", grad_means2d {e:.1e}");
        println!("{line}");
    }
    println!("worst relative L2 per group over views: {worst:?}");
    // Densification: average view-space gradient norm over the views that saw each Gaussian.
    let avg = |s: &[Vec<f32>; 3]| -> Vec<f32> {
        s[0].iter()
            .zip(&s[1])
            .map(|(a, c)| if *c > 0.0 { a / c } else { 0.0 })
            .collect()
    };
    let (ar, af) = (avg(&stats[0]), avg(&stats[1]));
    let (e, _) = rel(&af, &ar);
    let thr = cfg.densify_grad_threshold as f32;
    let over_r = ar.iter().filter(|&&x| x >= thr).count();
    let over_f = af.iter().filter(|&&x| x >= thr).count();
    let disagree = ar
        .iter()
        .zip(&af)
        .filter(|(a, b)| (**a >= thr) != (**b >= thr))
        .count();
    let mean_ratio: f64 = af.iter().sum::<f32>() as f64 / ar.iter().sum::<f32>() as f64;
    println!(
        "densify stats: rel L2 {e:.2e}, sum fast/ref {mean_ratio:.6}, over {thr}: ref {over_r} fast {over_f}, disagree {disagree}"
    );
    Ok(())
}
