//! glTF 2.0 with `KHR_gaussian_splatting`: one `POINTS` primitive whose attributes are `POSITION`,
//! `KHR_gaussian_splatting:ROTATION` (unit quaternion, x y z w), `:SCALE` (linear), `:OPACITY`
//! (0..1), `:SH_DEGREE_0_COEF_0` (the DC coefficients) and `:SH_DEGREE_l_COEF_n` for l = 1..3, all
//! `FLOAT`. Written as GLB (one binary chunk) or as `.gltf` JSON with the buffer in a data URI.
//!
//! glTF is y-up; the training frame of a COLMAP capture is y-down (the cameras' convention). As
//! `splat-transform` does, the writer turns the scene 180 degrees about z: positions `(-x, -y, z)`,
//! rotations pre-multiplied by that turn, and each SH coefficient's sign flipped where its basis
//! function is odd in (x, y). The reader undoes it, so a round trip gives the scene back. Node
//! transforms of other tools' files are not applied.

use std::path::Path;

use base64::Engine;
use serde_json::{json, Value};
use splat_core::Gaussians;

use super::quant::{log_of_linear, logit, unit_quat};
use super::{f32_le, take, u32_le, FormatErrorKind, SceneFormat, MAX_SPLATS};

const PREFIX: &str = "KHR_gaussian_splatting";
const FLOAT: u64 = 5126;
const GLB_MAGIC: &[u8; 4] = b"glTF";
const CHUNK_JSON: u32 = 0x4E4F_534A;
const CHUNK_BIN: u32 = 0x004E_4942;

/// Sign of SH coefficient 1..15 (3DGS order) under the 180-degree turn about z.
const SH_PARITY: [f32; 15] = [
    -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0,
];
const COEFS_PER_DEGREE: [usize; 4] = [1, 3, 5, 7];

/// `(w, x, y, z)` turned by 180 degrees about z.
fn turn_quat(q: [f64; 4]) -> [f64; 4] {
    let [w, x, y, z] = q;
    [-z, -y, x, w]
}

/// The inverse of [`turn_quat`].
fn unturn_quat(q: [f64; 4]) -> [f64; 4] {
    let [w, x, y, z] = q;
    [z, y, -x, -w]
}

struct Attribute {
    name: String,
    components: usize,
    data: Vec<f32>,
}

fn attributes(g: &Gaussians<f32>) -> Vec<Attribute> {
    let n = g.len();
    let attr = |name: &str, components: usize, data: Vec<f32>| Attribute {
        name: name.to_string(),
        components,
        data,
    };
    let mut out = vec![
        attr(
            "POSITION",
            3,
            g.means.iter().flat_map(|m| [-m[0], -m[1], m[2]]).collect(),
        ),
        attr(
            &format!("{PREFIX}:ROTATION"),
            4,
            g.rotations
                .iter()
                .flat_map(|&q| {
                    let [w, x, y, z] = turn_quat(unit_quat(q));
                    [x, y, z, w].map(|v| v as f32)
                })
                .collect(),
        ),
        attr(
            &format!("{PREFIX}:SCALE"),
            3,
            g.log_scales.iter().flat_map(|s| s.map(f32::exp)).collect(),
        ),
        attr(
            &format!("{PREFIX}:OPACITY"),
            1,
            g.opacity_logits
                .iter()
                .map(|&o| super::quant::sigmoid(o) as f32)
                .collect(),
        ),
        attr(
            &format!("{PREFIX}:SH_DEGREE_0_COEF_0"),
            3,
            g.sh_dc.iter().flatten().copied().collect(),
        ),
    ];
    let mut k = 0;
    for degree in 1..=g.sh_degree {
        for c in 0..COEFS_PER_DEGREE[degree] {
            let data = (0..n)
                .flat_map(|i| {
                    let r = &g.sh_rest_of(i)[3 * k..3 * k + 3];
                    [r[0], r[1], r[2]].map(|v| v * SH_PARITY[k])
                })
                .collect();
            out.push(attr(
                &format!("{PREFIX}:SH_DEGREE_{degree}_COEF_{c}"),
                3,
                data,
            ));
            k += 1;
        }
    }
    out
}

/// The glTF JSON and the binary buffer of a scene.
fn document(g: &Gaussians<f32>) -> (Value, Vec<u8>) {
    let mut bin = Vec::new();
    let mut views = Vec::new();
    let mut accessors = Vec::new();
    let mut attrs = serde_json::Map::new();
    for (i, a) in attributes(g).into_iter().enumerate() {
        let offset = bin.len();
        for v in &a.data {
            bin.extend_from_slice(&v.to_le_bytes());
        }
        views.push(json!({"buffer": 0, "byteOffset": offset, "byteLength": bin.len() - offset, "target": 34962}));
        let ty = ["SCALAR", "VEC2", "VEC3", "VEC4"][a.components - 1];
        let mut acc =
            json!({"bufferView": i, "componentType": FLOAT, "count": g.len(), "type": ty});
        if a.name == "POSITION" && !g.is_empty() {
            let (lo, hi) = (0..3).fold((vec![], vec![]), |(mut lo, mut hi), k| {
                let col = a.data.iter().skip(k).step_by(3);
                lo.push(col.clone().copied().fold(f32::INFINITY, f32::min));
                hi.push(col.copied().fold(f32::NEG_INFINITY, f32::max));
                (lo, hi)
            });
            acc["min"] = json!(lo);
            acc["max"] = json!(hi);
        }
        accessors.push(acc);
        attrs.insert(a.name, json!(i));
    }
    let doc = json!({
        "asset": {"version": "2.0", "generator": "splat"},
        "extensionsUsed": [PREFIX],
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{
            "attributes": attrs,
            "mode": 0,
            "extensions": {PREFIX: {
                "kernel": "ellipse",
                "colorSpace": "srgb_rec709_display",
                "projection": "perspective",
                "sortingMethod": "cameraDistance"
            }}
        }]}],
        "buffers": [{"byteLength": bin.len()}],
        "bufferViews": views,
        "accessors": accessors,
    });
    (doc, bin)
}

/// Encodes a scene as GLB.
pub fn encode_glb(g: &Gaussians<f32>) -> Vec<u8> {
    let (doc, mut bin) = document(g);
    let mut json = serde_json::to_vec(&doc).expect("JSON of numbers");
    while json.len() % 4 != 0 {
        json.push(b' ');
    }
    while bin.len() % 4 != 0 {
        bin.push(0);
    }
    let total = 12 + 8 + json.len() + 8 + bin.len();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(GLB_MAGIC);
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&(total as u32).to_le_bytes());
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&CHUNK_JSON.to_le_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(&(bin.len() as u32).to_le_bytes());
    out.extend_from_slice(&CHUNK_BIN.to_le_bytes());
    out.extend_from_slice(&bin);
    out
}

/// Encodes a scene as `.gltf` JSON with an embedded buffer.
pub fn encode_gltf(g: &Gaussians<f32>) -> Vec<u8> {
    let (mut doc, bin) = document(g);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bin);
    doc["buffers"][0]["uri"] = json!(format!("data:application/octet-stream;base64,{b64}"));
    serde_json::to_vec_pretty(&doc).expect("JSON of numbers")
}

/// Decodes GLB.
pub fn decode_glb(bytes: &[u8]) -> Result<Gaussians<f32>, FormatErrorKind> {
    let not = |why: &str| FormatErrorKind::NotFormat {
        format: SceneFormat::Glb,
        why: why.into(),
    };
    if bytes.len() < 12 || &bytes[..4] != GLB_MAGIC {
        return Err(not("no glTF magic"));
    }
    if u32_le(bytes, 4) != 2 {
        return Err(FormatErrorKind::Unsupported(format!(
            "GLB version {}",
            u32_le(bytes, 4)
        )));
    }
    let mut pos = 12;
    let mut json = None;
    let mut bin: Option<&[u8]> = None;
    while pos + 8 <= bytes.len() {
        let head = take(bytes, &mut pos, 8, "a GLB chunk header")?;
        let (len, kind) = (u32_le(head, 0), u32_le(head, 4));
        let body = take(bytes, &mut pos, len as u64, "a GLB chunk")?;
        match kind {
            CHUNK_JSON if json.is_none() => json = Some(body),
            CHUNK_BIN if bin.is_none() => bin = Some(body),
            _ => {}
        }
    }
    let json = json.ok_or_else(|| not("no JSON chunk"))?;
    let doc: Value = serde_json::from_slice(json).map_err(|e| FormatErrorKind::Corrupt {
        what: "glTF JSON",
        why: e.to_string(),
    })?;
    scene_from(&doc, &|index, uri| match (index, uri) {
        (0, None) => bin
            .map(|b| b.to_vec())
            .ok_or_else(|| FormatErrorKind::invalid("buffer 0 has no GLB binary chunk")),
        (_, Some(uri)) => data_uri(uri),
        (i, None) => Err(FormatErrorKind::invalid(format!("buffer {i} has no uri"))),
    })
}

/// Decodes `.gltf` JSON; an external buffer is read from beside `path`.
pub fn decode_gltf(bytes: &[u8], path: &Path) -> Result<Gaussians<f32>, FormatErrorKind> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| FormatErrorKind::Corrupt {
        what: "glTF JSON",
        why: e.to_string(),
    })?;
    scene_from(&doc, &|i, uri| {
        let uri = uri.ok_or_else(|| FormatErrorKind::invalid(format!("buffer {i} has no uri")))?;
        if uri.starts_with("data:") {
            return data_uri(uri);
        }
        let rel = Path::new(uri);
        if rel.is_absolute() || rel.components().any(|c| c.as_os_str() == "..") || uri.contains(':')
        {
            return Err(FormatErrorKind::invalid(format!(
                "buffer uri {uri:?}: only files beside the glTF are read"
            )));
        }
        let file = path.parent().unwrap_or(Path::new(".")).join(rel);
        std::fs::read(&file)
            .map_err(|e| FormatErrorKind::invalid(format!("buffer {}: {e}", file.display())))
    })
}

fn data_uri(uri: &str) -> Result<Vec<u8>, FormatErrorKind> {
    let (_, b64) = uri
        .split_once(";base64,")
        .ok_or_else(|| FormatErrorKind::invalid("a data URI that is not base64"))?;
    base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|e| FormatErrorKind::Corrupt {
            what: "base64 buffer",
            why: e.to_string(),
        })
}

type Buffers<'a> = dyn Fn(usize, Option<&str>) -> Result<Vec<u8>, FormatErrorKind> + 'a;

fn get_u64(v: &Value, key: &str, default: Option<u64>) -> Result<u64, FormatErrorKind> {
    match v.get(key) {
        Some(x) => x
            .as_u64()
            .ok_or_else(|| FormatErrorKind::invalid(format!("{key} is not a whole number"))),
        None => default.ok_or_else(|| FormatErrorKind::invalid(format!("missing {key}"))),
    }
}

/// Reads accessor `index` as `count x components` floats.
fn accessor(
    doc: &Value,
    index: u64,
    components: usize,
    buffers: &mut Vec<Option<Vec<u8>>>,
    load: &Buffers,
) -> Result<(usize, Vec<f32>), FormatErrorKind> {
    let acc = doc["accessors"]
        .get(index as usize)
        .ok_or_else(|| FormatErrorKind::invalid(format!("no accessor {index}")))?;
    if get_u64(acc, "componentType", None)? != FLOAT {
        return Err(FormatErrorKind::Unsupported(format!(
            "accessor {index}: only FLOAT splat attributes are read"
        )));
    }
    let want = ["SCALAR", "VEC2", "VEC3", "VEC4"][components - 1];
    if acc["type"].as_str() != Some(want) {
        return Err(FormatErrorKind::invalid(format!(
            "accessor {index} is {}, expected {want}",
            acc["type"]
        )));
    }
    let count = get_u64(acc, "count", None)?;
    if count > MAX_SPLATS {
        return Err(FormatErrorKind::invalid(format!(
            "accessor {index}: {count} elements"
        )));
    }
    let view_index = get_u64(acc, "bufferView", None)?;
    let view = doc["bufferViews"]
        .get(view_index as usize)
        .ok_or_else(|| FormatErrorKind::invalid(format!("no bufferView {view_index}")))?;
    let b = get_u64(view, "buffer", None)? as usize;
    if b >= doc["buffers"].as_array().map_or(0, |a| a.len()) || b > 1024 {
        return Err(FormatErrorKind::invalid(format!("no buffer {b}")));
    }
    if buffers.len() <= b {
        buffers.resize(b + 1, None);
    }
    if buffers[b].is_none() {
        buffers[b] = Some(load(b, doc["buffers"][b]["uri"].as_str())?);
    }
    let buf = buffers[b].as_ref().unwrap();
    let elem = 4 * components as u64;
    let stride = get_u64(view, "byteStride", Some(elem))?.max(elem);
    let start =
        get_u64(view, "byteOffset", Some(0))?.saturating_add(get_u64(acc, "byteOffset", Some(0))?);
    let view_end =
        get_u64(view, "byteOffset", Some(0))?.saturating_add(get_u64(view, "byteLength", None)?);
    let end = match count {
        0 => start,
        c => start
            .saturating_add((c - 1).saturating_mul(stride))
            .saturating_add(elem),
    };
    if end > view_end || end > buf.len() as u64 {
        return Err(FormatErrorKind::truncated(
            format!("accessor {index}"),
            end,
            buf.len().min(view_end as usize) as u64,
        ));
    }
    let mut out = Vec::with_capacity(count as usize * components);
    for i in 0..count {
        let at = (start + i * stride) as usize;
        for c in 0..components {
            let v = f32_le(buf, at + 4 * c);
            if !v.is_finite() {
                return Err(FormatErrorKind::invalid(format!(
                    "accessor {index}, element {i}: {v} (not finite)"
                )));
            }
            out.push(v);
        }
    }
    Ok((count as usize, out))
}

fn scene_from(doc: &Value, load: &Buffers) -> Result<Gaussians<f32>, FormatErrorKind> {
    let prims = doc["meshes"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["primitives"].as_array().into_iter().flatten());
    let mut splat_prims =
        prims.filter(|p| p["attributes"].get(format!("{PREFIX}:ROTATION")).is_some());
    let prim = splat_prims
        .next()
        .ok_or_else(|| FormatErrorKind::NotFormat {
            format: SceneFormat::Glb,
            why: format!("no primitive with {PREFIX} attributes"),
        })?;
    let attrs = &prim["attributes"];
    let mut buffers = Vec::new();
    let mut read =
        |name: &str, components: usize| -> Result<Option<(usize, Vec<f32>)>, FormatErrorKind> {
            match attrs.get(name) {
                None => Ok(None),
                Some(i) => {
                    let i = i.as_u64().ok_or_else(|| {
                        FormatErrorKind::invalid(format!("{name} is not an index"))
                    })?;
                    accessor(doc, i, components, &mut buffers, load).map(Some)
                }
            }
        };
    let need = |x: Option<(usize, Vec<f32>)>, name: &str| {
        x.ok_or_else(|| FormatErrorKind::invalid(format!("missing attribute {name}")))
    };
    let (n, pos) = need(read("POSITION", 3)?, "POSITION")?;
    let names = ["ROTATION", "SCALE", "OPACITY", "SH_DEGREE_0_COEF_0"];
    let comps = [4, 3, 1, 3];
    let mut cols = Vec::new();
    for (name, c) in names.iter().zip(comps) {
        let full = format!("{PREFIX}:{name}");
        let (m, v) = need(read(&full, c)?, &full)?;
        if m != n {
            return Err(FormatErrorKind::invalid(format!(
                "{full} has {m} elements, POSITION {n}"
            )));
        }
        cols.push(v);
    }
    let mut sh: Vec<Vec<f32>> = Vec::new();
    let mut degree = 0;
    'deg: for d in 1..=3 {
        let mut this = Vec::new();
        for c in 0..COEFS_PER_DEGREE[d] {
            let name = format!("{PREFIX}:SH_DEGREE_{d}_COEF_{c}");
            match read(&name, 3)? {
                Some((m, v)) if m == n => this.push(v),
                Some((m, _)) => {
                    return Err(FormatErrorKind::invalid(format!(
                        "{name} has {m} elements, POSITION {n}"
                    )))
                }
                None if c == 0 => break 'deg,
                None => {
                    return Err(FormatErrorKind::invalid(format!(
                        "missing attribute {name}"
                    )))
                }
            }
        }
        sh.extend(this);
        degree = d;
    }
    let mut g = Gaussians::new(degree);
    let mut rest = vec![0.0f32; 3 * sh.len()];
    for i in 0..n {
        let p = &pos[3 * i..3 * i + 3];
        let r = &cols[0][4 * i..4 * i + 4];
        let [w, x, y, z] = unturn_quat(unit_quat([r[3], r[0], r[1], r[2]]));
        let s = &cols[1][3 * i..3 * i + 3];
        for (k, coef) in sh.iter().enumerate() {
            for ch in 0..3 {
                rest[3 * k + ch] = coef[3 * i + ch] * SH_PARITY[k];
            }
        }
        g.push(
            [-p[0], -p[1], p[2]],
            [s[0], s[1], s[2]].map(log_of_linear),
            [w, x, y, z].map(|v| v as f32),
            logit(cols[2][i] as f64),
            [0, 1, 2].map(|k| cols[3][3 * i + k]),
            &rest,
        );
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_turn_is_undone() {
        let q = [0.1, -0.7, 0.3, 0.6];
        let back = unturn_quat(turn_quat(q));
        for k in 0..4 {
            assert!((back[k] - q[k]).abs() < 1e-15);
        }
        // Turning twice is a full turn: -q, the same rotation.
        let twice = turn_quat(turn_quat(q));
        for k in 0..4 {
            assert!((twice[k] + q[k]).abs() < 1e-15);
        }
    }
}
