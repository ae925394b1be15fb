//! The repository's documents the tests keep true, paths as messages show them, and the real
//! binary run from the repository (`check-policy` among others).

use crate::markdown::Doc;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `path` relative to the repository, for messages.
pub fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Files under `dir` (recursively) whose name ends with one of `extensions`.
pub fn files_under(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{} is unreadable: {e}", dir.display()));
        for entry in entries.map(|e| e.expect("a directory entry")) {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if extensions
                .iter()
                .any(|x| path.extension() == Some(OsStr::new(x)))
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The Markdown files this test keeps true.
pub fn documents() -> Vec<Doc> {
    let mut paths: Vec<PathBuf> = [
        "README.md",
        "CHANGELOG.md",
        "dashboards/README.md",
        "models/README.md",
    ]
    .iter()
    .map(|p| root().join(p))
    .collect();
    paths.extend(files_under(&root().join("docs"), &["md"]));
    paths.extend(files_under(&root().join("examples"), &["md"]));
    paths.iter().map(|p| Doc::read(p)).collect()
}

/// Runs the real binary; (exit code, stdout and stderr).
pub fn ratewarden<S: AsRef<OsStr>>(args: &[S]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ratewarden"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("ratewarden runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().expect("exited, not killed"), text)
}

/// `check-policy` on a file or folder: `None` when it is accepted, else what it printed.
pub fn check_policy(path: &Path) -> Option<String> {
    let (code, text) = ratewarden(&[OsStr::new("check-policy"), path.as_os_str()]);
    (code != 0 || !text.contains(": ok (")).then_some(text)
}
