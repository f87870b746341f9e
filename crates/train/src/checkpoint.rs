//! Checkpoints: the whole [`TrainState`] in a small binary format, so a resumed run continues bit for bit.
//!
//! Layout (little-endian): magic `SPLATCK1`, `u32` version, `u64` step, `u32` active and stored SH degree,
//! the parameter arrays, per Adam group its step and moments, the densification statistics, and an FNV-1a
//! checksum of everything before it. Every length is checked against the bytes present.

use splat_core::Gaussians;

use crate::adam::AdamState;
use crate::appearance::{AppearanceKind, AppearanceState};
use crate::pose::{PoseState, PER_VIEW};
use crate::state::{TrainState, GROUPS};

const MAGIC: &[u8; 8] = b"SPLATCK1";
// 2: no generator state (views and split samples are functions of the seed and the step).
// 3: the 3D filter sizes after the statistics (0 or one per Gaussian); version 2 files still read.
// 4: the per-image appearance models after them: `u32` kind (0 none), and when not none `u64` images,
//    the parameters, the Adam step and moments; versions 2 and 3 read without models.
// 5: the pose corrections after them: `u64` views (0 none), and when not none the parameters, the Adam
//    step and moments; earlier versions read without corrections.
const VERSION: u32 = 5;

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

struct Writer(Vec<u8>);

impl Writer {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f32s(&mut self, v: &[f32]) {
        self.u64(v.len() as u64);
        for x in v {
            self.0.extend_from_slice(&x.to_le_bytes());
        }
    }
}

/// Serializes a state.
pub fn to_bytes(s: &TrainState) -> Vec<u8> {
    let mut w = Writer(Vec::new());
    w.0.extend_from_slice(MAGIC);
    w.u32(VERSION);
    w.u64(s.step);
    w.u32(s.active_sh_degree as u32);
    w.u32(s.gaussians.sh_degree as u32);
    let g = &s.gaussians;
    w.u64(g.len() as u64);
    w.f32s(g.means.as_flattened());
    w.f32s(g.log_scales.as_flattened());
    w.f32s(g.rotations.as_flattened());
    w.f32s(&g.opacity_logits);
    w.f32s(g.sh_dc.as_flattened());
    w.f32s(&g.sh_rest);
    for a in &s.adam {
        w.u64(a.step);
        w.f32s(&a.m);
        w.f32s(&a.v);
    }
    w.f32s(&s.grad_accum);
    w.f32s(&s.grad_count);
    w.f32s(&s.max_radii);
    w.f32s(&s.filter_3d);
    match &s.appearance {
        None => w.u32(0),
        Some(a) => {
            w.u32(a.kind.code());
            w.u64(a.images as u64);
            w.f32s(&a.params);
            w.u64(a.adam.step);
            w.f32s(&a.adam.m);
            w.f32s(&a.adam.v);
        }
    }
    match &s.poses {
        None => w.u64(0),
        Some(p) => {
            w.u64(p.views as u64);
            w.f32s(&p.params);
            w.u64(p.adam.step);
            w.f32s(&p.adam.m);
            w.f32s(&p.adam.v);
        }
    }
    let sum = fnv1a(&w.0);
    w.u64(sum);
    w.0
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.b.len() - self.pos < n {
            return Err(format!("truncated at byte {}", self.pos));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn f32s(&mut self, expect: usize, what: &str) -> Result<Vec<f32>, String> {
        let n = self.u64()? as usize;
        if n != expect {
            return Err(format!("{what}: {n} values, expected {expect}"));
        }
        let raw = self.take(n.checked_mul(4).ok_or("length overflow")?)?;
        Ok(raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect())
    }
}

fn chunks<const N: usize>(v: Vec<f32>) -> Vec<[f32; N]> {
    v.chunks_exact(N).map(|c| c.try_into().unwrap()).collect()
}

/// Parses a checkpoint; the error says what is wrong.
pub fn from_bytes(b: &[u8]) -> Result<TrainState, String> {
    if b.len() < 16 || &b[..8] != MAGIC {
        return Err("not a splat checkpoint".into());
    }
    let body = &b[..b.len() - 8];
    let stored = u64::from_le_bytes(b[b.len() - 8..].try_into().unwrap());
    if fnv1a(body) != stored {
        return Err("checksum mismatch (truncated or corrupted)".into());
    }
    let mut r = Reader { b: body, pos: 8 };
    let version = r.u32()?;
    if !(2..=VERSION).contains(&version) {
        return Err(format!("version {version}, expected 2 to {VERSION}"));
    }
    let step = r.u64()?;
    let active = r.u32()? as usize;
    let degree = r.u32()? as usize;
    if degree > 3 || active > degree {
        return Err(format!("SH degrees {active}/{degree}"));
    }
    let n = r.u64()? as usize;
    if n > body.len() / 4 {
        return Err("Gaussian count larger than the file".into());
    }
    let mut g = Gaussians::<f32>::new(degree);
    let rest = g.sh_rest_len();
    g.means = chunks::<3>(r.f32s(3 * n, "means")?);
    g.log_scales = chunks::<3>(r.f32s(3 * n, "log_scales")?);
    g.rotations = chunks::<4>(r.f32s(4 * n, "rotations")?);
    g.opacity_logits = r.f32s(n, "opacity_logits")?;
    g.sh_dc = chunks::<3>(r.f32s(3 * n, "sh_dc")?);
    g.sh_rest = r.f32s(rest * n, "sh_rest")?;
    let widths = [3, 3, rest, 1, 3, 4];
    let mut adam = Vec::new();
    for (gi, name) in GROUPS.iter().enumerate() {
        let st = r.u64()?;
        let m = r.f32s(widths[gi] * n, name)?;
        let v = r.f32s(widths[gi] * n, name)?;
        adam.push(AdamState { m, v, step: st });
    }
    let grad_accum = r.f32s(n, "grad_accum")?;
    let grad_count = r.f32s(n, "grad_count")?;
    let max_radii = r.f32s(n, "max_radii")?;
    let filter_3d = if version >= 3 {
        let at = r.pos;
        let len = r.u64()? as usize;
        r.pos = at;
        r.f32s(if len == 0 { 0 } else { n }, "filter_3d")?
    } else {
        Vec::new()
    };
    let appearance = if version >= 4 {
        read_appearance(&mut r, body.len())?
    } else {
        None
    };
    let poses = if version >= 5 {
        read_poses(&mut r, body.len())?
    } else {
        None
    };
    if r.pos != body.len() {
        return Err("trailing bytes".into());
    }
    Ok(TrainState {
        gaussians: g,
        adam,
        step,
        active_sh_degree: active,
        grad_accum,
        grad_count,
        max_radii,
        filter_3d,
        appearance,
        poses,
    })
}

fn read_poses(r: &mut Reader, len: usize) -> Result<Option<PoseState>, String> {
    let views = r.u64()? as usize;
    if views == 0 {
        return Ok(None);
    }
    let values = views
        .checked_mul(PER_VIEW)
        .filter(|&v| v <= len / 4)
        .ok_or("pose corrections larger than the file")?;
    let params = r.f32s(values, "pose corrections")?;
    let step = r.u64()?;
    let m = r.f32s(values, "pose moments")?;
    let v = r.f32s(values, "pose moments")?;
    Ok(Some(PoseState {
        views,
        params,
        adam: AdamState { m, v, step },
    }))
}

fn read_appearance(r: &mut Reader, len: usize) -> Result<Option<AppearanceState>, String> {
    let code = r.u32()?;
    let kind = AppearanceKind::from_code(code).ok_or(format!("appearance model {code}"))?;
    if kind == AppearanceKind::None {
        return Ok(None);
    }
    let images = r.u64()? as usize;
    let values = images
        .checked_mul(kind.per_image())
        .filter(|&v| v <= len / 4)
        .ok_or("appearance models larger than the file")?;
    let params = r.f32s(values, "appearance")?;
    let step = r.u64()?;
    let m = r.f32s(values, "appearance moments")?;
    let v = r.f32s(values, "appearance moments")?;
    Ok(Some(AppearanceState {
        kind,
        images,
        params,
        adam: AdamState { m, v, step },
    }))
}
