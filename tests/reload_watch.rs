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
    // Longer than a poll of the files (2 s): a file written in place is not read by it.
    std::thread::sleep(Duration::from_millis(4500));
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

/// `rm policy.yaml && generate > policy.yaml` (or `install`): the file is created, then written
/// slowly, and read once, when its writer closes it.
#[test]
fn a_policy_created_anew_by_a_slow_writer_is_read_once_it_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, SHIPPED).unwrap();
    let mut daemon = Daemon::start(&policy, &[]);
    // The old file kept by another name, so the new one cannot reuse its inode (as it often
    // does on a quiet file system) and is another file to the daemon's poll.
    std::fs::hard_link(&policy, dir.path().join("policy.yaml.bak")).unwrap();
    std::fs::remove_file(&policy).unwrap();
    let edited = SHIPPED.replace("requests: 100,", "requests: 150,");
    let half = edited.find("endpoints:").unwrap();
    let mut file = std::fs::File::create(&policy).unwrap();
    file.write_all(&edited.as_bytes()[..half]).unwrap();
    file.flush().unwrap();
    // Over two polls of the files (2 s each): another file behind the path, unchanged for a
    // whole poll, is what a swapped folder looks like, but the watch saw this one created.
    std::thread::sleep(Duration::from_millis(4500));
    file.write_all(&edited.as_bytes()[half..]).unwrap();
    drop(file);
    assert_eq!(reloads_once_settled(&mut daemon, 1), 1);
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
    // Once, and the folder now behind the path is the one watched: an edit there is seen.
    std::thread::sleep(Duration::from_millis(4500));
    assert_eq!(reloads(&mut daemon), 1);
    let release_2 = dir.path().join("releases/2/policy.yaml");
    std::fs::write(
        &release_2,
        SHIPPED.replace("requests: 100,", "requests: 160,"),
    )
    .unwrap();
    assert_eq!(reloads_once_settled(&mut daemon, 2), 2);
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

/// A reload through the admin API right after a swap reads the new file: the 2-second check
/// must not read it again (a second reload would undo thresholds set since), but the watch
/// must move to the new folder.
#[cfg(unix)]
#[test]
fn a_swap_reloaded_through_the_admin_api_is_not_reloaded_again() {
    let dir = tempfile::tempdir().unwrap();
    // No model: the admin API's answer is then the policy's alone.
    let shipped = SHIPPED.replace("model: models/abuse.json", "model: null");
    let conf = dir.path().join("conf");
    std::fs::create_dir(&conf).unwrap();
    std::fs::write(conf.join("policy.yaml"), &shipped).unwrap();
    let token = "a long enough admin token";
    let env = [("RATEWARDEN_ADMIN_TOKEN", token)];
    let mut daemon = Daemon::start(&conf.join("policy.yaml"), &env);
    let new = dir.path().join("conf.new");
    std::fs::create_dir(&new).unwrap();
    std::fs::write(
        new.join("policy.yaml"),
        shipped.replace("requests: 100,", "requests: 150,"),
    )
    .unwrap();
    std::fs::rename(&conf, dir.path().join("conf.old")).unwrap();
    std::fs::rename(&new, &conf).unwrap();
    let bearer = format!("Bearer {token}");
    let (status, _, body) = daemon.request(
        "POST",
        "/v1/admin/reload",
        &[("Authorization", &bearer)],
        "",
    );
    assert_eq!(status, 200, "{body}");
    std::thread::sleep(Duration::from_millis(4500));
    assert_eq!(reloads(&mut daemon), 1);
    // The watch moved to the folder now behind the path: an edit there is seen...
    let policy = conf.join("policy.yaml");
    std::fs::write(&policy, shipped.replace("requests: 100,", "requests: 170,")).unwrap();
    assert_eq!(reloads_once_settled(&mut daemon, 2), 2);
    // ...and new permissions of a file read fine are no reason to read it again (a reload
    // resets thresholds set through the admin API).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&policy, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(reloads(&mut daemon), 2);
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

/// `etc/policy.yaml` links into another folder: an edit written in place there is seen.
#[cfg(unix)]
#[test]
fn a_policy_linked_from_another_folder_is_reloaded_when_written_there() {
    let dir = tempfile::tempdir().unwrap();
    let (etc, srv) = (dir.path().join("etc"), dir.path().join("srv"));
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::create_dir_all(&srv).unwrap();
    std::fs::write(srv.join("policy.yaml"), SHIPPED).unwrap();
    std::os::unix::fs::symlink(srv.join("policy.yaml"), etc.join("policy.yaml")).unwrap();
    let mut daemon = Daemon::start(&etc.join("policy.yaml"), &[]);
    daemon.wait_for("ratewarden listening", Duration::from_secs(1));
    std::fs::write(
        srv.join("policy.yaml"),
        SHIPPED.replace("requests: 100,", "requests: 150,"),
    )
    .unwrap();
    assert_eq!(reloads_once_settled(&mut daemon, 1), 1);
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

/// The "policy reloaded" lines so far.
fn reloads(daemon: &mut Daemon) -> usize {
    let log = daemon.drain_log();
    log.iter().filter(|l| l.contains("policy reloaded")).count()
}

/// The "policy reloaded" lines once there are at least `expected` (or 30 s passed) and 1.5 s
/// more went by, time for a second read to show: a slow machine delays a reload, and the
/// count is taken only after it.
fn reloads_once_settled(daemon: &mut Daemon, expected: usize) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while reloads(daemon) < expected && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1500));
    reloads(daemon)
}
