//! The external programs `splat prepare` drives (COLMAP, ffmpeg, ffprobe): found on `PATH` (or given
//! by the user), run as child processes without a shell, their output appended to `prepare.log` and
//! read line by line for progress.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use crate::PrepareError;

/// An external program and the Debian package that provides it.
#[derive(Clone, Debug)]
pub struct Tool {
    pub name: &'static str,
    pub package: &'static str,
    pub path: PathBuf,
}

impl Tool {
    /// `name` on `PATH`, or `given` (a path or a name on `PATH`) when the user named one.
    pub fn find(
        name: &'static str,
        package: &'static str,
        given: Option<&Path>,
    ) -> Result<Tool, PrepareError> {
        let wanted = given.unwrap_or(Path::new(name));
        let found = if wanted.components().count() > 1 {
            is_executable(wanted).then(|| wanted.to_path_buf())
        } else {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join(wanted))
                    .find(|p| is_executable(p))
            })
        };
        found
            .map(|path| Tool {
                name,
                package,
                path,
            })
            .ok_or_else(|| PrepareError::MissingTool {
                name,
                package,
                looked_for: wanted.to_path_buf(),
            })
    }
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// The log every child's output goes to, each run headed by its command line.
pub struct Log {
    path: PathBuf,
    file: std::fs::File,
}

impl Log {
    pub fn create(path: &Path) -> Result<Log, PrepareError> {
        let file = std::fs::File::create(path).map_err(|e| PrepareError::io(path, e))?;
        Ok(Log {
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a line of splat's own (a stage heading, a summary).
    pub fn line(&mut self, text: &str) -> Result<(), PrepareError> {
        writeln!(self.file, "{text}").map_err(|e| PrepareError::io(&self.path, e))
    }
}

/// Runs `tool` with `args` (no shell), appending its stdout and stderr to `log` and handing each line
/// to `on_line` as it arrives. A non-zero exit is an error that quotes the last lines of its output.
pub fn run<S: AsRef<OsStr>>(
    tool: &Tool,
    args: &[S],
    log: &mut Log,
    on_line: &mut dyn FnMut(&str),
) -> Result<(), PrepareError> {
    let shown: Vec<String> = std::iter::once(tool.path.display().to_string())
        .chain(
            args.iter()
                .map(|a| a.as_ref().to_string_lossy().into_owned()),
        )
        .collect();
    log.line(&format!("\n$ {}", shown.join(" ")))?;
    let mut child = Command::new(&tool.path)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // COLMAP links Qt; without a display it must not try to open one.
        .env("QT_QPA_PLATFORM", "offscreen")
        .spawn()
        .map_err(|e| PrepareError::ToolFailed {
            name: tool.name,
            message: format!("could not start {}: {e}", tool.path.display()),
            log: log.path().to_path_buf(),
        })?;
    let (tx, rx) = mpsc::channel::<String>();
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|stream| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            // COLMAP and ffmpeg end progress lines with \r as well as \n.
            let mut reader = BufReader::new(stream);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        for part in String::from_utf8_lossy(&buf).split('\r') {
                            let part = part.trim_end_matches('\n');
                            if !part.is_empty() && tx.send(part.to_string()).is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        })
    })
    .collect();
    drop(tx);
    let mut tail = std::collections::VecDeque::new();
    let mut log_error = None;
    for line in rx {
        if log_error.is_none() {
            log_error = log.line(&line).err();
        }
        on_line(&line);
        tail.push_back(line);
        if tail.len() > 6 {
            tail.pop_front();
        }
    }
    for r in readers {
        let _ = r.join();
    }
    let status = child.wait().map_err(|e| PrepareError::ToolFailed {
        name: tool.name,
        message: format!("waiting for it: {e}"),
        log: log.path().to_path_buf(),
    })?;
    if let Some(e) = log_error {
        return Err(e);
    }
    if status.success() {
        Ok(())
    } else {
        let last: Vec<String> = tail.into_iter().collect();
        Err(PrepareError::ToolFailed {
            name: tool.name,
            message: format!(
                "`{} {}` failed ({status}){}",
                tool.name,
                args.first()
                    .map(|a| a.as_ref().to_string_lossy().into_owned())
                    .unwrap_or_default(),
                if last.is_empty() {
                    String::new()
                } else {
                    format!("; it said: {}{}", last.join(" | "), disk_hint(&last))
                }
            ),
            log: log.path().to_path_buf(),
        })
    }
}

/// A hint when a program's last words look like a full disk (COLMAP's SQLite errors are what a
/// full disk gives it).
fn disk_hint(last: &[String]) -> &'static str {
    let full = [
        "No space left",
        "File too large",
        "SQLite error",
        "disk I/O error",
    ];
    match last.iter().any(|l| full.iter().any(|f| l.contains(f))) {
        true => " (is the disk full? free some space and run again)",
        false => "",
    }
}

/// The number pair of `[i/n]` in a progress line, if any, after `marker`.
pub fn bracket_count(line: &str, marker: &str) -> Option<(u64, u64)> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let rest = rest.trim_start().strip_prefix('[')?;
    let end = rest.find([']', ','])?;
    let (a, b) = rest[..end].split_once('/')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_counts_of_colmap_lines() {
        assert_eq!(
            bracket_count("Processed file [12/77]", "Processed file"),
            Some((12, 77))
        );
        assert_eq!(
            bracket_count("Matching block [2/3, 1/3]", "Matching block"),
            Some((2, 3))
        );
        assert_eq!(
            bracket_count("Matching image [5/40] in 0.1s", "Matching image"),
            Some((5, 40))
        );
        assert_eq!(
            bracket_count("Processed file [x/77]", "Processed file"),
            None
        );
        assert_eq!(bracket_count("nothing here", "Processed file"), None);
    }

    #[test]
    fn a_missing_program_names_its_package() {
        let e = Tool::find(
            "colmap",
            "colmap",
            Some(Path::new("/nonexistent/dir/colmap")),
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("apt-get install colmap"), "{msg}");
    }
}
