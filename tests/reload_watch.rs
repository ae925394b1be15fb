//! The real binary follows its policy file the ways deployments change it: written in place
//! by a slow writer (read once it is closed, never half-way), and in a folder swapped for
//! another (a release directory behind a symlink), which no folder watch sees.

mod common;

use common::daemon::Daemon;
use std::io::Write;
use std::time::Duration;

const SHIPPED: &str = include_str!("../ratewarden.yaml");

#[test]
fn a_policy_written_in_place_is_read_once_its_writer_closes_it() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, SHIPPED).unwrap();
    let mut daemon = Daemon::start(&policy, &[]);

    // A generator that pauses half-way: the first half alone is a valid policy without the
    // endpoint rules, which must not be applied.
    let edited = SHIPPED.replace("requests: 100,", "requests: 150,");
    let half = edited.find("endpoints:").unwrap();
    let mut file = std::fs::File::create(&policy).unwrap();
    file.write_all(&edited.as_bytes()[..half]).unwrap();
    file.flush().unwrap();
    std::thread::sleep(Duration::from_millis(700));
    file.write_all(&edited.as_bytes()[half..]).unwrap();
    drop(file);

    daemon.wait_for("policy reloaded", Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(300));
    let log = daemon.drain_log();
    let reloads = log.iter().filter(|l| l.contains("policy reloaded")).count();
    assert_eq!(reloads, 1, "{log:#?}");
    assert!(
        !log.iter().any(|l| l.contains("policy refused")),
        "{log:#?}"
    );
    let (status, _, body) =
        daemon.post_json("/v1/check", r#"{"user":"ann","endpoint":"/sms/send"}"#);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"endpoint:/sms/send/sms\""), "{body}");
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

/// `current` links to `releases/1`; a deployment writes `releases/2` and swaps the link, so the
/// folder the daemon watches (`releases/1`) never changes.
#[cfg(unix)]
#[test]
fn a_policy_in_a_release_folder_swapped_in_is_reloaded() {
    let dir = tempfile::tempdir().unwrap();
    let release = |n: u32, text: &str| {
        let folder = dir.path().join(format!("releases/{n}"));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("policy.yaml"), text).unwrap();
    };
    release(1, SHIPPED);
    std::os::unix::fs::symlink("releases/1", dir.path().join("current")).unwrap();
    let mut daemon = Daemon::start(&dir.path().join("current/policy.yaml"), &[]);
    daemon.wait_for("ratewarden listening", Duration::from_secs(1));

    release(2, &SHIPPED.replace("requests: 100,", "requests: 150,"));
    std::os::unix::fs::symlink("releases/2", dir.path().join("current.new")).unwrap();
    std::fs::rename(dir.path().join("current.new"), dir.path().join("current")).unwrap();
    let line = daemon.wait_for("policy reloaded", Duration::from_secs(10));
    assert!(line.contains("trigger=\"file change\""), "{line}");
    assert!(daemon.stop(Duration::from_secs(10)).success());
}
