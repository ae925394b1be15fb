//! Files a command both reads and writes, told apart: an output never replaces an input.
//!
//! `--force` lets `train` replace an old model, and `replay` writes its outputs wherever it is
//! told; neither may write over the traffic, policy or model it was given, which would be lost
//! for a typing slip.

use std::path::{Path, PathBuf};

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

/// Whether `a` and `b` name one file (through links and `..`); paths that do not exist yet are
/// compared as written.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
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
}
