//! antimatter15's `.splat`: no header, 32 bytes a splat: `f32` position, `f32` linear scale, `u8`
//! RGBA (colour `0.5 + C0 dc` and opacity, each `x 255`), `u8` quaternion `(w, x, y, z)` as
//! `q 128 + 128`. No SH above degree 0. The count is the file's length / 32.

use splat_core::sh::SH_C0;
use splat_core::Gaussians;

use super::quant::{log_of_linear, logit, sigmoid, unit_quat};
use super::{f32_le, finite, FormatErrorKind, MAX_SPLATS};

/// Bytes a splat.
pub const RECORD: usize = 32;

fn byte(x: f64) -> u8 {
    x.round().clamp(0.0, 255.0) as u8
}

/// Encodes a scene, in its order (SH above degree 0 is dropped).
pub fn encode(g: &Gaussians<f32>) -> Vec<u8> {
    let mut out = Vec::with_capacity(g.len() * RECORD);
    for i in 0..g.len() {
        for v in g.means[i] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in g.log_scales[i] {
            out.extend_from_slice(&v.exp().to_le_bytes());
        }
        for dc in g.sh_dc[i] {
            out.push(byte((0.5 + SH_C0 * dc as f64) * 255.0));
        }
        out.push(byte(sigmoid(g.opacity_logits[i]) * 255.0));
        for c in unit_quat(g.rotations[i]) {
            out.push(byte(c * 128.0 + 128.0));
        }
    }
    out
}

/// Decodes a `.splat` (SH degree 0).
pub fn decode(bytes: &[u8]) -> Result<Gaussians<f32>, FormatErrorKind> {
    if !bytes.len().is_multiple_of(RECORD) {
        return Err(FormatErrorKind::NotFormat {
            format: super::SceneFormat::Splat,
            why: format!("{} bytes is not a multiple of 32", bytes.len()),
        });
    }
    let n = bytes.len() / RECORD;
    if n as u64 > MAX_SPLATS {
        return Err(FormatErrorKind::invalid(format!(
            "{n} splats: more than the {MAX_SPLATS} a reader accepts"
        )));
    }
    let mut g = Gaussians::new(0);
    for (i, r) in bytes.chunks_exact(RECORD).enumerate() {
        let f = |k: usize| f32_le(r, 4 * k);
        let mean = [
            finite(f(0), i, "x")?,
            finite(f(1), i, "y")?,
            finite(f(2), i, "z")?,
        ];
        let mut log_scale = [0.0; 3];
        for k in 0..3 {
            log_scale[k] = log_of_linear(finite(f(3 + k), i, "scale")?);
        }
        let dc = [0, 1, 2].map(|k| ((r[24 + k] as f64 / 255.0 - 0.5) / SH_C0) as f32);
        let opacity = logit(r[27] as f64 / 255.0);
        let q = [0, 1, 2, 3].map(|k| (r[28 + k] as f32 - 128.0) / 128.0);
        let q = unit_quat(q).map(|v| v as f32);
        g.push(mean, log_scale, q, opacity, dc, &[]);
    }
    Ok(g)
}
