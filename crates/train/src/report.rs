//! `report.html`: one self-contained page per run (opens from disk, no network): the loss, PSNR and
//! Gaussian count over the run as inline SVG plots, the evaluation table (the numbers of
//! `metrics.json`, each cell carrying the exact value in a `data-value` attribute), and for every
//! evaluated view the ground truth, the render and a heat map of the error, as inline PNGs.
//!
//! The page is well-formed XHTML-style markup (every element closed) so a strict parser reads it too.
//! The plots are drawn here in a few lines of SVG rather than with a plotting crate: three line charts
//! need axes, ticks and a polyline, and no font machinery.

use base64::Engine;
use serde::{Deserialize, Serialize};
use splat_io::dataset::imageload::downscale;
use splat_io::dataset::Rgb8Image;

use crate::metrics::Metrics;

/// One point of the training history: means over the steps since the previous point.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryPoint {
    pub step: u64,
    pub loss: f64,
    pub psnr: f64,
    pub num_gaussians: usize,
}

/// Averages steps into history points, one per `every` steps.
#[derive(Clone, Debug, Default)]
pub struct HistoryRecorder {
    every: u64,
    sum_loss: f64,
    sum_psnr: f64,
    n: u64,
    pub points: Vec<HistoryPoint>,
}

impl HistoryRecorder {
    /// About 500 points over `total_steps`.
    pub fn new(total_steps: u64, points: Vec<HistoryPoint>) -> Self {
        HistoryRecorder {
            every: total_steps.div_ceil(500).max(1),
            points,
            ..Default::default()
        }
    }

    pub fn record(&mut self, step: u64, loss: f64, psnr: f64, num_gaussians: usize, last: bool) {
        if loss.is_finite() && psnr.is_finite() {
            self.sum_loss += loss;
            self.sum_psnr += psnr;
            self.n += 1;
        }
        if (step.is_multiple_of(self.every) || last) && self.n > 0 {
            self.points.push(HistoryPoint {
                step,
                loss: self.sum_loss / self.n as f64,
                psnr: self.sum_psnr / self.n as f64,
                num_gaussians,
            });
            self.sum_loss = 0.0;
            self.sum_psnr = 0.0;
            self.n = 0;
        }
    }
}

/// Widest image the report embeds (larger views are box-downscaled).
pub const REPORT_MAX_WIDTH: u32 = 512;

/// Errors at or above this (mean absolute error over RGB) are the hottest colour of the heat map.
pub const HEAT_MAX_ERROR: f32 = 0.25;

/// One evaluated view, as the report shows it.
#[derive(Clone, Debug)]
pub struct ReportView {
    pub name: String,
    pub ground_truth_png: String,
    pub render_png: String,
    pub error_png: String,
}

impl ReportView {
    /// Encodes the three images of a view (`render` is RGB in [0, 1]).
    pub fn new(name: &str, ground_truth: &Rgb8Image, render: &[f32]) -> Self {
        let (w, h) = (ground_truth.width, ground_truth.height);
        let to8 = |v: f32| (v.clamp(0.0, 1.0) * 255.0).round() as u8;
        let render8 = Rgb8Image {
            width: w,
            height: h,
            data: render.iter().map(|&v| to8(v)).collect(),
        };
        let heat = Rgb8Image {
            width: w,
            height: h,
            data: render
                .chunks_exact(3)
                .zip(ground_truth.data.chunks_exact(3))
                .flat_map(|(r, g)| {
                    let e = (0..3)
                        .map(|c| (r[c].clamp(0.0, 1.0) - g[c] as f32 / 255.0).abs())
                        .sum::<f32>()
                        / 3.0;
                    heat_colour(e / HEAT_MAX_ERROR)
                })
                .collect(),
        };
        let factor = w.div_ceil(REPORT_MAX_WIDTH).max(1);
        let png = |img: &Rgb8Image| {
            let img = downscale(img, factor);
            let rgb: Vec<f32> = img.data.iter().map(|&v| v as f32 / 255.0).collect();
            let bytes =
                splat_io::images::png_bytes(img.width, img.height, &rgb).expect("valid size");
            base64::engine::general_purpose::STANDARD.encode(bytes)
        };
        ReportView {
            name: name.to_string(),
            ground_truth_png: png(ground_truth),
            render_png: png(&render8),
            error_png: png(&heat),
        }
    }
}

/// A dark-to-bright ramp (black, purple, red, orange, pale yellow) for t in [0, 1].
fn heat_colour(t: f32) -> [u8; 3] {
    const STOPS: [[f32; 3]; 5] = [
        [0.0, 0.0, 0.02],
        [0.32, 0.07, 0.48],
        [0.72, 0.21, 0.33],
        [0.98, 0.55, 0.04],
        [0.99, 0.99, 0.75],
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        1.0
    };
    let x = t * (STOPS.len() - 1) as f32;
    let i = (x as usize).min(STOPS.len() - 2);
    let f = x - i as f32;
    std::array::from_fn(|c| ((STOPS[i][c] * (1.0 - f) + STOPS[i + 1][c] * f) * 255.0).round() as u8)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Round tick values covering [lo, hi].
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(1e-12);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() * step;
    (0..)
        .map(|k| first + k as f64 * step)
        .take_while(|v| *v <= hi + step * 1e-9)
        .collect()
}

fn tick_label(v: f64) -> String {
    if v.abs() >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').to_string()
    }
}

/// An SVG line chart of `(x, y)` points against steps.
pub fn line_chart(title: &str, y_label: &str, points: &[(f64, f64)], colour: &str) -> String {
    chart(title, ("step", y_label), points, colour)
}

/// An SVG line chart of `(x, y)` points with the axes' labels `(x, y)`; each point is also marked.
pub fn chart(title: &str, labels: (&str, &str), points: &[(f64, f64)], colour: &str) -> String {
    let (x_label, y_label) = labels;
    let (w, h) = (440.0, 260.0);
    let (left, right, top, bottom) = (64.0, 16.0, 30.0, 40.0);
    let finite: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{t}"><title>{t}</title><text x="{cx}" y="18" text-anchor="middle" class="title">{t}</text>"#,
        t = escape(title),
        cx = w / 2.0
    );
    if finite.is_empty() {
        svg += r#"<text x="220" y="130" text-anchor="middle">no data</text></svg>"#;
        return svg;
    }
    let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY);
    for &(x, y) in &finite {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= y0 {
        let pad = y0.abs().max(1.0) * 0.05;
        y0 -= pad;
        y1 += pad;
    }
    let px = |x: f64| left + (x - x0) / (x1 - x0) * (w - left - right);
    let py = |y: f64| h - bottom - (y - y0) / (y1 - y0) * (h - top - bottom);
    svg += &format!(
        r#"<rect x="{left}" y="{top}" width="{}" height="{}" class="frame"/>"#,
        w - left - right,
        h - top - bottom
    );
    for t in ticks(y0, y1) {
        let y = py(t);
        svg += &format!(
            r#"<line x1="{left}" x2="{}" y1="{y:.1}" y2="{y:.1}" class="grid"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            w - right,
            left - 6.0,
            y + 4.0,
            tick_label(t)
        );
    }
    for t in ticks(x0, x1) {
        let x = px(t);
        svg += &format!(
            r#"<line x1="{x:.1}" x2="{x:.1}" y1="{top}" y2="{}" class="grid"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
            h - bottom,
            h - bottom + 16.0,
            tick_label(t)
        );
    }
    svg += &format!(
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text><text x="14" y="{}" text-anchor="middle" transform="rotate(-90 14 {})">{}</text>"#,
        left + (w - left - right) / 2.0,
        h - 6.0,
        escape(x_label),
        top + (h - top - bottom) / 2.0,
        top + (h - top - bottom) / 2.0,
        escape(y_label)
    );
    if finite.len() <= 64 {
        for &(x, y) in &finite {
            svg += &format!(
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{colour}"/>"#,
                px(x),
                py(y)
            );
        }
    }
    let path: Vec<String> = finite
        .iter()
        .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
        .collect();
    svg += &format!(
        r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{}"/></svg>"#,
        path.join(" ")
    );
    svg
}

/// The whole page.
pub fn report_html(metrics: &Metrics, history: &[HistoryPoint], views: &[ReportView]) -> String {
    let series = |f: fn(&HistoryPoint) -> f64| -> Vec<(f64, f64)> {
        history.iter().map(|p| (p.step as f64, f(p))).collect()
    };
    let mut html = String::from(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"/><meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>splat training report</title>
<style>
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; background: #fafafa; }
h1, h2 { font-weight: 600; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
.chart { background: #fff; border: 1px solid #ddd; font-size: 11px; }
.chart .title { font-size: 13px; font-weight: 600; }
.chart .frame { fill: none; stroke: #999; }
.chart .grid { stroke: #eee; }
table { border-collapse: collapse; background: #fff; }
td, th { border: 1px solid #ddd; padding: 4px 10px; text-align: right; }
td:first-child, th:first-child { text-align: left; }
.view { display: flex; gap: 8px; align-items: flex-start; margin: 12px 0; }
.view figure { margin: 0; }
.view img { display: block; max-width: 100%; image-rendering: pixelated; }
figcaption { font-size: 12px; color: #555; }
</style></head><body>
"#,
    );
    html += &format!(
        "<h1>splat training report</h1>\n<p id=\"summary\">{} steps in {:.1} s ({:.2} it/s) on the {} backend; {} Gaussians; \
         {} split: PSNR <b>{:.2} dB</b>, SSIM <b>{:.4}</b>{}{}.</p>\n",
        metrics.iterations,
        metrics.train_seconds,
        metrics.its_per_second,
        escape(&metrics.backend),
        metrics.num_gaussians,
        escape(&metrics.split),
        metrics.psnr,
        metrics.ssim,
        metrics.cc_psnr.map_or(String::new(), |c| format!(
            ", colour-corrected PSNR <b id=\"cc-psnr\">{c:.2} dB</b>"
        )),
        if metrics.skipped_steps > 0 {
            format!("; {} non-finite steps skipped", metrics.skipped_steps)
        } else {
            String::new()
        }
    );
    html += "<h2>Training</h2>\n<div class=\"charts\">\n";
    html += &line_chart("Loss (L1 + D-SSIM)", "loss", &series(|p| p.loss), "#c0392b");
    html += "\n";
    html += &line_chart("Training-view PSNR", "dB", &series(|p| p.psnr), "#2471a3");
    html += "\n";
    html += &line_chart(
        "Gaussians",
        "count",
        &series(|p| p.num_gaussians as f64),
        "#1e8449",
    );
    html += "\n</div>\n";
    if !metrics.psnr_over_time.is_empty() {
        let curve: Vec<(f64, f64)> = (metrics.psnr_over_time.iter())
            .map(|p| (p.seconds, p.psnr))
            .collect();
        html += "<h2>Quality against time</h2>\n<div class=\"charts\" id=\"psnr-over-time\">\n";
        html += &chart(
            &format!("Test PSNR ({} views)", metrics.views.len()),
            ("training seconds", "dB"),
            &curve,
            "#7d3c98",
        );
        html += "\n</div>\n";
    }
    html += &metrics_table(metrics);
    html += &views_section(metrics, views);
    html += "</body></html>\n";
    html
}

/// The per-view evaluation table with its mean row.
fn metrics_table(metrics: &Metrics) -> String {
    let mut html = String::new();
    html += &format!(
        "<h2>Evaluation ({} views)</h2>\n<table id=\"metrics\"><thead><tr><th>view</th><th>PSNR (dB)</th><th>SSIM</th><th>cc-PSNR (dB)</th></tr></thead><tbody>\n",
        escape(&metrics.split)
    );
    for v in &metrics.views {
        html += &format!(
            "<tr class=\"view-metrics\"><td>{}</td><td data-value=\"{}\">{:.2}</td><td data-value=\"{}\">{:.4}</td>{}</tr>\n",
            escape(&v.name),
            v.psnr,
            v.psnr,
            v.ssim,
            v.ssim,
            cc_cell(v.cc_psnr, "td")
        );
    }
    html += &format!(
        "<tr id=\"mean\"><th>mean</th><th data-value=\"{}\">{:.2}</th><th data-value=\"{}\">{:.4}</th>{}</tr>\n</tbody></table>\n",
        metrics.psnr,
        metrics.psnr,
        metrics.ssim,
        metrics.ssim,
        cc_cell(metrics.cc_psnr, "th")
    );
    html
}

/// The ground truth, render and error image of each shown view.
fn views_section(metrics: &Metrics, views: &[ReportView]) -> String {
    let mut html = String::new();
    let shown = if views.len() < metrics.views.len() {
        format!(
            " {} of the {} views, evenly spaced.",
            views.len(),
            metrics.views.len()
        )
    } else {
        String::new()
    };
    html += &format!(
        "<h2>Views</h2>\n<p>Ground truth, render, and the mean absolute error over RGB (black 0, pale yellow {HEAT_MAX_ERROR} or more).{shown}</p>\n"
    );
    for v in views {
        html += &format!("<div class=\"view\"><h3>{}</h3>\n", escape(&v.name));
        for (caption, data) in [
            ("ground truth", &v.ground_truth_png),
            ("render", &v.render_png),
            ("error", &v.error_png),
        ] {
            html += &format!(
                "<figure><img alt=\"{caption} {name}\" src=\"data:image/png;base64,{data}\"/><figcaption>{caption}</figcaption></figure>\n",
                name = escape(&v.name)
            );
        }
        html += "</div>\n";
    }
    html
}

/// A table cell with a colour-corrected PSNR (`-` for files written before it was measured).
fn cc_cell(cc: Option<f64>, tag: &str) -> String {
    match cc {
        Some(c) => format!("<{tag} data-value=\"{c}\">{c:.2}</{tag}>"),
        None => format!("<{tag}>-</{tag}>"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = ticks(0.013, 0.087);
        assert!(t.len() >= 3 && t[0] >= 0.013 && *t.last().unwrap() <= 0.087 + 1e-12);
    }

    #[test]
    fn recorder_averages_and_keeps_the_last_step() {
        let mut r = HistoryRecorder::new(1000, Vec::new());
        assert_eq!(r.every, 2);
        r.record(1, 1.0, 10.0, 5, false);
        r.record(2, 3.0, 20.0, 6, false);
        r.record(3, 5.0, 30.0, 7, true);
        assert_eq!(
            r.points,
            vec![
                HistoryPoint {
                    step: 2,
                    loss: 2.0,
                    psnr: 15.0,
                    num_gaussians: 6
                },
                HistoryPoint {
                    step: 3,
                    loss: 5.0,
                    psnr: 30.0,
                    num_gaussians: 7
                }
            ]
        );
    }

    #[test]
    fn heat_ramp_ends() {
        assert_eq!(heat_colour(0.0), [0, 0, 5]);
        assert_eq!(heat_colour(1.0), heat_colour(7.0));
        assert_eq!(heat_colour(f32::NAN), heat_colour(1.0));
    }
}
