//! Niantic's SPZ, versions 1 to 4 read, 2 to 4 written (3 by default: what browsers read).
//!
//! v1-v3: the whole file is gzip; inside, a 16-byte header {`NGSP`, version, count, SH degree,
//! fractional bits, flags, reserved} and the attributes one after another: positions (24-bit signed
//! fixed point with 12 fractional bits; v1: float16), opacity (`sigmoid x 255`), DC colour
//! (`dc 0.15 x 255 + 127.5`), log-scales (`(s + 10) 16`), rotations (v1/v2: x, y, z of the quaternion
//! with w >= 0 as `q 127.5 + 127.5`; v3: smallest three of (x, y, z, w), 9 bits and a sign each, the
//! largest's index in the top 2 bits), SH (`q 128 + 128` rounded to 5 bits at degree 1 and 4 above,
//! coefficient-major with the channel innermost).
//! v4: a plain 32-byte header {.., stream count, table offset, reserved}, a table of (compressed,
//! uncompressed) u64 sizes, and each attribute its own zstd stream, in the same order.
//!
//! Positions are stored in the training frame as they are (no axis conversion), as the tools that
//! exchange SPZ do. Files with extension records (header flag 2) are refused: their SH quantization
//! record would change how SH decodes. SH of degree 4 (v4) is read up to degree 3.

use std::io::{Read, Write};

use splat_core::{sh_coeffs_for_degree, Gaussians};

use super::quant::{logit, sigmoid, unit_quat};
use super::{decode_limit, take, u32_le, FormatErrorKind, SceneFormat, MAX_SPLATS};

pub const MAGIC: u32 = 0x5053_474e;
const FRACTIONAL_BITS: u8 = 12;
const COLOR_SCALE: f64 = 0.15;
const FLAG_ANTIALIASED: u8 = 0x1;
const FLAG_EXTENSIONS: u8 = 0x2;

fn byte(x: f64) -> u8 {
    x.round().clamp(0.0, 255.0) as u8
}

fn quantize_sh(x: f32, bits: u32) -> u8 {
    let bucket = 1i32 << (8 - bits);
    let q = (x as f64 * 128.0).round() as i32 + 128;
    let q = (q + bucket / 2) / bucket * bucket;
    q.clamp(0, 255) as u8
}

/// Smallest three of the unit quaternion in (x, y, z, w) order.
fn pack_smallest_three(q: [f32; 4]) -> [u8; 4] {
    let u = unit_quat(q);
    let xyzw = [u[1], u[2], u[3], u[0]];
    let largest = (0..4)
        .max_by(|&i, &j| xyzw[i].abs().total_cmp(&xyzw[j].abs()).then(j.cmp(&i)))
        .unwrap();
    let negate = xyzw[largest] < 0.0;
    let mut comp = largest as u32;
    for (i, &v) in xyzw.iter().enumerate() {
        if i != largest {
            let neg = ((v < 0.0) != negate) as u32;
            let mag = (511.0 * (v.abs() / std::f64::consts::FRAC_1_SQRT_2) + 0.5) as u32;
            comp = comp << 10 | neg << 9 | mag.min(511);
        }
    }
    comp.to_le_bytes()
}

fn unpack_smallest_three(b: &[u8]) -> [f32; 4] {
    let mut comp = u32::from_le_bytes(b[..4].try_into().unwrap());
    let largest = (comp >> 30) as usize;
    let mut q = [0.0f64; 4];
    let mut sum = 0.0;
    for i in (0..4).rev() {
        if i != largest {
            let mag = (comp & 511) as f64;
            let neg = comp >> 9 & 1 == 1;
            comp >>= 10;
            let v = std::f64::consts::FRAC_1_SQRT_2 * mag / 511.0;
            q[i] = if neg { -v } else { v };
            sum += q[i] * q[i];
        }
    }
    q[largest] = (1.0 - sum).max(0.0).sqrt();
    [q[3], q[0], q[1], q[2]].map(|v| v as f32)
}

fn pack_first_three(q: [f32; 4]) -> [u8; 3] {
    let u = unit_quat(q);
    let s = if u[0] < 0.0 { -127.5 } else { 127.5 };
    [u[1], u[2], u[3]].map(|v| byte(v * s + 127.5))
}

fn unpack_first_three(b: &[u8]) -> [f32; 4] {
    let xyz = [0, 1, 2].map(|k| b[k] as f64 / 127.5 - 1.0);
    let w = (1.0 - xyz.iter().map(|v| v * v).sum::<f64>())
        .max(0.0)
        .sqrt();
    [w, xyz[0], xyz[1], xyz[2]].map(|v| v as f32)
}

/// The attribute streams of a scene, in file order.
fn streams(g: &Gaussians<f32>, version: u32) -> [Vec<u8>; 6] {
    let n = g.len();
    let scale = (1u32 << FRACTIONAL_BITS) as f64;
    let limit = (1i64 << 23) - 1;
    let mut positions = Vec::with_capacity(n * 9);
    for m in &g.means {
        for &v in m {
            let fixed = ((v as f64 * scale).round() as i64).clamp(-limit - 1, limit) as i32;
            positions.extend_from_slice(&fixed.to_le_bytes()[..3]);
        }
    }
    let alphas = g
        .opacity_logits
        .iter()
        .map(|&o| byte(sigmoid(o) * 255.0))
        .collect();
    let colors = g
        .sh_dc
        .iter()
        .flatten()
        .map(|&c| byte(c as f64 * (COLOR_SCALE * 255.0) + 127.5))
        .collect();
    let scales = g
        .log_scales
        .iter()
        .flatten()
        .map(|&s| byte((s as f64 + 10.0) * 16.0))
        .collect();
    let mut rotations = Vec::with_capacity(n * 4);
    for &q in &g.rotations {
        if version >= 3 {
            rotations.extend_from_slice(&pack_smallest_three(q));
        } else {
            rotations.extend_from_slice(&pack_first_three(q));
        }
    }
    let per = g.sh_rest_len();
    let mut sh = Vec::with_capacity(n * per);
    for i in 0..n {
        for (j, &v) in g.sh_rest_of(i).iter().enumerate() {
            // The first 3 coefficients (degree 1) at 5 bits, the rest at 4.
            sh.push(quantize_sh(v, if j < 9 { 5 } else { 4 }));
        }
    }
    [positions, alphas, colors, scales, rotations, sh]
}

fn header16(g: &Gaussians<f32>, version: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(32);
    h.extend_from_slice(&MAGIC.to_le_bytes());
    h.extend_from_slice(&version.to_le_bytes());
    h.extend_from_slice(&(g.len() as u32).to_le_bytes());
    let flags = if g.antialiased { FLAG_ANTIALIASED } else { 0 };
    h.extend_from_slice(&[g.sh_degree as u8, FRACTIONAL_BITS, flags]);
    h
}

/// Encodes a scene as SPZ of `version` (2, 3 or 4); `gzip_level` (0-9) for versions 2 and 3.
pub fn encode(
    g: &Gaussians<f32>,
    version: u32,
    gzip_level: u32,
) -> Result<Vec<u8>, FormatErrorKind> {
    if !(2..=4).contains(&version) {
        return Err(FormatErrorKind::Unsupported(format!(
            "SPZ version {version} cannot be written (2, 3 or 4)"
        )));
    }
    if g.len() as u64 > u32::MAX as u64 {
        return Err(FormatErrorKind::invalid("too many splats for SPZ"));
    }
    let streams = streams(g, version);
    let used = if g.sh_degree == 0 { 5 } else { 6 };
    let mut header = header16(g, version);
    if version <= 3 {
        header.push(0);
        let level = flate2::Compression::new(gzip_level);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), level);
        gz.write_all(&header)?;
        for s in &streams {
            gz.write_all(s)?;
        }
        return Ok(gz.finish()?);
    }
    header.push(used as u8);
    header.extend_from_slice(&32u32.to_le_bytes());
    header.resize(32, 0);
    let compressed: Vec<Vec<u8>> = streams[..used]
        .iter()
        .map(|s| {
            ruzstd::encoding::compress_to_vec(&s[..], ruzstd::encoding::CompressionLevel::Fastest)
        })
        .collect();
    let mut out = header;
    for (c, s) in compressed.iter().zip(&streams) {
        out.extend_from_slice(&(c.len() as u64).to_le_bytes());
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    }
    for c in &compressed {
        out.extend_from_slice(c);
    }
    Ok(out)
}

/// What the header says.
struct Header {
    version: u32,
    antialiased: bool,
    count: usize,
    degree: usize,
    fractional_bits: u32,
}

impl Header {
    fn parse(h: &[u8]) -> Result<Header, FormatErrorKind> {
        let not = |why: String| FormatErrorKind::NotFormat {
            format: SceneFormat::Spz,
            why,
        };
        if u32_le(h, 0) != MAGIC {
            return Err(not("no NGSP magic".into()));
        }
        let version = u32_le(h, 4);
        if !(1..=4).contains(&version) {
            return Err(FormatErrorKind::Unsupported(format!(
                "SPZ version {version} (this reads 1 to 4)"
            )));
        }
        let count = u32_le(h, 8) as u64;
        if count > MAX_SPLATS {
            return Err(FormatErrorKind::invalid(format!(
                "the header claims {count} splats, more than the {MAX_SPLATS} a reader accepts"
            )));
        }
        let degree = h[12] as usize;
        if degree > 4 {
            return Err(FormatErrorKind::Unsupported(format!("SH degree {degree}")));
        }
        let fractional_bits = h[13] as u32;
        if fractional_bits > 24 {
            return Err(FormatErrorKind::invalid(format!(
                "{fractional_bits} fractional bits for 24-bit positions"
            )));
        }
        if h[14] & FLAG_EXTENSIONS != 0 {
            return Err(FormatErrorKind::Unsupported(
                "SPZ extension records (header flag 2) are not supported".into(),
            ));
        }
        Ok(Header {
            antialiased: h[14] & FLAG_ANTIALIASED != 0,
            version,
            count: count as usize,
            degree,
            fractional_bits,
        })
    }

    /// Bytes of each stream.
    fn sizes(&self) -> [usize; 6] {
        let n = self.count;
        let position = if self.version == 1 { 6 } else { 9 };
        let rotation = if self.version >= 3 { 4 } else { 3 };
        let sh = 3 * (sh_coeffs_for_degree(self.degree) - 1);
        [n * position, n, n * 3, n * 3, n * rotation, n * sh]
    }
}

fn read_limited(
    mut r: impl Read,
    limit: u64,
    what: &'static str,
) -> Result<Vec<u8>, FormatErrorKind> {
    let mut out = Vec::new();
    (&mut r)
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| FormatErrorKind::Corrupt {
            what,
            why: e.to_string(),
        })?;
    if out.len() as u64 > limit {
        return Err(FormatErrorKind::invalid(format!(
            "{what} expands beyond {limit} bytes"
        )));
    }
    Ok(out)
}

/// Decodes SPZ of any version 1-4.
pub fn decode(bytes: &[u8]) -> Result<Gaussians<f32>, FormatErrorKind> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let raw = read_limited(
            flate2::read::GzDecoder::new(bytes),
            decode_limit(bytes.len()),
            "gzip stream",
        )?;
        if raw.len() < 16 {
            return Err(FormatErrorKind::truncated(
                "the SPZ header",
                16,
                raw.len() as u64,
            ));
        }
        let h = Header::parse(&raw)?;
        if h.version >= 4 {
            return Err(FormatErrorKind::invalid("SPZ version 4 is not gzipped"));
        }
        let mut pos = 16;
        let mut parts = Vec::new();
        for (k, size) in h.sizes().into_iter().enumerate() {
            parts.push(take(&raw, &mut pos, size as u64, STREAMS[k])?);
        }
        return assemble(&h, &parts);
    }
    if bytes.len() < 32 {
        return Err(FormatErrorKind::truncated(
            "the SPZ header",
            32,
            bytes.len() as u64,
        ));
    }
    let h = Header::parse(bytes)?;
    if h.version < 4 {
        return Err(FormatErrorKind::invalid(format!(
            "SPZ version {} must be gzipped",
            h.version
        )));
    }
    let sizes = h.sizes();
    let used = if h.degree == 0 { 5 } else { 6 };
    let n_streams = bytes[15] as usize;
    if n_streams != used {
        return Err(FormatErrorKind::invalid(format!(
            "{n_streams} streams, expected {used}"
        )));
    }
    let total: u64 = sizes.iter().map(|&s| s as u64).sum();
    if total > decode_limit(bytes.len()) {
        return Err(FormatErrorKind::invalid(format!(
            "{} splats need {total} bytes of streams, more than {} bytes of file can hold",
            h.count,
            bytes.len()
        )));
    }
    let mut pos = u32_le(bytes, 16) as usize;
    if pos < 32 {
        return Err(FormatErrorKind::invalid("stream table inside the header"));
    }
    let table = take(bytes, &mut pos, 16 * used as u64, "the stream table")?;
    let mut decoded = Vec::new();
    for k in 0..used {
        let c = u64::from_le_bytes(table[16 * k..16 * k + 8].try_into().unwrap());
        let u = u64::from_le_bytes(table[16 * k + 8..16 * k + 16].try_into().unwrap());
        if u != sizes[k] as u64 {
            return Err(FormatErrorKind::invalid(format!(
                "{} stream of {u} bytes, {} splats need {}",
                STREAMS[k], h.count, sizes[k]
            )));
        }
        let src = take(bytes, &mut pos, c, STREAMS[k])?;
        let corrupt = |e: String| FormatErrorKind::Corrupt {
            what: "zstd stream",
            why: e,
        };
        let dec =
            ruzstd::decoding::StreamingDecoder::new(src).map_err(|e| corrupt(e.to_string()))?;
        let out = read_limited(dec, u, "zstd stream")?;
        if out.len() as u64 != u {
            return Err(FormatErrorKind::truncated(STREAMS[k], u, out.len() as u64));
        }
        decoded.push(out);
    }
    decoded.resize(6, Vec::new());
    let parts: Vec<&[u8]> = decoded.iter().map(|v| &v[..]).collect();
    assemble(&h, &parts)
}

const STREAMS: [&str; 6] = [
    "positions",
    "alphas",
    "colours",
    "scales",
    "rotations",
    "SH",
];

fn assemble(h: &Header, parts: &[&[u8]]) -> Result<Gaussians<f32>, FormatErrorKind> {
    let [positions, alphas, colors, scales, rotations, sh] = parts else {
        unreachable!("six streams")
    };
    let degree = h.degree.min(3);
    let per_file = 3 * (sh_coeffs_for_degree(h.degree) - 1);
    let per = 3 * (sh_coeffs_for_degree(degree) - 1);
    let scale = 1.0 / (1u64 << h.fractional_bits) as f64;
    let mut g = Gaussians::new(degree);
    g.antialiased = h.antialiased;
    let mut rest = vec![0.0f32; per];
    for i in 0..h.count {
        let mean: [f32; 3] = if h.version == 1 {
            std::array::from_fn(|k| {
                let b = &positions[6 * i + 2 * k..];
                half_to_f32(u16::from_le_bytes([b[0], b[1]]))
            })
        } else {
            std::array::from_fn(|k| {
                let b = &positions[9 * i + 3 * k..];
                let v = i32::from_le_bytes([b[0], b[1], b[2], 0]) << 8 >> 8;
                (v as f64 * scale) as f32
            })
        };
        if !mean.iter().all(|v| v.is_finite()) {
            return Err(FormatErrorKind::invalid(format!(
                "splat {i}: non-finite position"
            )));
        }
        let log_scale = [0, 1, 2].map(|k| (scales[3 * i + k] as f64 / 16.0 - 10.0) as f32);
        let rotation = if h.version >= 3 {
            unpack_smallest_three(&rotations[4 * i..])
        } else {
            unpack_first_three(&rotations[3 * i..])
        };
        let dc = [0, 1, 2].map(|k| ((colors[3 * i + k] as f64 / 255.0 - 0.5) / COLOR_SCALE) as f32);
        for (j, r) in rest.iter_mut().enumerate() {
            *r = (sh[per_file * i + j] as f32 - 128.0) / 128.0;
        }
        g.push(
            mean,
            log_scale,
            rotation,
            logit(alphas[i] as f64 / 255.0),
            dc,
            &rest,
        );
    }
    Ok(g)
}

/// IEEE half to single (v1 positions).
fn half_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = (h >> 10 & 0x1f) as i32;
    let frac = (h & 0x3ff) as f32;
    sign * match exp {
        0 => frac * 2f32.powi(-24),
        31 if frac == 0.0 => f32::INFINITY,
        31 => f32::NAN,
        e => (1.0 + frac / 1024.0) * 2f32.powi(e - 15),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quaternions_round_trip_in_both_packings() {
        for q in [
            [1.0f32, 0.0, 0.0, 0.0],
            [0.2, -0.9, 0.1, 0.3],
            [-0.5, 0.5, -0.5, 0.5],
            [0.0, 0.0, 0.0, 3.0],
        ] {
            let u = unit_quat(q);
            for back in [
                unpack_smallest_three(&pack_smallest_three(q)),
                unpack_first_three(&pack_first_three(q)),
            ] {
                let dot: f64 = (0..4).map(|k| u[k] * back[k] as f64).sum();
                assert!(dot.abs() > 0.9999, "{q:?} -> {back:?}");
            }
        }
    }

    /// Version 1: float16 positions, first-three rotations.
    #[test]
    fn version_1_reads() {
        let mut raw = Vec::new();
        raw.extend_from_slice(&MAGIC.to_le_bytes());
        raw.extend_from_slice(&1u32.to_le_bytes());
        raw.extend_from_slice(&2u32.to_le_bytes());
        raw.extend_from_slice(&[0, 12, 0, 0]);
        // Positions (1, -2, 0.5) and (0, 0, 0) as halves.
        for h in [0x3c00u16, 0xc000, 0x3800, 0, 0, 0] {
            raw.extend_from_slice(&h.to_le_bytes());
        }
        raw.extend_from_slice(&[255, 0]); // alphas
        raw.extend_from_slice(&[128; 6]); // colours
        raw.extend_from_slice(&[160; 6]); // scales: log-scale 0
        raw.extend_from_slice(&[128, 128, 128, 255, 128, 128]); // rotations
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&raw).unwrap();
        let g = decode(&gz.finish().unwrap()).unwrap();
        assert_eq!(g.len(), 2);
        assert_eq!(g.means[0], [1.0, -2.0, 0.5]);
        assert_eq!(g.log_scales[1], [0.0; 3]);
        assert!(g.opacity_logits[0] > 10.0 && g.opacity_logits[1] < -10.0);
        assert!((g.rotations[0][0] - 1.0).abs() < 1e-4);
        assert!((g.rotations[1][1] - 1.0).abs() < 1e-2);
    }

    #[test]
    fn half_floats() {
        assert_eq!(half_to_f32(0x3c00), 1.0);
        assert_eq!(half_to_f32(0xc000), -2.0);
        assert_eq!(half_to_f32(0x0001), 2f32.powi(-24));
        assert!(half_to_f32(0x7c00).is_infinite());
    }

    #[test]
    fn sh_buckets() {
        assert_eq!(quantize_sh(0.0, 5), 128);
        assert_eq!(quantize_sh(0.0, 4), 128);
        assert_eq!(quantize_sh(-5.0, 4), 0);
        assert_eq!(quantize_sh(5.0, 4), 255);
        // 5 bits: steps of 8/128 around 128.
        assert_eq!(quantize_sh(0.02, 5), 128);
        assert_eq!(quantize_sh(0.05, 5), 136);
        assert_eq!(quantize_sh(-0.05, 5), 120);
    }
}
