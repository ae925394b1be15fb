//! The real binary: starts with the shipped policy, reloads on SIGHUP and on file change
//! (refusing a broken file and keeping the old policy, which `ratewarden_policy_file_refused`
//! says), tells what a reload changes in plain words, and stops gracefully on SIGTERM.

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
    assert_eq!(refused_gauge(&daemon), "0");
    std::fs::write(&policy, &broken).unwrap();
    daemon.wait_for(
        "policy refused: tiers.free.limits[0].requests: must be at least 1",
        Duration::from_secs(10),
    );
    assert_eq!(daemon.get("/healthz").0, 200);
    assert_eq!(refused_gauge(&daemon), "1", "an older policy is in force");

    // A good edit is picked up from the file change...
    std::fs::write(&policy, SHIPPED.replace("requests: 100,", "requests: 150,")).unwrap();
    daemon.wait_for("trigger=\"file change\"", Duration::from_secs(10));
    daemon.wait_for("policy reloaded", Duration::from_secs(10));
    assert_eq!(refused_gauge(&daemon), "0");

    // ...and SIGHUP reloads too.
    daemon.signal("HUP");
    daemon.wait_for("trigger=\"SIGHUP\"", Duration::from_secs(10));
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

/// A ConfigMap volume: `policy.yaml` links to `..data/policy.yaml`, and an update writes a new
/// folder and swaps the `..data` link to it, as Kubernetes' atomic writer does.
#[cfg(unix)]
#[test]
fn a_configmap_update_swapping_the_data_link_reloads_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let version = |name: &str, text: &str| {
        let folder = dir.path().join(name);
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(folder.join("policy.yaml"), text).unwrap();
    };
    version("..v1", SHIPPED);
    std::os::unix::fs::symlink("..v1", dir.path().join("..data")).unwrap();
    let policy = dir.path().join("policy.yaml");
    std::os::unix::fs::symlink("..data/policy.yaml", &policy).unwrap();
    let mut daemon = Daemon::start(&policy, &[]);
    daemon.wait_for("ratewarden listening", Duration::from_secs(20));

    version("..v2", &SHIPPED.replace("requests: 100,", "requests: 150,"));
    std::os::unix::fs::symlink("..v2", dir.path().join("..data_tmp")).unwrap();
    std::fs::rename(dir.path().join("..data_tmp"), dir.path().join("..data")).unwrap();
    daemon.wait_for("trigger=\"file change\"", Duration::from_secs(10));
    daemon.wait_for("policy reloaded", Duration::from_secs(10));
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

/// A daemon whose log reader went away (a restarted `| logger`) loses its lines, not its
/// tasks: reloads still run and SIGTERM still exits 0. Writing a line used to panic the task
/// that logged it.
#[test]
fn a_daemon_whose_log_reader_went_away_keeps_working() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, SHIPPED).unwrap();
    let mut daemon = Daemon::start(&policy, &[]);
    daemon.close_log();
    // The first reload's line closes the pipe; the next ones write into a closed one.
    for reloads in 1..=3 {
        daemon.signal("HUP");
        let deadline = Instant::now() + Duration::from_secs(10);
        while policy_reloads(&daemon) < reloads {
            assert!(Instant::now() < deadline, "reload {reloads} never ran");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    assert_eq!(check(&daemon, "ann").0, 200);
    let status = daemon.stop(Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{status}");
}

/// Successful policy reloads so far.
fn policy_reloads(daemon: &Daemon) -> u64 {
    let (_, text) = daemon.get("/metrics");
    text.lines()
        .find_map(|l| {
            l.strip_prefix("ratewarden_config_reloads_total{kind=\"policy\",result=\"success\"} ")
        })
        .map_or(0, |n| n.trim().parse().unwrap())
}

/// The value of `ratewarden_policy_file_refused`.
fn refused_gauge(daemon: &Daemon) -> String {
    let (status, text) = daemon.get("/metrics");
    assert_eq!(status, 200);
    text.lines()
        .find_map(|l| l.strip_prefix("ratewarden_policy_file_refused "))
        .unwrap_or_else(|| panic!("no ratewarden_policy_file_refused in:\n{text}"))
        .to_owned()
}

/// A decision of `/v1/check` for `user`: (status, body).
fn check(daemon: &Daemon, user: &str) -> (u16, String) {
    let body = format!(r#"{{"user":"{user}","endpoint":"/misc"}}"#);
    let (status, _, text) = daemon.post_json("/v1/check", &body);
    (status, text)
}

/// A policy on a Redis port nothing listens on: every decision follows `on_error`.
fn store_down_policy(port: u16, on_error: &str, timeout: &str) -> String {
    format!(
        "store: {{ url: \"redis://:s3cret@127.0.0.1:{port}/0\", on_error: {on_error}, timeout: {timeout} }}
default_tier: free
tiers: {{ free: {{ limits: [ {{ name: hourly, algorithm: sliding_window, requests: 100, window: 1h }} ] }} }}
adaptive: {{ anomaly: {{ threshold: 0.8 }} }}
"
    )
}

/// `store.on_error` is in force from the reload on, and said to be; a setting the store was
/// opened with is said to wait for a restart; values set through the admin API that the file's
/// replace are named with both values.
#[test]
fn a_reload_says_what_it_changes_and_on_error_applies_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(&policy, store_down_policy(port, "allow", "50ms")).unwrap();
    // As a secret file gives it, with a newline: the token is "admin".
    let mut daemon = Daemon::start(&policy, &[("RATEWARDEN_ADMIN_TOKEN", "admin\n")]);
    let (status, body) = check(&daemon, "alice");
    assert_eq!(status, 200, "on_error: allow: {body}");

    let auth = ("Authorization", "Bearer admin");
    let json = ("Content-Type", "application/json");
    let set = r#"{"anomaly_threshold": 0.6, "load_factor_override": 0.5}"#;
    let (status, _, body) = daemon.request("PUT", "/v1/admin/thresholds", &[auth, json], set);
    assert_eq!(status, 200, "{body}");
    // The same values again: audited, but not as a change.
    let (status, _, body) = daemon.request("PUT", "/v1/admin/thresholds", &[auth, json], set);
    assert_eq!(status, 200, "{body}");
    let guess = ("Authorization", "Bearer admin2");
    let (status, _, _) = daemon.request("PUT", "/v1/admin/thresholds", &[guess, json], set);
    assert_eq!(status, 401);
    // The route is logged, not the path and its raw user id.
    let (status, _, _) = daemon.request("GET", "/v1/admin/subjects/+15551234567", &[guess], "");
    assert_eq!(status, 401);

    // A new password too: the location stays, and the password is never logged.
    let rotated = store_down_policy(port, "deny", "80ms").replace("s3cret", "n3wpass");
    std::fs::write(&policy, rotated).unwrap();
    daemon.signal("HUP");
    daemon.wait_for("policy reloaded", Duration::from_secs(10));
    let (status, body) = check(&daemon, "alice");
    assert_eq!(status, 503, "on_error: deny is in force at once: {body}");

    let log = daemon.drain_log().join("\n");
    assert!(!log.contains("n3wpass") && !log.contains("s3cret"), "{log}");
    assert!(!log.contains("15551234567"), "{log}");
    let rotated = format!(
        "WARN ratewarden::reload::changes: store.url changed its credentials or database for \
         redis://127.0.0.1:{port}; it takes effect at the next restart (the store in use stays)"
    );
    assert!(log.contains(&rotated), "{log}");
    for line in [
        "WARN ratewarden::daemon: the admin token is under 16 bytes: whoever reaches the HTTP \
         port may guess it; use a random one (openssl rand -hex 32)",
        "INFO audit: admin changed the thresholds action=\"set_thresholds\" anomaly_threshold=",
        "INFO audit: admin set the thresholds to the values they had: nothing changed \
         action=\"set_thresholds\" anomaly_threshold=0.6",
        "WARN audit: admin request refused: wrong admin token method=PUT \
         path=\"/v1/admin/thresholds\"",
        "WARN audit: admin request refused: wrong admin token method=GET \
         path=\"/v1/admin/subjects/{user}\"",
        "INFO ratewarden::reload::changes: store.on_error changed from allow to deny; in force now",
        "WARN ratewarden::reload::changes: store.timeout changed from 50ms to 80ms; it takes \
         effect at the next restart (the store in use stays)",
        "WARN ratewarden::reload::changes: the reload replaced a value set through the admin \
         API: adaptive.anomaly.threshold was 0.6, now 0.8 from the policy file",
        "WARN ratewarden::reload::changes: the reload replaced a value set through the admin \
         API: adaptive.load.factor_override was 0.5, now none from the policy file",
    ] {
        assert!(log.contains(line), "no {line:?} in:\n{log}");
    }
    assert!(
        !log.contains("store.on_error changed from allow to deny; it takes"),
        "{log}"
    );
    // Its hosts did not change: no "from X to X".
    assert!(!log.contains("store.url changed from"), "{log}");
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

/// Every metric name (`ratewarden_...`) a dashboard or alert rule of `dashboards/` queries.
fn dashboard_metric_names() -> std::collections::BTreeSet<String> {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/dashboards"));
    let mut names = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let queried = path.extension().is_some_and(|e| e == "json")
            || path.file_name().is_some_and(|n| n == "alerts.yml");
        if !queried {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (at, _) in text.match_indices("ratewarden_") {
            let name: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            names.insert(name);
        }
    }
    names
}

#[test]
fn a_fresh_daemon_exports_every_series_the_dashboards_query() {
    let queried = dashboard_metric_names();
    assert!(
        queried.contains("ratewarden_store_errors_total")
            && queried.contains("ratewarden_tier_cache_requests_total"),
        "{queried:?}"
    );
    let daemon = Daemon::start(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/ratewarden.yaml")),
        &[],
    );
    let (status, text) = daemon.get("/metrics");
    assert_eq!(status, 200);
    let exported: std::collections::BTreeSet<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap())
        .collect();
    let missing: Vec<&String> = queried
        .iter()
        .filter(|name| !exported.contains(name.as_str()))
        .collect();
    assert!(missing.is_empty(), "missing {missing:?} in:\n{text}");
    // The finite label sets, each at 0 before any request.
    for series in [
        r#"ratewarden_store_errors_total{action="local",store="memory"} 0"#,
        r#"ratewarden_store_errors_total{action="allowed",store="memory"} 0"#,
        r#"ratewarden_store_errors_total{action="denied",store="memory"} 0"#,
        r#"ratewarden_tier_cache_requests_total{result="hit"} 0"#,
        r#"ratewarden_tier_cache_requests_total{result="miss"} 0"#,
        r#"ratewarden_reports_total{class="4xx"} 0"#,
        r#"ratewarden_config_reloads_total{kind="policy",result="error"} 0"#,
        "ratewarden_policy_file_refused 0",
        r#"ratewarden_rejections_total{reason="anomaly",rule="hourly",tier="free"} 0"#,
        r#"ratewarden_decisions_total{outcome="denied",rule="search",tier="pro"} 0"#,
    ] {
        assert!(text.contains(series), "{series} is missing:\n{text}");
    }
    daemon.stop(Duration::from_secs(10));
}
