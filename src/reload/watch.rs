//! File watches that trigger a reload: the policy file, the model file, the envoy folder.
//!
//! Each watches the folder, not the file: editors replace a file by renaming a new one over
//! it, and a Kubernetes ConfigMap volume never touches the file at all. There `policy.yaml` is a
//! symlink to `..data/policy.yaml`, and an update swaps the `..data` symlink to a new folder, so
//! an event on the name a symlink goes through counts as a change of the file.
//!
//! A file written in place (`cat new > policy.yaml`, a template generator) is read when its
//! writer closes it, not at its first write: a generator that paused between two writes had
//! half a policy applied, its endpoint rules gone until the rest came. What the watches cannot
//! see (the folder itself replaced, a link into another folder) the poll of [`super::stamps`]
//! finds.

use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
use notify::{RecursiveMode, Watcher};
use std::ffi::OsString;
use std::path::{Component, Path};
use tokio::sync::mpsc;

/// What a file's watch sends the reload task.
#[derive(Debug, Clone, Copy)]
pub(super) struct Signals {
    /// The file was written: closed after writing, or renamed into place.
    pub written: &'static str,
    /// Only its permissions or owner changed.
    pub attributes: &'static str,
    /// It was created as a regular file, and its writer has not closed it yet.
    pub writing: &'static str,
}

/// Watches `path` (and, when it is a symlink, the name it goes through, and the file it leads
/// to in its own folder) for changes, and tells them by `signals`.
pub(super) fn file(
    path: &Path,
    signals: Signals,
    tx: mpsc::Sender<&'static str>,
) -> Option<notify::RecommendedWatcher> {
    let file_name = path.file_name()?.to_owned();
    let dir = folder_of(path).to_path_buf();
    let watched = path.to_path_buf();
    // A symlink into another folder (`/etc/rw.yaml -> /srv/rw/policy.yaml`): the target's
    // own folder is watched too, or a change written there in place would go unseen. Not for
    // a link through a symlinked name of its own folder (a ConfigMap's `..data`): its swaps
    // are seen on that name, and the folder it leads to is deleted after each.
    let through_link = link_head(path).is_some_and(|head| dir.join(head).is_symlink());
    let target = std::fs::canonicalize(path).ok().filter(|target| {
        !through_link && std::fs::canonicalize(&dir).ok().as_deref() != target.parent()
    });
    let target_dir = target
        .as_deref()
        .and_then(Path::parent)
        .map(Path::to_path_buf);
    let target_name = target
        .as_ref()
        .and_then(|t| t.file_name())
        .map(ToOwned::to_owned);
    let in_target = target_dir.clone();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        let Some(change) = change(&event) else {
            return;
        };
        // Read at each event: the file may become a symlink, or point elsewhere, later.
        let through = link_head(&watched);
        let ours = event.paths.iter().any(|p| {
            let Some(name) = p.file_name() else {
                return false;
            };
            match in_target.is_some() && p.parent() == in_target.as_deref() {
                true => target_name.as_deref() == Some(name),
                false => name == file_name || through.as_deref() == Some(name),
            }
        });
        if ours {
            let _ = tx.try_send(match change {
                Change::Written => signals.written,
                Change::Attributes => signals.attributes,
                Change::Writing => signals.writing,
            });
        }
    });
    let mut watcher = watch_folder(watcher, &dir, signals.written)?;
    if let Some(target_dir) = target_dir {
        if let Err(error) = watcher.watch(&target_dir, RecursiveMode::NonRecursive) {
            tracing::warn!(%error, dir = %target_dir.display(), "cannot watch the folder a symlink leads to; changes there are found within 4 s");
        }
    }
    Some(watcher)
}

/// Watches an envoyproxy/ratelimit folder for changes of its YAML files, or of a name one of
/// them is a symlink through.
pub(super) fn envoy_folder(
    dir: &Path,
    tx: mpsc::Sender<&'static str>,
) -> Option<notify::RecommendedWatcher> {
    let folder = dir.to_path_buf();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if !(change(&event) == Some(Change::Written) || event.kind.is_remove()) {
            return;
        }
        let yaml = |p: &Path| p.extension().is_some_and(|e| e == "yaml" || e == "yml");
        let ours = event.paths.iter().any(|p| {
            yaml(p)
                || p.file_name()
                    .is_some_and(|name| yaml_links_through(&folder, name))
        });
        if ours {
            let _ = tx.try_send(super::ENVOY_CHANGE);
        }
    });
    watch_folder(watcher, dir, super::ENVOY_CHANGE)
}

/// What an event tells of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Its writing is done: renamed into place (a symlink swapped, an editor's save), closed
    /// after writing, or created as a symlink or folder (which nobody writes).
    Written,
    /// Its permissions, owner or times changed (a `chmod` that lets a refused file be read).
    Attributes,
    /// A regular file created: it may be half-written, and its writer's close comes next. Not
    /// a reason to read it, but one for the poll to leave it to the watch. (Writes themselves,
    /// `Modify(Data)`, are not sent: a file written in place is the one read already, which
    /// the poll leaves alone, and a writer's many writes could crowd its close out of the
    /// channel.)
    Writing,
}

/// What `event` tells, if anything.
fn change(event: &notify::Event) -> Option<Change> {
    match event.kind {
        EventKind::Modify(ModifyKind::Name(_))
        | EventKind::Access(AccessKind::Close(AccessMode::Write)) => Some(Change::Written),
        EventKind::Modify(ModifyKind::Metadata(_)) => Some(Change::Attributes),
        EventKind::Create(_) => Some(
            match event
                .paths
                .iter()
                .any(|p| std::fs::symlink_metadata(p).is_ok_and(|m| !m.is_file()))
            {
                true => Change::Written,
                false => Change::Writing,
            },
        ),
        _ => None,
    }
}

fn watch_folder(
    watcher: notify::Result<notify::RecommendedWatcher>,
    dir: &Path,
    what: &'static str,
) -> Option<notify::RecommendedWatcher> {
    if !dir.is_dir() {
        // Only a model's folder can be missing (the policy and envoy files were just read):
        // the reload task looks for it.
        tracing::warn!(dir = %dir.display(), what, "the folder does not exist yet; looking for it every 2 s");
        return None;
    }
    let mut watcher = watcher
        .map_err(|error| tracing::warn!(%error, what, "cannot watch; reload with SIGHUP"))
        .ok()?;
    watcher
        .watch(dir, RecursiveMode::NonRecursive)
        .map_err(|error| tracing::warn!(%error, dir = %dir.display(), "cannot watch a folder; reload with SIGHUP"))
        .ok()?;
    Some(watcher)
}

pub(super) fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The first name of a symlink's relative target within its own folder (`..data` for a link
/// to `..data/policy.yaml`); `None` for anything else.
fn link_head(path: &Path) -> Option<OsString> {
    let target = std::fs::read_link(path).ok()?;
    match target.components().next()? {
        Component::Normal(head) => Some(head.to_owned()),
        _ => None,
    }
}

/// Whether a YAML file of `dir` is a symlink through `name`.
fn yaml_links_through(dir: &Path, name: &std::ffi::OsStr) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let path = entry.path();
        path.extension().is_some_and(|e| e == "yaml" || e == "yml")
            && link_head(&path).as_deref() == Some(name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_configmap_style_link_is_followed_through_its_first_name() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("..2026_11_24_v1");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("policy.yaml"), "x").unwrap();
        std::os::unix::fs::symlink("..2026_11_24_v1", dir.path().join("..data")).unwrap();
        let policy = dir.path().join("policy.yaml");
        std::os::unix::fs::symlink("..data/policy.yaml", &policy).unwrap();
        assert_eq!(link_head(&policy), Some(OsString::from("..data")));
        assert!(yaml_links_through(
            dir.path(),
            std::ffi::OsStr::new("..data")
        ));
        assert!(!yaml_links_through(
            dir.path(),
            std::ffi::OsStr::new("other")
        ));
        let plain = dir.path().join("plain.yaml");
        std::fs::write(&plain, "x").unwrap();
        assert_eq!(link_head(&plain), None);
    }
}
