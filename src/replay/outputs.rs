//! The files `replay` writes (`--report`, `--plot`, `--decisions`), checked before any line
//! is read: a replay can take minutes, and an output it cannot write should not end it.

use super::command::{ReplayArgs, ReplayError};
use crate::files::refuse_replacing;
use std::path::{Path, PathBuf};

/// An output that could not be written (its folder missing, a folder itself, a plot in a
/// format it cannot be drawn in) is refused before the replay, not after it, and so is one that
/// would replace a log, the policy, its model or another output.
pub fn refuse_unwritable(args: &ReplayArgs, model: Option<&Path>) -> Result<(), ReplayError> {
    let outputs = [
        ("--report", &args.report),
        ("--plot", &args.plot),
        ("--decisions", &args.decisions),
    ];
    let inputs = || {
        args.logs
            .iter()
            .map(|p| (p.as_path(), "--log"))
            .chain(std::iter::once((args.policy.as_path(), "--policy")))
            .chain(model.map(|p| (p, "the policy's adaptive.anomaly.model")))
    };
    for (i, &(flag, path)) in outputs.iter().enumerate() {
        let Some(path) = path else { continue };
        let other_outputs = outputs[..i]
            .iter()
            .filter_map(|(flag, p)| Some((p.as_deref()?, *flag)));
        refuse_replacing(flag, path, inputs().chain(other_outputs))?;
        if path.is_dir() {
            return Err(ReplayError::OutputIsFolder {
                flag,
                path: path.clone(),
            });
        }
        if let Some(folder) = crate::files::missing_folder(path) {
            return Err(ReplayError::NoFolder {
                path: path.clone(),
                folder,
            });
        }
    }
    if let Some(path) = &args.decisions {
        if let Some(part) = existing_part(path) {
            return Err(ReplayError::DecisionPartExists {
                path: path.clone(),
                part,
            });
        }
    }
    if let Some(path) = &args.plot {
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default();
        if !["png", "jpg", "jpeg"].contains(&extension.to_ascii_lowercase().as_str()) {
            return Err(ReplayError::PlotFormat(path.clone()));
        }
    }
    Ok(())
}

/// A file `PATH.partN` next to `--decisions PATH`: the passes are written there, and it would
/// be overwritten, then removed.
fn existing_part(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    let prefix = format!("{name}.part");
    std::fs::read_dir(folder).ok()?.flatten().find_map(|entry| {
        let file = entry.file_name();
        let number = file.to_str()?.strip_prefix(&prefix)?;
        (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
            .then(|| folder.join(&file))
    })
}
