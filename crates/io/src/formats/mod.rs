//! Every file format splats are shared in, read and written: the INRIA PLY ([`crate::ply`], lossless,
//! the default), SuperSplat's compressed PLY, antimatter15's `.splat`, Niantic's SPZ (versions 1-4),
//! PlayCanvas's SOG (version 2, zipped or as a folder with `meta.json`) and glTF / GLB with
//! `KHR_gaussian_splatting`. Byte layouts follow the tools that write them (`@playcanvas/splat-transform`,
//! the reference SPZ library); the tests check every writer's loss against the bound below.
//!
//! | format | bytes a splat (SH 3) | what is lost on a round trip |
//! |---|---|---|
//! | PLY | 248 | nothing |
//! | compressed PLY | 16 + 45 (+ 72 per 256 splats) | positions 11/10/11 bits and log-scales 11/10/11 bits in each 256-splat chunk's box (log-scales clamped to [-20, 20]); colour 8 bits in the chunk's range; opacity 8 bits; rotation smallest-three at 10 bits; SH 8 bits over [-4, 4]; the order (Morton) |
//! | .splat | 32 | all SH above degree 0; colour and opacity 8 bits, colour clamped to [0, 1]; rotation 8 bits a component |
//! | SPZ | 65 before gzip or zstd (17.6 after, on the demo scene) | positions 24-bit fixed point, 1/4096 (clamped to +-2048); log-scales 1/16 over [-10, 5.9]; rotation smallest-three at 9 bits + sign (v3/v4; v2: x, y, z at 8 bits, w derived, poor near w = 0); opacity 8 bits; DC 8 bits at 0.15 a unit (+-3.3); SH 5 bits (degree 1) and 4 bits (above) over [-1, 1) |
//! | SOG | about 20 after WebP (the demo scene) | positions 16 bits a component in a `sign(x) ln(1 + abs(x))` domain; log-scales and DC through 256-entry codebooks (half an entry gap); opacity 8 bits; rotation smallest-three at 8 bits; SH through a k-means palette of at most 4,096 entries, each value through a 256-entry codebook; the order (Morton) |
//! | glTF / GLB | 248 | float rounding of `exp`, `sigmoid` and their inverses |
//!
//! Readers take bytes (the fuzz targets call them directly), check every count against the bytes
//! that are present before sizing a buffer from it, and decompress with a limit, so that no header
//! can make them allocate more than the input justifies. Every failure is a [`FormatError`] naming
//! the file.

pub mod antimatter;
pub mod compressed_ply;
pub mod gltf;
pub mod kmeans;
pub mod quant;
pub mod sog;
pub mod spz;

use std::fmt;
use std::path::{Path, PathBuf};

use splat_core::Gaussians;

use crate::atomic::write_atomic;
use crate::ply::{ply_bytes, read_ply_bytes, PlyErrorKind};

/// A scene file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SceneFormat {
    /// The INRIA 3DGS PLY.
    Ply,
    /// SuperSplat's chunked, quantized PLY (`.compressed.ply`).
    CompressedPly,
    /// antimatter15's headerless 32-byte records.
    Splat,
    /// Niantic's SPZ.
    Spz,
    /// PlayCanvas SOG v2 as one zip file.
    Sog,
    /// PlayCanvas SOG v2 as a folder: `meta.json` beside its WebP images.
    SogFolder,
    /// Binary glTF with `KHR_gaussian_splatting`.
    Glb,
    /// glTF JSON with `KHR_gaussian_splatting`, its buffer embedded as a data URI.
    Gltf,
}

impl SceneFormat {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [SceneFormat; 8] = [
        SceneFormat::Ply,
        SceneFormat::CompressedPly,
        SceneFormat::Splat,
        SceneFormat::Spz,
        SceneFormat::Sog,
        SceneFormat::SogFolder,
        SceneFormat::Glb,
        SceneFormat::Gltf,
    ];

    /// The short name used by `--export` and in messages.
    pub fn name(self) -> &'static str {
        match self {
            SceneFormat::Ply => "ply",
            SceneFormat::CompressedPly => "compressed-ply",
            SceneFormat::Splat => "splat",
            SceneFormat::Spz => "spz",
            SceneFormat::Sog => "sog",
            SceneFormat::SogFolder => "sog-folder",
            SceneFormat::Glb => "glb",
            SceneFormat::Gltf => "gltf",
        }
    }

    /// The file name a format is written under by `train --export` (`point_cloud.<this>`), or the
    /// folder for [`SceneFormat::SogFolder`].
    pub fn export_name(self) -> &'static str {
        match self {
            SceneFormat::Ply => "point_cloud.ply",
            SceneFormat::CompressedPly => "point_cloud.compressed.ply",
            SceneFormat::Splat => "point_cloud.splat",
            SceneFormat::Spz => "point_cloud.spz",
            SceneFormat::Sog => "point_cloud.sog",
            SceneFormat::SogFolder => "point_cloud_sog/meta.json",
            SceneFormat::Glb => "point_cloud.glb",
            SceneFormat::Gltf => "point_cloud.gltf",
        }
    }

    /// Parses a short name (`spz`, `sog`, `compressed-ply`, ...).
    pub fn from_name(name: &str) -> Option<SceneFormat> {
        let name = name.trim().to_ascii_lowercase();
        let alias = match name.as_str() {
            "compressed" | "compressed.ply" | "compressedply" => "compressed-ply",
            "sog-dir" | "meta.json" => "sog-folder",
            other => other,
        };
        SceneFormat::ALL.into_iter().find(|f| f.name() == alias)
    }

    /// The format a path's name says (`x.compressed.ply`, `x.spz`, `meta.json`, ...).
    pub fn from_path(path: &Path) -> Option<SceneFormat> {
        let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
        let ends = |s: &str| name.ends_with(s);
        Some(if ends(".compressed.ply") {
            SceneFormat::CompressedPly
        } else if ends(".ply") {
            SceneFormat::Ply
        } else if ends(".splat") {
            SceneFormat::Splat
        } else if ends(".spz") {
            SceneFormat::Spz
        } else if ends(".sog") {
            SceneFormat::Sog
        } else if name == "meta.json" || ends(".meta.json") {
            SceneFormat::SogFolder
        } else if ends(".glb") {
            SceneFormat::Glb
        } else if ends(".gltf") {
            SceneFormat::Gltf
        } else {
            return None;
        })
    }

    /// The format the first bytes of a file show; `None` for `.splat` (it has no header) and for
    /// anything unknown.
    pub fn sniff(bytes: &[u8]) -> Option<SceneFormat> {
        if bytes.starts_with(b"ply\n") || bytes.starts_with(b"ply\r\n") {
            let head = &bytes[..bytes.len().min(64 * 1024)];
            let packed = head.windows(15).any(|w| w == b"packed_position");
            return Some(if packed {
                SceneFormat::CompressedPly
            } else {
                SceneFormat::Ply
            });
        }
        if bytes.starts_with(&[0x1f, 0x8b]) || bytes.starts_with(b"NGSP") {
            return Some(SceneFormat::Spz);
        }
        if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
            return Some(SceneFormat::Sog);
        }
        if bytes.starts_with(b"glTF") {
            return Some(SceneFormat::Glb);
        }
        let text = bytes.iter().position(|b| !b.is_ascii_whitespace());
        if text.is_some_and(|i| bytes[i] == b'{') {
            let head = String::from_utf8_lossy(&bytes[..bytes.len().min(64 * 1024)]);
            if head.contains("\"asset\"") && head.contains("\"accessors\"") {
                return Some(SceneFormat::Gltf);
            }
            if head.contains("\"means\"") {
                return Some(SceneFormat::SogFolder);
            }
        }
        None
    }
}

impl fmt::Display for SceneFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A scene-file problem, with the file it came from.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", path.display())]
pub struct FormatError {
    pub path: PathBuf,
    pub kind: FormatErrorKind,
}

#[derive(Debug, thiserror::Error)]
pub enum FormatErrorKind {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Ply(#[from] PlyErrorKind),
    #[error("not a {format} file: {why}")]
    NotFormat { format: SceneFormat, why: String },
    #[error(
        "cannot tell the file's format from its name or its first bytes (formats: {})",
        format_names()
    )]
    Unknown,
    #[error("truncated: {what} needs {expected} bytes, the file has {found}")]
    Truncated {
        what: String,
        expected: u64,
        found: u64,
    },
    #[error("corrupt {what}: {why}")]
    Corrupt { what: &'static str, why: String },
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    Invalid(String),
}

fn format_names() -> String {
    SceneFormat::ALL.map(|f| f.name()).join(", ")
}

impl FormatErrorKind {
    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        FormatErrorKind::Invalid(msg.into())
    }
    pub(crate) fn truncated(what: impl Into<String>, expected: u64, found: u64) -> Self {
        FormatErrorKind::Truncated {
            what: what.into(),
            expected,
            found,
        }
    }
    pub fn with_path(self, path: &Path) -> FormatError {
        FormatError {
            path: path.to_path_buf(),
            kind: self,
        }
    }
}

/// A count that a reader accepts at the most (2^26 splats, 16 GiB as a PLY at SH 3).
pub const MAX_SPLATS: u64 = 1 << 26;

/// How much a compressed stream may expand: at most this many times its own bytes, and never less
/// than [`MIN_DECODE_LIMIT`], so that a small file cannot claim gigabytes.
pub const MAX_EXPANSION: u64 = 4096;
/// The expansion allowed to any file, however small.
pub const MIN_DECODE_LIMIT: u64 = 64 << 20;

pub(crate) fn decode_limit(input_len: usize) -> u64 {
    (input_len as u64)
        .saturating_mul(MAX_EXPANSION)
        .max(MIN_DECODE_LIMIT)
}

/// How each writer is configured.
#[derive(Clone, Debug)]
pub struct WriteOptions {
    /// SPZ version to write: 2, 3 (default, what browsers read) or 4.
    pub spz_version: u32,
    /// Lloyd iterations of SOG's SH palette.
    pub sog_iterations: usize,
    /// gzip level of SPZ 2 and 3, 0-9 (6 by default; the viewer's live snapshots use 1: a third of
    /// the time for a file a few percent larger).
    pub gzip_level: u32,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            spz_version: 3,
            sog_iterations: 10,
            gzip_level: 6,
        }
    }
}

/// The scene in one file's bytes (every format but [`SceneFormat::SogFolder`], which is many files).
pub fn encode(
    format: SceneFormat,
    g: &Gaussians<f32>,
    opts: &WriteOptions,
) -> Result<Vec<u8>, FormatErrorKind> {
    check_finite(g)?;
    match format {
        SceneFormat::Ply => ply_bytes(g).map_err(|e| FormatErrorKind::invalid(e.to_string())),
        SceneFormat::CompressedPly => Ok(compressed_ply::encode(g)),
        SceneFormat::Splat => Ok(antimatter::encode(g)),
        SceneFormat::Spz => spz::encode(g, opts.spz_version, opts.gzip_level.min(9)),
        SceneFormat::Sog => sog::encode_zip(g, opts),
        SceneFormat::Glb => Ok(gltf::encode_glb(g)),
        SceneFormat::Gltf => Ok(gltf::encode_gltf(g)),
        SceneFormat::SogFolder => Err(FormatErrorKind::invalid(
            "a SOG folder is several files: use write_scene",
        )),
    }
}

/// Decodes one file's bytes in a known format; `path` names it in errors (and, for a SOG folder or a
/// glTF with an external buffer, says where the other files are).
pub fn decode(
    format: SceneFormat,
    bytes: &[u8],
    path: &Path,
) -> Result<Gaussians<f32>, FormatError> {
    let g = match format {
        SceneFormat::Ply | SceneFormat::CompressedPly => {
            return read_ply_bytes(bytes, path).map_err(|e| FormatError {
                path: e.path,
                kind: FormatErrorKind::Ply(e.kind),
            })
        }
        SceneFormat::Splat => antimatter::decode(bytes),
        SceneFormat::Spz => spz::decode(bytes),
        SceneFormat::Sog => sog::decode_zip(bytes),
        SceneFormat::SogFolder => sog::decode_folder(bytes, path),
        SceneFormat::Glb => gltf::decode_glb(bytes),
        SceneFormat::Gltf => gltf::decode_gltf(bytes, path),
    };
    g.map_err(|kind| kind.with_path(path))
}

/// The format of a file: from its first bytes where they tell, else from its name (always from the
/// name for `.splat`).
pub fn detect(bytes: &[u8], path: &Path) -> Result<SceneFormat, FormatError> {
    let by_name = SceneFormat::from_path(path);
    // `.splat` has no header: its first float can look like any magic, so its name decides.
    if by_name == Some(SceneFormat::Splat) {
        return Ok(SceneFormat::Splat);
    }
    match (SceneFormat::sniff(bytes), by_name) {
        // A folder's meta.json and a zip's contents say the same thing: trust the name.
        (Some(SceneFormat::SogFolder), _) => Ok(SceneFormat::SogFolder),
        (Some(f), _) => Ok(f),
        (None, Some(f)) => Ok(f),
        (None, None) => Err(FormatErrorKind::Unknown.with_path(path)),
    }
}

/// Reads a scene in any format. A folder is read as SOG when it holds `meta.json`.
pub fn read_scene(path: &Path) -> Result<Gaussians<f32>, FormatError> {
    let file = if path.is_dir() {
        let meta = path.join("meta.json");
        if !meta.is_file() {
            return Err(FormatErrorKind::invalid(
                "a folder is read as SOG, and this one has no meta.json",
            )
            .with_path(path));
        }
        meta
    } else {
        path.to_path_buf()
    };
    let bytes = std::fs::read(&file).map_err(|e| FormatErrorKind::Io(e).with_path(&file))?;
    let format = detect(&bytes, &file)?;
    decode(format, &bytes, &file)
}

/// Writes a scene atomically in `format` (a SOG folder: its images first, `meta.json` last, each
/// through a temporary file).
pub fn write_scene(
    path: &Path,
    g: &Gaussians<f32>,
    format: SceneFormat,
    opts: &WriteOptions,
) -> Result<(), FormatError> {
    let err = |kind: FormatErrorKind| kind.with_path(path);
    if format == SceneFormat::SogFolder {
        let dir = match path.file_name() {
            Some(n) if n.to_string_lossy().eq_ignore_ascii_case("meta.json") => {
                path.parent().unwrap_or(Path::new(".")).to_path_buf()
            }
            _ => path.to_path_buf(),
        };
        std::fs::create_dir_all(&dir).map_err(|e| FormatErrorKind::Io(e).with_path(&dir))?;
        check_finite(g).map_err(err)?;
        let files = sog::encode_files(g, opts).map_err(err)?;
        for (name, bytes) in &files {
            let p = dir.join(name);
            write_atomic(&p, bytes).map_err(|e| FormatErrorKind::Io(e).with_path(&p))?;
        }
        return Ok(());
    }
    let bytes = encode(format, g, opts).map_err(err)?;
    write_atomic(path, &bytes).map_err(|e| err(FormatErrorKind::Io(e)))
}

/// The output format of a path: from its name, else an error listing the names.
pub fn output_format(path: &Path) -> Result<SceneFormat, FormatError> {
    if path.is_dir() {
        return Ok(SceneFormat::SogFolder);
    }
    SceneFormat::from_path(path).ok_or_else(|| {
        FormatErrorKind::invalid(
            "cannot tell the output format from the name: use .ply, .compressed.ply, .splat, .spz, \
             .sog, meta.json (a SOG folder), .glb or .gltf",
        )
        .with_path(path)
    })
}

fn check_finite(g: &Gaussians<f32>) -> Result<(), FormatErrorKind> {
    g.check_consistent().map_err(FormatErrorKind::Invalid)?;
    let bad = |field: &str, i: usize| {
        Err(FormatErrorKind::invalid(format!(
            "not written: Gaussian {i} has a non-finite {field}"
        )))
    };
    for i in 0..g.len() {
        if !g.means[i].iter().all(|v| v.is_finite()) {
            return bad("mean", i);
        }
        if !g.log_scales[i].iter().all(|v| v.is_finite()) {
            return bad("scale", i);
        }
        if !g.rotations[i].iter().all(|v| v.is_finite()) {
            return bad("rotation", i);
        }
        if !g.opacity_logits[i].is_finite() {
            return bad("opacity", i);
        }
        if !g.sh_dc[i].iter().all(|v| v.is_finite())
            || !g.sh_rest_of(i).iter().all(|v| v.is_finite())
        {
            return bad("SH coefficient", i);
        }
    }
    Ok(())
}

/// Reads exactly `n` little-endian bytes at `*pos`, advancing it; `what` names them in the error.
pub(crate) fn take<'a>(
    bytes: &'a [u8],
    pos: &mut usize,
    n: u64,
    what: &str,
) -> Result<&'a [u8], FormatErrorKind> {
    let end = (*pos as u64).saturating_add(n);
    if end > bytes.len() as u64 {
        return Err(FormatErrorKind::truncated(what, end, bytes.len() as u64));
    }
    let s = &bytes[*pos..end as usize];
    *pos = end as usize;
    Ok(s)
}

pub(crate) fn u32_le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

pub(crate) fn f32_le(b: &[u8], at: usize) -> f32 {
    f32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Rejects a decoded value that is not finite, naming the splat and the field.
pub(crate) fn finite(v: f32, i: usize, field: &str) -> Result<f32, FormatErrorKind> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(FormatErrorKind::invalid(format!(
            "splat {i}: {field} is {v} (not finite)"
        )))
    }
}
