//! The real binary: starts with the shipped policy, reloads on SIGHUP and on file change
//! (refusing a broken file and keeping the old policy), and stops gracefully on SIGTERM.

mod common;

use common::daemon::Daemon;
use std::path::Path;
use std::time::{Duration, Instant};

const SHIPPED: &str = include_str!("../ratewarden.yaml");

#[test]
fn serves_the_shipped_policy_and_stops_on_sigterm() {
    let mut daemon = Daemon::start(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/ratewarden.yaml")),
        &[],
    );
    assert_eq!(daemon.get("/healthz").0, 200);
    daemon.wait_for("ratewarden listening", Duration::from_secs(1));
    let started = Instant::now();
    let status = daemon.stop(Duration::from_secs(10));
    assert!(status.success(), "{status}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn sighup_and_file_changes_reload_and_a_broken_file_keeps_the_old_policy() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, SHIPPED).unwrap();
    let mut daemon = Daemon::start(&policy, &[]);

    // A broken file is refused with every error, and the daemon keeps serving.
    let broken = SHIPPED.replace("requests: 100,", "requests: 0,");
    assert_ne!(broken, SHIPPED);
    std::fs::write(&policy, &broken).unwrap();
    daemon.wait_for(
        "policy refused: tiers.free.limits[0].requests: must be at least 1",
        Duration::from_secs(10),
    );
    assert_eq!(daemon.get("/healthz").0, 200);

    // A good edit is picked up from the file change...
    std::fs::write(&policy, SHIPPED.replace("requests: 100,", "requests: 150,")).unwrap();
    daemon.wait_for("trigger=\"file change\"", Duration::from_secs(10));
    daemon.wait_for("policy reloaded", Duration::from_secs(10));

    // ...and SIGHUP reloads too.
    daemon.signal("HUP");
    daemon.wait_for("trigger=\"SIGHUP\"", Duration::from_secs(10));
    assert!(daemon.stop(Duration::from_secs(10)).success());
}
