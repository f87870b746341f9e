//! The header of a PLY file: its format, elements and properties ([`parse_header`]), and the errors
//! of reading one. Shared by the INRIA layout's reader ([`crate::ply`]) and SuperSplat's compressed
//! PLY ([`crate::formats::compressed_ply`]).

use std::path::PathBuf;

/// A PLY problem, with the file it came from.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", path.display())]
pub struct PlyError {
    pub path: PathBuf,
    pub kind: PlyErrorKind,
}

#[derive(Debug, thiserror::Error)]
pub enum PlyErrorKind {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a PLY file (it does not start with \"ply\")")]
    NotPly,
    #[error("bad PLY header, line {line}: {message}")]
    BadHeader { line: usize, message: String },
    #[error("unsupported PLY format {0:?} (expected ascii, binary_little_endian or binary_big_endian 1.0)")]
    UnsupportedFormat(String),
    #[error("no \"vertex\" element in the header")]
    NoVertexElement,
    #[error("missing property {0:?} on the vertex element")]
    MissingProperty(String),
    #[error("{0} f_rest properties: a splat PLY has 0, 9, 24 or 45 (SH degree 0..3)")]
    BadShCount(usize),
    #[error("vertex property {0:?} is a list; splat properties are scalars")]
    ListProperty(String),
    #[error(
        "truncated: the header announces {expected} bytes of {element} data, the file has {found}"
    )]
    Truncated {
        element: String,
        expected: u64,
        found: u64,
    },
    #[error("vertex {vertex}, property {property:?}: cannot parse {text:?} as a number")]
    BadNumber {
        vertex: usize,
        property: String,
        text: String,
    },
    #[error("vertex {vertex}, property {property:?} is {value} (not finite)")]
    NonFinite {
        vertex: usize,
        property: String,
        value: f64,
    },
    #[error(
        "vertex {vertex}, property {property:?} is {value}, beyond the range of a 32-bit float"
    )]
    OutOfRange {
        vertex: usize,
        property: String,
        value: f64,
    },
    #[error("{0}")]
    Invalid(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Ascii,
    BinaryLe,
    BinaryBe,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScalarType {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    F32,
    F64,
}

impl ScalarType {
    fn parse(s: &str) -> Option<ScalarType> {
        Some(match s {
            "char" | "int8" => ScalarType::I8,
            "uchar" | "uint8" => ScalarType::U8,
            "short" | "int16" => ScalarType::I16,
            "ushort" | "uint16" => ScalarType::U16,
            "int" | "int32" => ScalarType::I32,
            "uint" | "uint32" => ScalarType::U32,
            "float" | "float32" => ScalarType::F32,
            "double" | "float64" => ScalarType::F64,
            _ => return None,
        })
    }

    pub(crate) fn size(self) -> usize {
        match self {
            ScalarType::I8 | ScalarType::U8 => 1,
            ScalarType::I16 | ScalarType::U16 => 2,
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 4,
            ScalarType::F64 => 8,
        }
    }

    /// Decodes one value from exactly `size()` bytes.
    pub(crate) fn decode(self, b: &[u8], big_endian: bool) -> f64 {
        macro_rules! get {
            ($t:ty) => {{
                let a = b.try_into().unwrap();
                (if big_endian {
                    <$t>::from_be_bytes(a)
                } else {
                    <$t>::from_le_bytes(a)
                }) as f64
            }};
        }
        match self {
            ScalarType::I8 => b[0] as i8 as f64,
            ScalarType::U8 => b[0] as f64,
            ScalarType::I16 => get!(i16),
            ScalarType::U16 => get!(u16),
            ScalarType::I32 => get!(i32),
            ScalarType::U32 => get!(u32),
            ScalarType::F32 => get!(f32),
            ScalarType::F64 => get!(f64),
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) enum PropertyKind {
    Scalar(ScalarType),
    List { count: ScalarType, item: ScalarType },
}

#[derive(Clone, Debug)]
pub(crate) struct Property {
    pub(crate) name: String,
    pub(crate) kind: PropertyKind,
}

#[derive(Clone, Debug)]
pub(crate) struct Element {
    pub(crate) name: String,
    pub(crate) count: u64,
    pub(crate) properties: Vec<Property>,
}

pub(crate) struct Header {
    pub(crate) format: Format,
    /// A `comment antialiased 1` line (see [`Gaussians::antialiased`]).
    pub(crate) antialiased: bool,
    pub(crate) elements: Vec<Element>,
    /// Byte offset of the body.
    pub(crate) body_start: usize,
}

/// Headers longer than this are rejected (real ones are a few KiB).
const MAX_HEADER_BYTES: usize = 1 << 20;

pub(crate) fn parse_header(bytes: &[u8]) -> Result<Header, PlyErrorKind> {
    if !bytes.starts_with(b"ply\n") && !bytes.starts_with(b"ply\r\n") {
        return Err(PlyErrorKind::NotPly);
    }
    let mut pos = 0;
    let mut line_no = 0;
    let mut format = None;
    let mut antialiased = false;
    let mut elements: Vec<Element> = Vec::new();
    let bad = |line: usize, message: String| PlyErrorKind::BadHeader { line, message };
    loop {
        let rest = &bytes[pos..];
        let Some(nl) = rest.iter().position(|&c| c == b'\n') else {
            return Err(bad(line_no + 1, "header has no end_header line".into()));
        };
        if pos + nl > MAX_HEADER_BYTES {
            return Err(bad(line_no + 1, "header longer than 1 MiB".into()));
        }
        line_no += 1;
        let line = std::str::from_utf8(&rest[..nl])
            .map_err(|_| bad(line_no, "not UTF-8 text".into()))?
            .trim_end_matches('\r');
        pos += nl + 1;
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["ply"] if line_no == 1 => {}
            ["format", f, version] => {
                if *version != "1.0" {
                    return Err(PlyErrorKind::UnsupportedFormat(format!("{f} {version}")));
                }
                format = Some(match *f {
                    "ascii" => Format::Ascii,
                    "binary_little_endian" => Format::BinaryLe,
                    "binary_big_endian" => Format::BinaryBe,
                    other => return Err(PlyErrorKind::UnsupportedFormat(other.to_string())),
                });
            }
            ["comment", "antialiased", "1"] => antialiased = true,
            ["comment", ..] | ["obj_info", ..] | [] => {}
            ["element", name, count] => {
                let count = count.parse::<u64>().map_err(|_| {
                    bad(line_no, format!("element count {count:?} is not a number"))
                })?;
                elements.push(Element {
                    name: name.to_string(),
                    count,
                    properties: Vec::new(),
                });
            }
            ["property", "list", count_t, item_t, name] => {
                let el = elements
                    .last_mut()
                    .ok_or_else(|| bad(line_no, "property before any element".into()))?;
                let ty = |s: &str| {
                    ScalarType::parse(s).ok_or_else(|| bad(line_no, format!("unknown type {s:?}")))
                };
                el.properties.push(Property {
                    name: name.to_string(),
                    kind: PropertyKind::List {
                        count: ty(count_t)?,
                        item: ty(item_t)?,
                    },
                });
            }
            ["property", ty, name] => {
                let el = elements
                    .last_mut()
                    .ok_or_else(|| bad(line_no, "property before any element".into()))?;
                let ty = ScalarType::parse(ty)
                    .ok_or_else(|| bad(line_no, format!("unknown type {ty:?}")))?;
                el.properties.push(Property {
                    name: name.to_string(),
                    kind: PropertyKind::Scalar(ty),
                });
            }
            ["end_header"] => break,
            _ => return Err(bad(line_no, format!("unexpected line {line:?}"))),
        }
    }
    let format = format.ok_or_else(|| bad(line_no, "no format line".into()))?;
    Ok(Header {
        format,
        antialiased,
        elements,
        body_start: pos,
    })
}
