//! How this process was started, so that the commands splat prints as next steps ("view it: ...",
//! "resume with: ...") work as printed: `splat` when the shell found it by that name on the PATH,
//! otherwise the path it was started by (`./target/release/splat`; `cargo run` passes
//! `target/release/splat` from the workspace root and the absolute path from anywhere else), which
//! starts the same binary from the same directory.

use std::path::Path;

/// The words that start this program again, as typed into a POSIX shell.
pub(crate) fn program() -> String {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    program_from(Path::new(&argv0))
}

/// [`program`] from `argv0` as the process got it.
fn program_from(argv0: &Path) -> String {
    if argv0.as_os_str().is_empty() {
        return "splat".to_string();
    }
    crate::shell_word(argv0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_is_started_again_as_it_was() {
        assert_eq!(program_from(Path::new("splat")), "splat");
        let typed = Path::new("./target/release/splat");
        assert_eq!(program_from(typed), "./target/release/splat");
        let spaced = Path::new("/my tools/splat");
        assert_eq!(program_from(spaced), "'/my tools/splat'");
        assert_eq!(program_from(Path::new("")), "splat");
    }
}
