//! What the policy and model files were when last read, compared every couple of seconds:
//! the reload trigger of last resort, for changes the folder watches cannot see.
//!
//! A watch is on a folder as it was when the watch was made: a folder renamed or replaced (a
//! release directory swapped in, `mv conf conf.old && mv conf.new conf`) puts another file
//! behind the path with no event here. So each poll compares the file the path leads to
//! (device and inode, through symlinks) with the one read last; another file, the same for a
//! whole poll, triggers a reload (and the watches are made again, on the folder now there).
//! Only a new file counts: one written in place keeps its inode, and is read when its writer
//! closes it (the watch's event), never half-way because a writer paused. A new file the watch
//! saw created is left to the watch too, however long its writer pauses: the poll is for what
//! no watch sees. A read that failed
//! for want of file descriptors or memory is tried again a poll later, any other failed read
//! once a minute: a file that cannot be read does not flood the log with its refusal.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

/// How long after a failed read (other than a transient one) the file is tried again.
const RETRY_FAILED_READ: Duration = Duration::from_secs(60);

/// A file's identity: its device and inode (a file renamed over it is another file), size and
/// modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    device: u64,
    inode: u64,
    len: u64,
    modified: Option<SystemTime>,
}

/// Whether `a` and `b` are the same file, whatever was written to it since.
fn same_file(a: Option<Identity>, b: Option<Identity>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a.device, a.inode) == (b.device, b.inode),
        _ => false,
    }
}

impl Identity {
    fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let (device, inode) = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let (device, inode) = (0, 0);
        Some(Identity {
            device,
            inode,
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }
}

/// A folder's device and inode, through symlinks: another folder renamed or linked to its
/// path has others (the envoy folder's watch is on the folder that was there).
pub(super) fn folder_identity(path: &Path) -> Option<(u64, u64)> {
    Identity::of(path).map(|id| (id.device, id.inode))
}

/// One watched file's identities: at the last poll, and when it was last read.
#[derive(Debug)]
pub(super) struct Stamp {
    path: Option<PathBuf>,
    polled: Option<Identity>,
    read: Option<Identity>,
    /// The file the folder watches were made for.
    watched: Option<Identity>,
    /// After a failed read: when to try the file again.
    retry_at: Option<Instant>,
    /// A file the watch saw being written, whose writer's close the watch reports.
    writing: Option<Identity>,
}

impl Stamp {
    /// A file just read (at start-up, or `None`: no file to watch).
    pub(super) fn new(path: Option<&Path>) -> Self {
        let read = path.and_then(Identity::of);
        Stamp {
            path: path.map(Path::to_path_buf),
            polled: read,
            read,
            watched: read,
            retry_at: None,
            writing: None,
        }
    }

    /// Follows another file (a reload named another model), taken as read.
    pub(super) fn follow(&mut self, path: Option<&Path>) {
        if self.path.as_deref() != path {
            *self = Stamp::new(path);
        }
    }

    /// The file is about to be read: what it is now is what will have been read.
    pub(super) fn reading(&mut self) {
        self.read = self.path.as_deref().and_then(Identity::of);
        self.retry_at = None;
        self.writing = None;
    }

    /// The watch saw the file behind the path created, not yet closed: the watch, not the
    /// poll, reads it (when its writer closes it).
    pub(super) fn being_written(&mut self) {
        self.writing = self.path.as_deref().and_then(Identity::of);
    }

    /// Whether the last read failed (a change of the file's permissions may let it be read).
    pub(super) fn read_failed_last(&self) -> bool {
        self.retry_at.is_some()
    }

    /// True once when the path leads to another file than the one the watches were made for
    /// (a reload read it, or the poll will): they are to be made again, on its folder.
    pub(super) fn moved_from_watch(&mut self) -> bool {
        let Some(path) = self.path.as_deref() else {
            return false;
        };
        let current = Identity::of(path);
        if current.is_none() || same_file(current, self.watched) {
            return false;
        }
        self.watched = current;
        true
    }

    /// The file was refused: when it cannot be opened now, the read failed rather than its
    /// contents, and it is tried again (see [`Stamp::read_failed`]). A file refused for what
    /// it says waits for its next change.
    pub(super) fn read_failed_if_unreadable(&mut self, now: Instant) {
        let Some(path) = self.path.as_deref() else {
            return;
        };
        if let Err(error) = std::fs::File::open(path) {
            self.read_failed(transient(&error), now);
        }
    }

    /// The read failed: `transient` (out of file descriptors or memory) is tried at the next
    /// poll, anything else a minute later.
    pub(super) fn read_failed(&mut self, transient: bool, now: Instant) {
        self.read = None;
        self.retry_at = Some(match transient {
            true => now,
            false => now + RETRY_FAILED_READ,
        });
    }

    /// Polls the file: true when the path leads to another file than the one read (or to one
    /// whose read failed), unchanged since the last poll (a missing file is no change: the
    /// loaded one stays in force).
    pub(super) fn settled_change(&mut self, now: Instant) -> bool {
        let Some(path) = self.path.as_deref() else {
            return false;
        };
        let current = Identity::of(path);
        let settled = current.is_some() && current == self.polled;
        self.polled = current;
        settled
            && !same_file(current, self.read)
            && !same_file(current, self.writing)
            && self.retry_at.is_none_or(|at| now >= at)
    }
}

/// The policy's and the model's stamps, shared by every way a reload starts (file change,
/// SIGHUP, the admin API), so a file one of them read is not read again by the poll.
#[derive(Debug)]
pub(super) struct Stamps {
    pub(super) policy: Stamp,
    pub(super) model: Stamp,
}

/// Whether a read error is worth trying again at once: the process or the system ran out of
/// file descriptors, or memory.
pub(super) fn transient(error: &std::io::Error) -> bool {
    const ENFILE: i32 = 23;
    const EMFILE: i32 = 24;
    error.kind() == std::io::ErrorKind::OutOfMemory
        || matches!(error.raw_os_error(), Some(ENFILE | EMFILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_file_triggers_once_it_has_settled_for_a_poll() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.yaml");
        std::fs::write(&path, "a").unwrap();
        let now = Instant::now();
        let mut stamp = Stamp::new(Some(&path));
        assert!(!stamp.settled_change(now), "unchanged");
        std::fs::write(&path, "ab").unwrap();
        assert!(
            !stamp.settled_change(now) && !stamp.settled_change(now),
            "written in place: the watch reads it when its writer closes it"
        );
        let new = dir.path().join("new.yaml");
        std::fs::write(&new, "abc").unwrap();
        std::fs::rename(&new, &path).unwrap();
        assert!(!stamp.settled_change(now), "just renamed: wait a poll");
        assert!(
            stamp.settled_change(now),
            "another file, the same a poll later"
        );
        stamp.reading();
        assert!(!stamp.settled_change(now), "read");
        std::fs::remove_file(&path).unwrap();
        assert!(
            !stamp.settled_change(now) && !stamp.settled_change(now),
            "gone"
        );
    }

    #[test]
    fn a_new_file_the_watch_saw_being_written_is_left_to_the_watch() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.yaml");
        std::fs::write(&path, "a").unwrap();
        let now = Instant::now();
        let mut stamp = Stamp::new(Some(&path));
        // `rm policy.yaml && generate > policy.yaml`, the generator pausing for polls.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "half").unwrap();
        stamp.being_written();
        for _ in 0..3 {
            assert!(!stamp.settled_change(now), "its writer has not closed it");
        }
        stamp.reading();
        assert!(!stamp.settled_change(now), "read at the close");
        // Another file behind the path that no watch saw (a folder swapped): the poll reads it.
        let new = dir.path().join("new.yaml");
        std::fs::write(&new, "whole").unwrap();
        std::fs::rename(&new, &path).unwrap();
        assert!(!stamp.settled_change(now));
        assert!(stamp.settled_change(now));
    }

    #[test]
    fn a_file_renamed_over_it_is_a_change_even_with_the_same_size_and_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.yaml");
        std::fs::write(&path, "a").unwrap();
        let mut stamp = Stamp::new(Some(&path));
        let other = dir.path().join("new.yaml");
        std::fs::write(&other, "b").unwrap();
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::File::options()
            .write(true)
            .open(&other)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        std::fs::rename(&other, &path).unwrap();
        let now = Instant::now();
        stamp.settled_change(now);
        assert!(stamp.settled_change(now));
    }

    #[test]
    fn a_failed_read_is_tried_again_at_once_only_when_transient() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.yaml");
        std::fs::write(&path, "a").unwrap();
        let now = Instant::now();
        let mut stamp = Stamp::new(Some(&path));
        stamp.reading();
        stamp.read_failed(true, now);
        assert!(stamp.settled_change(now));
        stamp.reading();
        stamp.read_failed(false, now);
        assert!(!stamp.settled_change(now + Duration::from_secs(59)));
        assert!(stamp.settled_change(now + RETRY_FAILED_READ));
        assert!(transient(&std::io::Error::from_raw_os_error(24)));
        assert!(!transient(&std::io::Error::from(
            std::io::ErrorKind::PermissionDenied
        )));
    }
}
