//! Files a command both reads and writes, told apart: an output never replaces an input.
//!
//! `--force` lets `train` replace an old model, and `replay` writes its outputs wherever it is
//! told; neither may write over the traffic, policy or model it was given, which would be lost
//! for a typing slip.

use std::path::Path;

/// Whether `a` and `b` name one file (through links and `..`); paths that do not exist yet are
/// compared as written.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The first of `inputs` (each with the flag that named it) that `output` would replace.
pub fn input_at<'a>(
    output: &Path,
    inputs: impl IntoIterator<Item = (&'a Path, &'static str)>,
) -> Option<&'static str> {
    inputs
        .into_iter()
        .find(|(input, _)| same_file(input, output))
        .map(|(_, flag)| flag)
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
        assert_eq!(
            input_at(&other, [(file.as_path(), "--data")]),
            Some("--data")
        );
        assert!(!same_file(&file, &dir.path().join("new.json")));
    }
}
