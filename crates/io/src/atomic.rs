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
///
/// A `path` that is neither a file nor a folder (`-o /dev/null`, a pipe, a terminal) is written in
/// place: renaming over it would replace the device with a regular file.
pub fn write_atomic_with(path: &Path, bytes: &[u8], midway: &dyn Fn()) -> io::Result<()> {
    if fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let mut f = fs::OpenOptions::new().write(true).open(path)?;
        f.write_all(bytes)?;
        return f.flush();
    }
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

    /// Writing to a pipe goes through it and leaves it a pipe (`-o /dev/null` once replaced the
    /// device with a regular file; a pipe tests the same without touching the machine's devices).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_pipe_is_written_in_place() {
        use std::io::Read;
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pipe");
        match std::process::Command::new("mkfifo").arg(&p).status() {
            Ok(s) if s.success() => {}
            _ => {
                eprintln!("skipped: no mkfifo");
                return;
            }
        }
        // The read end, opened without waiting for a writer (O_NONBLOCK, 0o4000 on Linux), so that
        // nothing hangs if the pipe were replaced instead of written.
        let mut reader = fs::OpenOptions::new()
            .read(true)
            .custom_flags(0o4000)
            .open(&p)
            .unwrap();
        write_atomic(&p, b"through the pipe").unwrap();
        let mut got = Vec::new();
        let _ = reader.read_to_end(&mut got);
        assert_eq!(got, b"through the pipe");
        assert!(fs::metadata(&p).unwrap().file_type().is_fifo());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn failure_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("missing-dir").join("a.bin");
        assert!(write_atomic(&p, b"x").is_err());
    }
}
