//! File formats of `splat`: the INRIA 3DGS PLY ([`ply`]), the compressed formats splats are shared in
//! ([`formats`]: compressed PLY, .splat, SPZ, SOG, glTF) and images ([`images`]).
//!
//! Every writer goes through [`atomic::write_atomic`]: a temporary file in the destination folder, flushed
//! and renamed into place, so a half-written file never has the final name.

pub mod atomic;
pub mod dataset;
pub mod formats;
pub mod fuzzing;
pub mod images;
pub mod ply;
mod ply_header;

pub use atomic::{write_atomic, write_atomic_with};
pub use formats::{read_scene, write_scene, FormatError, SceneFormat, WriteOptions};
pub use ply::{ply_bytes, read_ply, read_ply_bytes, write_ply, PlyError, PlyErrorKind};
