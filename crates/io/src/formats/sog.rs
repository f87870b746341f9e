//! PlayCanvas SOG, version 2: `meta.json` and lossless WebP images with one texel per splat (row
//! major, in Morton order), as one zip (`.sog`) or as a folder.
//!
//! - `means_l.webp` / `means_u.webp`: low and high bytes of 16-bit positions per axis, between the
//!   `mins` and `maxs` of `sign(x) ln(1 + |x|)`.
//! - `quats.webp`: the smallest three components of the unit quaternion `(w, x, y, z)`, sign chosen
//!   so the largest is positive, as `255 (q sqrt(2) / 2 + 1/2)`; alpha `252 +` the largest's index.
//! - `scales.webp`: per axis an index into `scales.codebook` (256 log-scales, one for all axes).
//! - `sh0.webp`: per channel an index into `sh0.codebook` (256 DC coefficients); alpha the opacity.
//! - `shN_centroids.webp` / `shN_labels.webp` (SH degree > 0): a palette of SH vectors, 64 per row,
//!   each `K - 1` texels whose RGB index `shN.codebook`; every splat's 16-bit palette label.
//!
//! The palette here has at most [`MAX_PALETTE`] entries (k-means on a sample; a scene with fewer
//! splats keeps every vector). Codebooks are 1-D k-means with the extremes kept, so every value
//! quantizes within half the gap between the entries around it.

use std::io::{Cursor, Read, Write};
use std::path::Path;

use serde_json::{json, Value};
use splat_core::{sh_coeffs_for_degree, Gaussians};

use super::kmeans;
use super::quant::{fit_codebook, logit, morton_order, nearest, permuted, sigmoid, unit_quat};
use super::{decode_limit, FormatErrorKind, SceneFormat, WriteOptions, MAX_SPLATS};

/// The most SH palette entries written (the format allows 65,536; more costs k-means time).
pub const MAX_PALETTE: usize = 4096;
/// WebP's largest side.
const MAX_SIDE: u32 = 16383;

fn log_t(x: f32) -> f64 {
    let x = x as f64;
    x.signum() * (x.abs() + 1.0).ln()
}

fn inv_log_t(v: f64) -> f64 {
    v.signum() * (v.abs().exp() - 1.0)
}

/// The texture size for `n` splats: both sides multiples of 4, about square.
fn texture_size(n: usize) -> (u32, u32) {
    let w = ((n as f64).sqrt() / 4.0).ceil().max(1.0) as u32 * 4;
    let h = ((n as f64 / w as f64) / 4.0).ceil().max(1.0) as u32 * 4;
    (w, h)
}

fn webp(rgba: &[u8], w: u32, h: u32) -> Result<Vec<u8>, FormatErrorKind> {
    let mut out = Vec::new();
    image_webp::WebPEncoder::new(&mut out)
        .encode(rgba, w, h, image_webp::ColorType::Rgba8)
        .map_err(|e| FormatErrorKind::invalid(format!("WebP encoding: {e}")))?;
    Ok(out)
}

/// A texture of `w x h` RGBA texels from per-splat texels.
fn texture(texels: impl Iterator<Item = [u8; 4]>, w: u32, h: u32) -> Vec<u8> {
    let mut out = vec![0u8; (w * h * 4) as usize];
    for (i, t) in texels.enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&t);
    }
    out
}

/// A file of a SOG scene: its name and bytes.
pub type NamedFile = (String, Vec<u8>);

/// The files of a SOG scene: the images, then `meta.json`.
pub fn encode_files(
    g: &Gaussians<f32>,
    opts: &WriteOptions,
) -> Result<Vec<NamedFile>, FormatErrorKind> {
    let g = permuted(g, &morton_order(&g.means));
    let n = g.len();
    let (w, h) = texture_size(n);
    if w > MAX_SIDE || h > MAX_SIDE {
        return Err(FormatErrorKind::invalid(format!(
            "{n} splats do not fit SOG's 16383 x 16383 texels"
        )));
    }
    let mut files = Vec::new();
    // Positions.
    let lt: Vec<[f64; 3]> = g.means.iter().map(|m| m.map(log_t)).collect();
    let mins: [f64; 3] =
        std::array::from_fn(|k| lt.iter().map(|v| v[k]).fold(f64::INFINITY, f64::min));
    let maxs: [f64; 3] =
        std::array::from_fn(|k| lt.iter().map(|v| v[k]).fold(f64::NEG_INFINITY, f64::max));
    let q16: Vec<[u32; 3]> = lt
        .iter()
        .map(|v| {
            std::array::from_fn(|k| {
                super::quant::unorm(super::quant::normalize(v[k], mins[k], maxs[k]), 16)
            })
        })
        .collect();
    let lo = texture(
        q16.iter()
            .map(|q| [q[0] as u8, q[1] as u8, q[2] as u8, 255]),
        w,
        h,
    );
    let hi = texture(
        q16.iter()
            .map(|q| [(q[0] >> 8) as u8, (q[1] >> 8) as u8, (q[2] >> 8) as u8, 255]),
        w,
        h,
    );
    files.push(("means_l.webp".to_string(), webp(&lo, w, h)?));
    files.push(("means_u.webp".to_string(), webp(&hi, w, h)?));
    // Rotations.
    let quats = texture(g.rotations.iter().map(|&q| pack_quat(q)), w, h);
    files.push(("quats.webp".to_string(), webp(&quats, w, h)?));
    // Scales and DC through codebooks.
    let scale_cb = fit_codebook(&g.log_scales.iter().flatten().copied().collect::<Vec<_>>());
    let scales = texture(
        g.log_scales.iter().map(|s| {
            let [a, b, c] = s.map(|v| nearest(&scale_cb, v));
            [a, b, c, 255]
        }),
        w,
        h,
    );
    files.push(("scales.webp".to_string(), webp(&scales, w, h)?));
    let dc_cb = fit_codebook(&g.sh_dc.iter().flatten().copied().collect::<Vec<_>>());
    let sh0 = texture(
        (0..n).map(|i| {
            let [a, b, c] = g.sh_dc[i].map(|v| nearest(&dc_cb, v));
            [
                a,
                b,
                c,
                (sigmoid(g.opacity_logits[i]) * 255.0).round() as u8,
            ]
        }),
        w,
        h,
    );
    files.push(("sh0.webp".to_string(), webp(&sh0, w, h)?));
    let mut meta = json!({
        "version": 2,
        "asset": {"generator": "splat"},
        "count": n,
        "means": {"mins": mins_or_zero(mins), "maxs": mins_or_zero(maxs), "files": ["means_l.webp", "means_u.webp"]},
        "scales": {"codebook": scale_cb, "files": ["scales.webp"]},
        "quats": {"files": ["quats.webp"]},
        "sh0": {"codebook": dc_cb, "files": ["sh0.webp"]},
    });
    if g.antialiased {
        meta["antialias"] = json!(true);
    }
    if g.sh_degree > 0 && n > 0 {
        let (entries, shn) = encode_palette(&g, w, h, opts)?;
        files.extend(entries);
        meta["shN"] = shn;
    }
    files.push((
        "meta.json".to_string(),
        serde_json::to_vec(&meta).expect("JSON"),
    ));
    Ok(files)
}

fn mins_or_zero(v: [f64; 3]) -> [f64; 3] {
    v.map(|x| if x.is_finite() { x } else { 0.0 })
}

fn pack_quat(q: [f32; 4]) -> [u8; 4] {
    let mut u = unit_quat(q);
    let largest = (0..4)
        .max_by(|&i, &j| u[i].abs().total_cmp(&u[j].abs()).then(j.cmp(&i)))
        .unwrap();
    if u[largest] < 0.0 {
        u = u.map(|v| -v);
    }
    let mut t = [0u8; 4];
    let mut j = 0;
    for (i, v) in u.iter().enumerate() {
        if i != largest {
            let b = 255.0 * (v * std::f64::consts::SQRT_2 * 0.5 + 0.5);
            t[j] = b.round().clamp(0.0, 255.0) as u8;
            j += 1;
        }
    }
    t[3] = 252 + largest as u8;
    t
}

fn unpack_quat(t: &[u8]) -> [f32; 4] {
    if !(252..=255).contains(&t[3]) {
        return [1.0, 0.0, 0.0, 0.0];
    }
    let largest = (t[3] - 252) as usize;
    let mut q = [0.0f64; 4];
    let mut j = 0;
    let mut sum = 0.0;
    for (i, v) in q.iter_mut().enumerate() {
        if i != largest {
            *v = (t[j] as f64 / 255.0 * 2.0 - 1.0) / std::f64::consts::SQRT_2;
            sum += *v * *v;
            j += 1;
        }
    }
    q[largest] = (1.0 - sum).max(0.0).sqrt();
    q.map(|v| v as f32)
}

/// The SH palette's two images and its `shN` entry.
fn encode_palette(
    g: &Gaussians<f32>,
    w: u32,
    h: u32,
    opts: &WriteOptions,
) -> Result<(Vec<NamedFile>, Value), FormatErrorKind> {
    let n = g.len();
    let kr = g.sh_coeffs() - 1;
    let dim = 3 * kr;
    // Vectors in f_rest order: channel-major.
    let data: Vec<f32> = (0..n)
        .flat_map(|i| {
            let r = g.sh_rest_of(i);
            (0..dim).map(move |j| r[(j % kr) * 3 + j / kr])
        })
        .collect();
    let palette = kmeans::cluster(&data, dim, MAX_PALETTE, opts.sog_iterations);
    let entries = palette.centroids.len() / dim;
    let cb = fit_codebook(&palette.centroids);
    let (cw, ch) = (64 * kr as u32, entries.div_ceil(64) as u32);
    let mut cen = vec![0u8; (cw * ch * 4) as usize];
    for e in 0..entries {
        for j in 0..kr {
            let at = 4 * ((e / 64) * cw as usize + (e % 64) * kr + j);
            for c in 0..3 {
                cen[at + c] = nearest(&cb, palette.centroids[e * dim + c * kr + j]);
            }
            cen[at + 3] = 255;
        }
    }
    let labels = texture(
        palette
            .labels
            .iter()
            .map(|&l| [l as u8, (l >> 8) as u8, 0, 255]),
        w,
        h,
    );
    let files = vec![
        ("shN_centroids.webp".to_string(), webp(&cen, cw, ch)?),
        ("shN_labels.webp".to_string(), webp(&labels, w, h)?),
    ];
    let meta = json!({
        "count": entries,
        "bands": g.sh_degree,
        "codebook": cb,
        "files": ["shN_centroids.webp", "shN_labels.webp"],
    });
    Ok((files, meta))
}

/// A `.sog` zip: the same files, stored.
pub fn encode_zip(g: &Gaussians<f32>, opts: &WriteOptions) -> Result<Vec<u8>, FormatErrorKind> {
    let files = encode_files(g, opts)?;
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .last_modified_time(zip::DateTime::default());
    let zerr = |e: zip::result::ZipError| FormatErrorKind::invalid(format!("zip: {e}"));
    // meta.json first, as splat-transform writes it, so readers can stream.
    let mut ordered: Vec<&NamedFile> = files.iter().filter(|f| f.0 == "meta.json").collect();
    ordered.extend(files.iter().filter(|f| f.0 != "meta.json"));
    for (name, bytes) in ordered {
        zip.start_file(name.as_str(), options).map_err(zerr)?;
        zip.write_all(bytes)?;
    }
    Ok(zip.finish().map_err(zerr)?.into_inner())
}

/// Decodes a `.sog` zip.
pub fn decode_zip(bytes: &[u8]) -> Result<Gaussians<f32>, FormatErrorKind> {
    let corrupt = |e: zip::result::ZipError| FormatErrorKind::Corrupt {
        what: "zip",
        why: e.to_string(),
    };
    let archive =
        std::cell::RefCell::new(zip::ZipArchive::new(Cursor::new(bytes)).map_err(corrupt)?);
    let limit = decode_limit(bytes.len());
    let load = |name: &str| -> Result<Vec<u8>, FormatErrorKind> {
        let mut a = archive.borrow_mut();
        let f = a.by_name(name).map_err(|e| match e {
            zip::result::ZipError::FileNotFound => {
                FormatErrorKind::invalid(format!("the zip has no {name}"))
            }
            e => corrupt(e),
        })?;
        let mut out = Vec::new();
        f.take(limit + 1)
            .read_to_end(&mut out)
            .map_err(|e| FormatErrorKind::Corrupt {
                what: "zip entry",
                why: format!("{name}: {e}"),
            })?;
        if out.len() as u64 > limit {
            return Err(FormatErrorKind::invalid(format!(
                "{name} expands beyond {limit} bytes"
            )));
        }
        Ok(out)
    };
    let meta = load("meta.json")?;
    decode_with(&meta, &load)
}

/// Decodes a SOG folder from its `meta.json` bytes; the images are read from beside `path`.
pub fn decode_folder(meta: &[u8], path: &Path) -> Result<Gaussians<f32>, FormatErrorKind> {
    let dir = path.parent().unwrap_or(Path::new("."));
    decode_with(meta, &|name: &str| {
        if name.contains('/') || name.contains('\\') || name.contains("..") {
            return Err(FormatErrorKind::invalid(format!(
                "image name {name:?}: only files beside meta.json are read"
            )));
        }
        let p = dir.join(name);
        std::fs::read(&p).map_err(|e| FormatErrorKind::invalid(format!("{}: {e}", p.display())))
    })
}

/// A decoded RGBA image.
struct Image {
    w: usize,
    h: usize,
    rgba: Vec<u8>,
}

fn decode_webp(bytes: &[u8], name: &str) -> Result<Image, FormatErrorKind> {
    let corrupt = |e: image_webp::DecodingError| FormatErrorKind::Corrupt {
        what: "WebP image",
        why: format!("{name}: {e}"),
    };
    let mut d = image_webp::WebPDecoder::new(Cursor::new(bytes)).map_err(corrupt)?;
    let (w, h) = d.dimensions();
    if w > MAX_SIDE || h > MAX_SIDE {
        return Err(FormatErrorKind::invalid(format!(
            "{name}: {w} x {h} texels"
        )));
    }
    let size = w as u64 * h as u64 * 4;
    let limit = decode_limit(bytes.len());
    if size > limit {
        return Err(FormatErrorKind::invalid(format!(
            "{name}: {w} x {h} texels from {} bytes",
            bytes.len()
        )));
    }
    if d.is_lossy() {
        return Err(FormatErrorKind::invalid(format!(
            "{name} is lossy WebP: SOG images must be lossless"
        )));
    }
    d.set_memory_limit(limit as usize);
    let channels = if d.has_alpha() { 4 } else { 3 };
    let mut buf = vec![0u8; w as usize * h as usize * channels];
    d.read_image(&mut buf).map_err(corrupt)?;
    let rgba = if channels == 4 {
        buf
    } else {
        buf.chunks_exact(3)
            .flat_map(|c| [c[0], c[1], c[2], 255])
            .collect()
    };
    Ok(Image {
        w: w as usize,
        h: h as usize,
        rgba,
    })
}

fn field<'a>(v: &'a Value, path: &str) -> Result<&'a Value, FormatErrorKind> {
    let mut cur = v;
    for key in path.split('.') {
        cur = cur
            .get(key)
            .ok_or_else(|| FormatErrorKind::invalid(format!("meta.json has no {path}")))?;
    }
    Ok(cur)
}

fn floats(v: &Value, path: &str, len: Option<usize>) -> Result<Vec<f32>, FormatErrorKind> {
    let arr = field(v, path)?
        .as_array()
        .ok_or_else(|| FormatErrorKind::invalid(format!("meta.json {path} is not a list")))?;
    if len.is_some_and(|l| arr.len() != l) || arr.len() > 65536 || arr.is_empty() {
        return Err(FormatErrorKind::invalid(format!(
            "meta.json {path} has {} entries",
            arr.len()
        )));
    }
    arr.iter()
        .map(|x| {
            x.as_f64()
                .map(|f| f as f32)
                .filter(|f| f.is_finite())
                .ok_or_else(|| {
                    FormatErrorKind::invalid(format!(
                        "meta.json {path}: {x} is not a finite number"
                    ))
                })
        })
        .collect()
}

fn file_name(v: &Value, path: &str, i: usize) -> Result<String, FormatErrorKind> {
    field(v, path)?
        .get(i)
        .and_then(|f| f.as_str())
        .map(str::to_string)
        .ok_or_else(|| {
            FormatErrorKind::invalid(format!("meta.json {path}[{i}] is not a file name"))
        })
}

fn decode_with(
    meta: &[u8],
    load: &dyn Fn(&str) -> Result<Vec<u8>, FormatErrorKind>,
) -> Result<Gaussians<f32>, FormatErrorKind> {
    let m: Value = serde_json::from_slice(meta).map_err(|e| FormatErrorKind::Corrupt {
        what: "meta.json",
        why: e.to_string(),
    })?;
    match m.get("version").and_then(|v| v.as_u64()) {
        Some(2) => {}
        Some(v) => {
            return Err(FormatErrorKind::Unsupported(format!(
                "SOG version {v} (this reads 2)"
            )))
        }
        None => {
            return Err(FormatErrorKind::NotFormat {
                format: SceneFormat::Sog,
                why: "meta.json has no version (SOG version 1 is not read)".into(),
            })
        }
    }
    let n = field(&m, "count")?
        .as_u64()
        .filter(|&c| c <= MAX_SPLATS)
        .ok_or_else(|| {
            FormatErrorKind::invalid("meta.json count is not a whole number up to 2^26")
        })? as usize;
    let image = |path: &str, i: usize, min_texels: usize| -> Result<Image, FormatErrorKind> {
        let name = file_name(&m, path, i)?;
        let img = decode_webp(&load(&name)?, &name)?;
        if img.w * img.h < min_texels {
            return Err(FormatErrorKind::invalid(format!(
                "{name}: {} x {} texels for {min_texels} entries",
                img.w, img.h
            )));
        }
        Ok(img)
    };
    let mins = floats(&m, "means.mins", Some(3))?;
    let maxs = floats(&m, "means.maxs", Some(3))?;
    let (lo, hi) = (image("means.files", 0, n)?, image("means.files", 1, n)?);
    let quats = image("quats.files", 0, n)?;
    let scale_cb = floats(&m, "scales.codebook", None)?;
    let scales = image("scales.files", 0, n)?;
    let dc_cb = floats(&m, "sh0.codebook", None)?;
    let sh0 = image("sh0.files", 0, n)?;
    let palette = match m.get("shN") {
        Some(_) => Some(read_palette(&m, n, &image)?),
        None => None,
    };
    let degree = palette.as_ref().map_or(0, |p| p.degree);
    let kr = sh_coeffs_for_degree(degree) - 1;
    let lookup = |cb: &[f32], b: u8, what: &str| -> Result<f32, FormatErrorKind> {
        cb.get(b as usize).copied().ok_or_else(|| {
            FormatErrorKind::invalid(format!(
                "{what} index {b} beyond its codebook of {}",
                cb.len()
            ))
        })
    };
    let mut g = Gaussians::new(degree);
    g.antialiased = m
        .get("antialias")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let mut rest = vec![0.0f32; 3 * kr];
    for i in 0..n {
        let t = 4 * i;
        let mean: [f32; 3] = std::array::from_fn(|k| {
            let q = lo.rgba[t + k] as f64 + 256.0 * hi.rgba[t + k] as f64;
            let v = mins[k] as f64 + (maxs[k] as f64 - mins[k] as f64) * q / 65535.0;
            inv_log_t(v) as f32
        });
        if !mean.iter().all(|v| v.is_finite()) {
            return Err(FormatErrorKind::invalid(format!(
                "splat {i}: position beyond f32"
            )));
        }
        let mut log_scale = [0.0; 3];
        let mut dc = [0.0; 3];
        for k in 0..3 {
            log_scale[k] = lookup(&scale_cb, scales.rgba[t + k], "scale")?;
            dc[k] = lookup(&dc_cb, sh0.rgba[t + k], "sh0")?;
        }
        if let Some(p) = &palette {
            p.fill(i, &mut rest)?;
        }
        g.push(
            mean,
            log_scale,
            unpack_quat(&quats.rgba[t..t + 4]),
            logit(sh0.rgba[t + 3] as f64 / 255.0),
            dc,
            &rest,
        );
    }
    Ok(g)
}

struct Palette {
    degree: usize,
    entries: usize,
    codebook: Vec<f32>,
    centroids: Image,
    labels: Image,
}

impl Palette {
    /// Splat `i`'s SH rest, `[coefficient][channel]`; a label beyond the palette gives zeros.
    fn fill(&self, i: usize, rest: &mut [f32]) -> Result<(), FormatErrorKind> {
        let kr = rest.len() / 3;
        let label = self.labels.rgba[4 * i] as usize | (self.labels.rgba[4 * i + 1] as usize) << 8;
        if label >= self.entries {
            rest.fill(0.0);
            return Ok(());
        }
        for j in 0..kr {
            let at = 4 * ((label / 64) * self.centroids.w + (label % 64) * kr + j);
            for c in 0..3 {
                let b = self.centroids.rgba[at + c] as usize;
                rest[j * 3 + c] = *self.codebook.get(b).ok_or_else(|| {
                    FormatErrorKind::invalid(format!("shN index {b} beyond its codebook"))
                })?;
            }
        }
        Ok(())
    }
}

fn read_palette(
    m: &Value,
    n: usize,
    image: &dyn Fn(&str, usize, usize) -> Result<Image, FormatErrorKind>,
) -> Result<Palette, FormatErrorKind> {
    let degree = field(m, "shN.bands")?
        .as_u64()
        .filter(|b| (1..=3).contains(b))
        .ok_or_else(|| FormatErrorKind::invalid("meta.json shN.bands is not 1, 2 or 3"))?
        as usize;
    let entries = field(m, "shN.count")?
        .as_u64()
        .filter(|&c| c <= 65536)
        .ok_or_else(|| {
            FormatErrorKind::invalid("meta.json shN.count is not a whole number up to 65536")
        })? as usize;
    let kr = sh_coeffs_for_degree(degree) - 1;
    let codebook = floats(m, "shN.codebook", None)?;
    let centroids = image("shN.files", 0, 0)?;
    if centroids.w != 64 * kr || centroids.h < entries.div_ceil(64) {
        return Err(FormatErrorKind::invalid(format!(
            "shN centroids are {} x {} texels, a palette of {entries} at SH degree {degree} needs {} x {}",
            centroids.w,
            centroids.h,
            64 * kr,
            entries.div_ceil(64)
        )));
    }
    let labels = image("shN.files", 1, n)?;
    Ok(Palette {
        degree,
        entries,
        codebook,
        centroids,
        labels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quats_and_positions_round_trip() {
        for q in [
            [1.0f32, 0.0, 0.0, 0.0],
            [0.1, 0.9, -0.3, 0.2],
            [-0.5, 0.5, 0.5, -0.5],
        ] {
            let u = unit_quat(q);
            let b = unpack_quat(&pack_quat(q));
            let dot: f64 = (0..4).map(|k| u[k] * b[k] as f64).sum();
            assert!(dot.abs() > 0.9995, "{q:?} {b:?}");
        }
        for x in [-1000.0f32, -1.5, 0.0, 0.25, 77.0] {
            assert!((inv_log_t(log_t(x)) - x as f64).abs() < 1e-9 * (1.0 + x.abs() as f64));
        }
        assert_eq!(texture_size(0), (4, 4));
        assert_eq!(texture_size(1000), (32, 32));
    }
}
