//! Crash-safe file writes.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path` through a temporary file in the same folder, synced and then renamed over
/// `path`. On error the temporary file is removed and `path` is left as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, bytes, &|| {})
}

/// [`write_atomic`] calling `midway` when half of `bytes` is in the temporary file (tests stop the
/// process there). The folder is synced after the rename so that the new name survives a crash.
pub fn write_atomic_with(path: &Path, bytes: &[u8], midway: &dyn Fn()) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = File::create(&tmp)?;
        let (first, second) = bytes.split_at(bytes.len() / 2);
        f.write_all(first)?;
        f.flush()?;
        midway();
        f.write_all(second)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        // Make the rename itself durable; not every file system can sync a folder.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.bin");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn failure_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("missing-dir").join("a.bin");
        assert!(write_atomic(&p, b"x").is_err());
    }
}
