//! The INRIA 3DGS PLY layout: what the original trainer writes and every splat viewer reads.
//!
//! Written: binary little-endian, one element `vertex`, `float` properties in the order
//! `x y z nx ny nz f_dc_0..2 f_rest_0..(3(K-1)-1) opacity scale_0..2 rot_0..3`; normals are 0, `f_rest` is
//! channel-major (all red coefficients, then green, then blue), opacity is a logit, scales are logs and
//! `rot` is the unnormalized quaternion `(w, x, y, z)`.
//!
//! Read: properties are matched by name, so other orders, files without normals, any SH degree 0..=3,
//! other scalar types, ASCII and big-endian bodies, and other elements around `vertex` all load. Nothing
//! in a header is trusted for allocation: the body must hold the bytes the header announces before any
//! buffer is sized from it. Every problem is a [`PlyError`] naming the file. A vertex element with
//! `packed_position` is SuperSplat's compressed PLY, decoded by [`crate::formats::compressed_ply`].

use std::fmt;
use std::path::Path;

use splat_core::{sh_coeffs_for_degree, Gaussians, MAX_SH_DEGREE};

use crate::atomic::write_atomic;
use crate::ply_header::{parse_header, Element, Format, PropertyKind, ScalarType};
pub use crate::ply_header::{PlyError, PlyErrorKind};

/// A cursor over the body: binary values or ASCII tokens.
struct Body<'a> {
    bytes: &'a [u8],
    pos: usize,
    format: Format,
}

impl<'a> Body<'a> {
    fn remaining(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    fn next_token(&mut self) -> Option<&'a str> {
        let b = self.bytes;
        while self.pos < b.len() && b[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        let start = self.pos;
        while self.pos < b.len() && !b[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        if start == self.pos {
            None
        } else {
            std::str::from_utf8(&b[start..self.pos])
                .ok()
                .or(Some("<not UTF-8>"))
        }
    }

    fn scalar(
        &mut self,
        ty: ScalarType,
        element: &str,
        row: usize,
        name: &str,
    ) -> Result<f64, PlyErrorKind> {
        match self.format {
            Format::Ascii => {
                let tok = self.next_token().ok_or_else(|| PlyErrorKind::Truncated {
                    element: element.to_string(),
                    expected: row as u64 + 1,
                    found: row as u64,
                })?;
                tok.parse::<f64>().map_err(|_| PlyErrorKind::BadNumber {
                    vertex: row,
                    property: name.to_string(),
                    text: tok.chars().take(40).collect(),
                })
            }
            Format::BinaryLe | Format::BinaryBe => {
                let n = ty.size();
                if self.bytes.len() - self.pos < n {
                    return Err(PlyErrorKind::Truncated {
                        element: element.to_string(),
                        expected: (self.pos + n) as u64,
                        found: self.bytes.len() as u64,
                    });
                }
                let v = ty.decode(
                    &self.bytes[self.pos..self.pos + n],
                    self.format == Format::BinaryBe,
                );
                self.pos += n;
                Ok(v)
            }
        }
    }

    fn skip_element(&mut self, el: &Element) -> Result<(), PlyErrorKind> {
        let all_scalar = el
            .properties
            .iter()
            .all(|p| matches!(p.kind, PropertyKind::Scalar(_)));
        if all_scalar && self.format != Format::Ascii {
            let stride: u64 = el
                .properties
                .iter()
                .map(|p| match p.kind {
                    PropertyKind::Scalar(t) => t.size() as u64,
                    PropertyKind::List { .. } => 0,
                })
                .sum();
            let need = stride.saturating_mul(el.count);
            if need > self.remaining() {
                return Err(PlyErrorKind::Truncated {
                    element: el.name.clone(),
                    expected: need,
                    found: self.remaining(),
                });
            }
            self.pos += need as usize;
            return Ok(());
        }
        for row in 0..el.count {
            for p in &el.properties {
                match p.kind {
                    PropertyKind::Scalar(t) => {
                        self.scalar(t, &el.name, row as usize, &p.name)?;
                    }
                    PropertyKind::List { count, item } => {
                        let n = self.scalar(count, &el.name, row as usize, &p.name)?;
                        if !(0.0..=1e9).contains(&n) {
                            return Err(PlyErrorKind::Invalid(format!(
                                "element {:?} row {row}: list length {n}",
                                el.name
                            )));
                        }
                        for _ in 0..n as u64 {
                            self.scalar(item, &el.name, row as usize, &p.name)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Where each splat field comes from in a vertex row.
struct Columns {
    mean: [usize; 3],
    dc: [usize; 3],
    rest: Vec<usize>,
    opacity: usize,
    scale: [usize; 3],
    rot: [usize; 4],
}

fn columns(el: &Element) -> Result<Columns, PlyErrorKind> {
    for p in &el.properties {
        if matches!(p.kind, PropertyKind::List { .. }) {
            return Err(PlyErrorKind::ListProperty(p.name.clone()));
        }
    }
    let find = |name: &str| {
        el.properties
            .iter()
            .position(|p| p.name == name)
            .ok_or_else(|| PlyErrorKind::MissingProperty(name.to_string()))
    };
    let n_rest = el
        .properties
        .iter()
        .filter(|p| p.name.starts_with("f_rest_"))
        .count();
    let degree = (0..=MAX_SH_DEGREE).find(|&d| 3 * (sh_coeffs_for_degree(d) - 1) == n_rest);
    if degree.is_none() {
        return Err(PlyErrorKind::BadShCount(n_rest));
    }
    Ok(Columns {
        mean: [find("x")?, find("y")?, find("z")?],
        dc: [find("f_dc_0")?, find("f_dc_1")?, find("f_dc_2")?],
        rest: (0..n_rest)
            .map(|i| find(&format!("f_rest_{i}")))
            .collect::<Result<_, _>>()?,
        opacity: find("opacity")?,
        scale: [find("scale_0")?, find("scale_1")?, find("scale_2")?],
        rot: [
            find("rot_0")?,
            find("rot_1")?,
            find("rot_2")?,
            find("rot_3")?,
        ],
    })
}

/// Parses a splat PLY held in memory; `path` only names it in errors.
pub fn read_ply_bytes(bytes: &[u8], path: &Path) -> Result<Gaussians<f32>, PlyError> {
    parse(bytes).map_err(|kind| PlyError {
        path: path.to_path_buf(),
        kind,
    })
}

/// Reads a splat PLY file.
pub fn read_ply(path: &Path) -> Result<Gaussians<f32>, PlyError> {
    let bytes = std::fs::read(path).map_err(|e| PlyError {
        path: path.to_path_buf(),
        kind: PlyErrorKind::Io(e),
    })?;
    read_ply_bytes(&bytes, path)
}

fn parse(bytes: &[u8]) -> Result<Gaussians<f32>, PlyErrorKind> {
    let header = parse_header(bytes)?;
    let mut body = Body {
        bytes,
        pos: header.body_start,
        format: header.format,
    };
    let vertex_index = header
        .elements
        .iter()
        .position(|e| e.name == "vertex")
        .ok_or(PlyErrorKind::NoVertexElement)?;
    for el in &header.elements[..vertex_index] {
        body.skip_element(el)?;
    }
    let el = &header.elements[vertex_index];
    if el.properties.iter().any(|p| p.name == "packed_position") {
        return crate::formats::compressed_ply::decode(&header, bytes);
    }
    let cols = columns(el)?;
    let n_props = el.properties.len();
    let types: Vec<ScalarType> = el
        .properties
        .iter()
        .map(|p| match p.kind {
            PropertyKind::Scalar(t) => t,
            PropertyKind::List { .. } => unreachable!("rejected by columns()"),
        })
        .collect();

    // Bound the allocation by what is actually present.
    let min_row_bytes: u64 = match header.format {
        Format::Ascii => 2 * n_props as u64, // at least one digit and one separator per value
        _ => types.iter().map(|t| t.size() as u64).sum(),
    };
    let mut expected = min_row_bytes.saturating_mul(el.count);
    if header.format == Format::Ascii {
        expected = expected.saturating_sub(1); // the last value needs no separator
    }
    if expected > body.remaining() {
        return Err(PlyErrorKind::Truncated {
            element: el.name.clone(),
            expected,
            found: body.remaining(),
        });
    }
    let n = el.count as usize;
    let degree = (0..=MAX_SH_DEGREE)
        .find(|&d| 3 * (sh_coeffs_for_degree(d) - 1) == cols.rest.len())
        .expect("checked by columns()");
    let k_rest = cols.rest.len() / 3;
    let mut g = Gaussians::<f32>::new(degree);
    g.antialiased = header.antialiased;
    g.means.reserve(n);
    let mut row = vec![0.0f64; n_props];
    let mut rest = vec![0.0f32; cols.rest.len()];
    for v in 0..n {
        for (j, p) in el.properties.iter().enumerate() {
            let value = body.scalar(types[j], &el.name, v, &p.name)?;
            if !value.is_finite() {
                return Err(PlyErrorKind::NonFinite {
                    vertex: v,
                    property: p.name.clone(),
                    value,
                });
            }
            if !(value as f32).is_finite() {
                // A finite double such as 1e300 would become infinite in the scene.
                return Err(PlyErrorKind::OutOfRange {
                    vertex: v,
                    property: p.name.clone(),
                    value,
                });
            }
            row[j] = value;
        }
        let get = |c: usize| row[c] as f32;
        // f_rest is channel-major in the file; sh_rest is [coefficient][channel] in memory.
        for ch in 0..3 {
            for k in 0..k_rest {
                rest[k * 3 + ch] = get(cols.rest[ch * k_rest + k]);
            }
        }
        g.push(
            cols.mean.map(get),
            cols.scale.map(get),
            cols.rot.map(get),
            get(cols.opacity),
            cols.dc.map(get),
            &rest,
        );
    }
    Ok(g)
}

/// The header the writer produces for `n` splats of a degree.
fn header_text(n: usize, degree: usize, antialiased: bool) -> String {
    let mut h = String::from("ply\nformat binary_little_endian 1.0\n");
    if antialiased {
        h += "comment antialiased 1\n";
    }
    h += &format!("element vertex {n}\n");
    for name in property_names(degree) {
        h += &format!("property float {name}\n");
    }
    h += "end_header\n";
    h
}

/// Property names in the INRIA order.
pub fn property_names(degree: usize) -> Vec<String> {
    let mut names: Vec<String> = [
        "x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    names.extend((0..3 * (sh_coeffs_for_degree(degree) - 1)).map(|i| format!("f_rest_{i}")));
    names.push("opacity".into());
    names.extend((0..3).map(|i| format!("scale_{i}")));
    names.extend((0..4).map(|i| format!("rot_{i}")));
    names
}

/// A non-finite parameter found while writing.
#[derive(Debug)]
pub struct NonFiniteParameter {
    pub gaussian: usize,
    pub field: &'static str,
}

impl fmt::Display for NonFiniteParameter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Gaussian {} has a non-finite {}",
            self.gaussian, self.field
        )
    }
}

/// Encodes a scene in the INRIA layout. Refuses non-finite parameters: a PLY with NaN is never written.
pub fn ply_bytes(g: &Gaussians<f32>) -> Result<Vec<u8>, NonFiniteParameter> {
    g.check_consistent().expect("inconsistent Gaussians");
    let header = header_text(g.len(), g.sh_degree, g.antialiased);
    let k_rest = g.sh_coeffs() - 1;
    let n_props = property_names(g.sh_degree).len();
    let mut out = Vec::with_capacity(header.len() + g.len() * n_props * 4);
    out.extend_from_slice(header.as_bytes());
    let mut push = |v: f32, i: usize, field: &'static str| -> Result<(), NonFiniteParameter> {
        if !v.is_finite() {
            return Err(NonFiniteParameter { gaussian: i, field });
        }
        out.extend_from_slice(&v.to_le_bytes());
        Ok(())
    };
    for i in 0..g.len() {
        for v in g.means[i] {
            push(v, i, "mean")?;
        }
        for _ in 0..3 {
            push(0.0, i, "normal")?;
        }
        for v in g.sh_dc[i] {
            push(v, i, "sh_dc")?;
        }
        let rest = g.sh_rest_of(i);
        for ch in 0..3 {
            for k in 0..k_rest {
                push(rest[k * 3 + ch], i, "sh_rest")?;
            }
        }
        push(g.opacity_logits[i], i, "opacity")?;
        for v in g.log_scales[i] {
            push(v, i, "scale")?;
        }
        for v in g.rotations[i] {
            push(v, i, "rotation")?;
        }
    }
    Ok(out)
}

/// Writes a scene as an INRIA PLY file, atomically.
pub fn write_ply(path: &Path, g: &Gaussians<f32>) -> Result<(), PlyError> {
    let err = |kind| PlyError {
        path: path.to_path_buf(),
        kind,
    };
    let bytes =
        ply_bytes(g).map_err(|e| err(PlyErrorKind::Invalid(format!("not written: {e}"))))?;
    write_atomic(path, &bytes).map_err(|e| err(PlyErrorKind::Io(e)))
}
