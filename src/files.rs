//! Files a command both reads and writes, told apart: an output never replaces an input. And
//! the one mark a text file may start with, which every reader skips alike.
//!
//! `--force` lets `train` replace an old model, and `replay` writes its outputs wherever it is
//! told; neither may write over the traffic, policy or model it was given, which would be lost
//! for a typing slip.

use std::path::{Path, PathBuf};

/// `text` without the UTF-8 byte-order mark some Windows editors write first: JSON and YAML
/// let a reader ignore it, and the parsers would take it for text (YAML for the start of a
/// second document).
pub fn without_byte_order_mark(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Why a drawing could not be written to `path`, in the file system's words when the file was
/// the trouble: the plotting library nests them in three of its own (`backend error: Drawing
/// backend error: ImageError(IoError(Os { code: 13, kind: PermissionDenied, message:
/// "Permission denied" }))`). Read from that text, touching nothing on disk; any other error
/// is kept as it was.
pub fn unwritable(path: &Path, error: String) -> String {
    let os_error = || {
        let rest = error.split_once("IoError(Os { code: ")?.1;
        let (code, rest) = rest.split_once(',')?;
        let message = rest.split_once("message: \"")?.1.split_once('"')?.0;
        Some(format!(
            "cannot write {}: {message} (os error {code})",
            path.display()
        ))
    };
    os_error().unwrap_or(error)
}

/// An output that names an input or an earlier output of the same command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{flag} {path} is also named by {input}: an output never replaces an input or another output"
)]
pub struct OutputIsInput {
    pub flag: &'static str,
    pub path: PathBuf,
    pub input: &'static str,
}

/// Whether `a` and `b` name one file: the same device and inode for files that exist (through
/// symbolic and hard links and `..`); for a path that does not exist yet, its folder resolved
/// and its name compared.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(ma), Ok(mb)) => same_inode(a, &ma, b, &mb),
        (Ok(_), Err(_)) | (Err(_), Ok(_)) => false,
        (Err(_), Err(_)) => resolved(a) == resolved(b),
    }
}

#[cfg(unix)]
fn same_inode(_: &Path, a: &std::fs::Metadata, _: &Path, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

/// Without inodes, through symbolic links and `..` only.
#[cfg(not(unix))]
fn same_inode(a: &Path, _: &std::fs::Metadata, b: &Path, _: &std::fs::Metadata) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
}

/// A path that does not exist, with its folder resolved where that exists. A dangling symbolic
/// link is followed to where it points (that is the file writing through it creates), at most
/// as many links deep as Linux follows.
fn resolved(path: &Path) -> PathBuf {
    resolved_folder(&followed(path))
}

/// `path` followed through symbolic links, dangling ones included, at most as many links deep
/// as Linux follows.
fn followed(path: &Path) -> PathBuf {
    let mut path = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::read_link(&path) {
            Ok(target) => {
                let folder = path.parent().unwrap_or(Path::new(""));
                path = folder.join(target);
            }
            Err(_) => break,
        }
    }
    path
}

/// The folder writing `path` would need, when it is missing: through a dangling symbolic link,
/// the folder of the file the link points to.
pub fn missing_folder(path: &Path) -> Option<PathBuf> {
    let path = followed(path);
    let folder = path.parent().filter(|f| !f.as_os_str().is_empty())?;
    (!folder.is_dir()).then(|| folder.to_path_buf())
}

fn resolved_folder(path: &Path) -> PathBuf {
    let folder = match path.parent() {
        Some(p) if p.as_os_str().is_empty() => Path::new("."),
        Some(p) => p,
        None => return path.to_path_buf(),
    };
    match (folder.canonicalize(), path.file_name()) {
        (Ok(folder), Some(name)) => folder.join(name),
        _ => path.to_path_buf(),
    }
}

/// Refuses `output` (named by `flag`) when it is one of `inputs` (each with the flag that named
/// it), naming the first it would replace.
pub fn refuse_replacing<'a>(
    flag: &'static str,
    output: &Path,
    inputs: impl IntoIterator<Item = (&'a Path, &'static str)>,
) -> Result<(), OutputIsInput> {
    match inputs
        .into_iter()
        .find(|(input, _)| same_file(input, output))
    {
        Some((_, input)) => Err(OutputIsInput {
            flag,
            path: output.to_path_buf(),
            input,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_through_dot_dot_is_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.jsonl");
        std::fs::write(&file, "{}").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let other = dir.path().join("sub/../t.jsonl");
        assert!(same_file(&file, &other));
        let refused = refuse_replacing("--out", &other, [(file.as_path(), "--data")]);
        assert_eq!(refused.map_err(|e| e.input), Err("--data"));
        assert!(!same_file(&file, &dir.path().join("new.json")));
    }

    /// Writing through a link to a file not yet there creates that file: `--report dl.json
    /// --decisions t.json` with `dl.json -> t.json` wrote both to one file.
    #[cfg(unix)]
    #[test]
    fn a_dangling_symbolic_link_is_the_file_it_points_to() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.json");
        let link = dir.path().join("dl.json");
        std::os::unix::fs::symlink("t.json", &link).unwrap();
        assert!(same_file(&link, &target));
        let chained = dir.path().join("chain.json");
        std::os::unix::fs::symlink(&link, &chained).unwrap();
        assert!(same_file(&chained, &target));
        assert!(!same_file(&link, &dir.path().join("other.json")));
        // A loop of links ends the walk; it names no other file.
        let a = dir.path().join("a.json");
        let b = dir.path().join("b.json");
        std::os::unix::fs::symlink("b.json", &a).unwrap();
        std::os::unix::fs::symlink("a.json", &b).unwrap();
        assert!(!same_file(&a, &target));
    }

    #[cfg(unix)]
    #[test]
    fn a_dangling_link_into_a_missing_folder_needs_that_folder() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("out.json");
        std::os::unix::fs::symlink("missing/out.json", &link).unwrap();
        assert_eq!(missing_folder(&link), Some(dir.path().join("missing")));
        assert_eq!(missing_folder(&dir.path().join("new.json")), None);
        assert_eq!(missing_folder(Path::new("new.json")), None);
    }

    #[test]
    fn a_drawing_that_cannot_be_written_says_why_in_the_file_systems_words() {
        let path = Path::new("ro/plot.png");
        let nested = "backend error: Drawing backend error: ImageError(IoError(Os { code: 13, \
                      kind: PermissionDenied, message: \"Permission denied\" }))";
        assert_eq!(
            unwritable(path, nested.into()),
            "cannot write ro/plot.png: Permission denied (os error 13)"
        );
        // Another error is kept as it was.
        assert_eq!(unwritable(path, "no font".into()), "no font");
    }

    #[test]
    fn a_hard_link_is_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("in.jsonl");
        std::fs::write(&file, "{}").unwrap();
        let alias = dir.path().join("alias.jsonl");
        std::fs::hard_link(&file, &alias).unwrap();
        assert!(same_file(&file, &alias));
    }

    #[test]
    fn two_spellings_of_a_new_file_are_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let a = dir.path().join("out.json");
        let b = dir.path().join("sub/../out.json");
        assert!(same_file(&a, &b));
        assert!(!same_file(&a, &dir.path().join("other.json")));
    }
}
