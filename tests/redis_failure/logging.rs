//! What the daemon logs about the store: the start-up line (the store without its password, the
//! model, the load source, the admin API) and one line when an outage begins and one when it ends.

use crate::client::{check, wait_ready};
use crate::common;
use crate::common::daemon::Daemon;
use crate::common::redis::RedisServer;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// A policy on `url` with `on_error: allow`, the shipped model (so that the control loop keeps
/// fleet state in Redis too) and a 200 ms control cycle.
fn write_fleet_policy(dir: &Path, url: &str) -> PathBuf {
    let path = dir.join("policy-fleet.yaml");
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/models/abuse.json");
    let yaml = format!(
        "store: {{ url: \"{url}\", on_error: allow, timeout: 100ms }}
default_tier: free
tiers:
  free:
    adaptive: false
    limits: [ {{ name: daily, algorithm: sliding_window, requests: 1000000, window: 1d }} ]
adaptive:
  interval: 200ms
  anomaly: {{ model: \"{model}\" }}
"
    );
    std::fs::write(&path, yaml).unwrap();
    path
}

/// The lines of `log` that contain `needle`.
fn lines_with<'a>(log: &'a [String], needle: &str) -> Vec<&'a String> {
    log.iter().filter(|l| l.contains(needle)).collect()
}

/// The start-up line names the store by scheme and host (never its password), `on_error`, the
/// model and its version, where the load factor comes from, and whether the admin API is on.
#[test]
fn the_start_up_line_tells_what_the_daemon_runs_with() {
    let port = common::redis::free_port();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redis://:s3cret@127.0.0.1:{port}/3");
    let mut daemon = Daemon::start(
        &write_fleet_policy(dir.path(), &url),
        &[("RATEWARDEN_ADMIN_TOKEN", "admin")],
    );
    let line = daemon.wait_for(" starting ", Duration::from_secs(5));
    let model: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/models/abuse.json"))
            .unwrap(),
    )
    .unwrap();
    let version = model["version"].as_str().unwrap();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/models/abuse.json");
    for field in [
        format!("store=redis://127.0.0.1:{port} "),
        "on_error=allow ".to_owned(),
        format!("model={path} "),
        format!("model_version={version} "),
        "load_source=pinned by --pin-load-factor load_factor=1 ".to_owned(),
        "load_high=0.8 load_high_factor=0.5 load_low=0.3 load_low_factor=1.5 ".to_owned(),
        "admin_api=on".to_owned(),
    ] {
        assert!(line.contains(&field), "{field:?} is not in {line}");
    }
    assert!(line.contains(" INFO "), "{line}");
    // The listening line names the store as the starting line does.
    let line = daemon.wait_for("ratewarden listening", Duration::from_secs(5));
    assert!(
        line.ends_with(&format!("store=redis://127.0.0.1:{port}")),
        "{line}"
    );
    // Decisions while the store is down: the password shows in no line about them either.
    let _ = check(daemon.addr, "alice", "/misc");
    sleep(Duration::from_millis(500));
    let log = daemon.drain_log().to_vec();
    assert!(lines_with(&log, "s3cret").is_empty(), "{log:#?}");
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

/// An outage is told once when it begins (whichever of the request path and the control loop
/// sees it first) and once when it ends, with its length and how decisions were answered; the
/// control loop's failing cycles in between log nothing.
#[test]
fn a_store_outage_is_logged_once_when_it_begins_and_once_when_it_ends() {
    let mut redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = Daemon::start(&write_fleet_policy(dir.path(), &redis.url()), &[]);
    let addr = daemon.addr;
    wait_ready(addr);
    daemon.wait_for("model loaded", Duration::from_secs(5));
    let answer = check(addr, "alice", "/misc");
    assert_eq!(answer.json()["degraded"], json!(false), "{}", answer.text);
    sleep(Duration::from_millis(500));
    let before = daemon.drain_log().len();

    redis.kill();
    let down = Instant::now();
    for _ in 0..8 {
        let answer = check(addr, "alice", "/misc");
        assert_eq!(answer.json()["degraded"], json!(true), "{}", answer.text);
    }
    // Some ten failing control cycles.
    sleep(Duration::from_millis(2000));
    let log = daemon.drain_log()[before..].to_vec();
    let began = lines_with(&log, "store outage began");
    assert_eq!(began.len(), 1, "{log:#?}");
    assert!(began[0].contains(" WARN "), "{}", began[0]);
    // A decision or a control cycle may meet the failure first; each says what follows.
    assert!(
        began[0].contains("decisions follow store.on_error (allow) until the store answers again")
            || began[0].contains(
                "decisions that meet a failure follow store.on_error; scoring and load sharing \
                 wait for the store"
            ),
        "{}",
        began[0]
    );
    let warnings = lines_with(&log, " WARN ");
    assert_eq!(
        warnings.len(),
        1,
        "one warning for the whole outage: {log:#?}"
    );

    redis.restart();
    let ended = daemon.wait_for("store outage ended", Duration::from_secs(5));
    let lasted = down.elapsed().as_secs_f64();
    assert!(ended.contains(" INFO "), "{ended}");
    assert!(
        ended.contains(
            "; meanwhile 8 decisions were allowed without the store, 0 denied and 0 decided by \
             the local limiter"
        ),
        "{ended}"
    );
    let logged: f64 = ended
        .split("store outage ended after ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|secs| secs.parse().ok())
        .unwrap_or_else(|| panic!("no length in {ended}"));
    assert!(
        (2.0..=lasted + 0.1).contains(&logged),
        "{logged} s of {lasted} s: {ended}"
    );
    let answer = check(addr, "alice", "/misc");
    assert_eq!(answer.json()["degraded"], json!(false), "{}", answer.text);
    sleep(Duration::from_millis(500));
    let log = daemon.drain_log()[before..].to_vec();
    assert_eq!(lines_with(&log, "store outage").len(), 2, "{log:#?}");
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

/// An ACL that refuses only `RPUSH` fails the control loop's activity upload in every cycle
/// with activity, while decisions, the lease and the reads work: with traffic now and then,
/// that is one outage, not one per burst, until the upload works again.
#[test]
fn a_control_loop_refused_its_upload_between_sparse_requests_is_one_outage() {
    let redis = RedisServer::start();
    redis.add_user("rw", "secret");
    let reply = redis.cli(&["ACL", "SETUSER", "rw", "-rpush"]);
    assert_eq!(reply.trim(), "OK", "{reply}");
    let url = redis.url().replace("redis://", "redis://rw:secret@");
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = Daemon::start(&write_fleet_policy(dir.path(), &url), &[]);
    let addr = daemon.addr;
    wait_ready(addr);
    // A request every 2 s: idle control cycles (200 ms) between them make no upload.
    for _ in 0..4 {
        let answer = check(addr, "alice", "/misc");
        assert_eq!(answer.json()["degraded"], json!(false), "{}", answer.text);
        sleep(Duration::from_millis(2000));
    }
    let log = daemon.drain_log().to_vec();
    assert_eq!(lines_with(&log, "store outage began").len(), 1, "{log:#?}");
    assert!(
        lines_with(&log, "store outage ended").is_empty(),
        "{log:#?}"
    );

    let reply = redis.cli(&["ACL", "SETUSER", "rw", "+rpush"]);
    assert_eq!(reply.trim(), "OK", "{reply}");
    check(addr, "alice", "/misc");
    daemon.wait_for("store outage ended", Duration::from_secs(5));
}
