//! `replay` with the `upstream` load source: the log's latencies of the allowed requests move
//! the load factor as `/v1/report` would have, so an incident in the log shows as `load`
//! denials; combined logs give a latency from nginx's `$request_time` or Traefik's duration.

use super::harness::replay_report;
use ratewarden::replay::{parse_combined_line, parse_jsonl_line};

const POLICY: &str = "
default_tier: free
tiers:
  free:
    limits: [ { name: hourly, algorithm: fixed_window, requests: 100000, window: 1h } ]
endpoints:
  - path: /api/search
    limits: [ { name: search, algorithm: fixed_window, requests: 80, window: 1m } ]
adaptive:
  interval: 1s
  load:
    source: upstream
    smoothing: 1
    high_factor: 0.25
    low_factor: 1.0
    upstream: { latency_target: 100ms, min_reports: 1 }
";

#[test]
fn an_incident_in_the_log_shrinks_limits_and_they_recover() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("incident.jsonl");
    // 3 users, one request a second each for 90 s; the backend answers in 50 ms, except from
    // 30 s to 60 s, when it takes 400 ms (four times the target).
    let mut lines = String::new();
    for t in 0..90u64 {
        let latency = if (30..60).contains(&t) { 400 } else { 50 };
        for user in ["u1", "u2", "u3"] {
            lines.push_str(&format!(
                "{{\"ts\": {}, \"user\": \"{user}\", \"endpoint\": \"/api/search\", \
                 \"status\": 200, \"latency_ms\": {latency}}}\n",
                1_795_334_400 + t
            ));
        }
    }
    std::fs::write(&log, lines).unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let (report, stdout) = replay_report(dir.path(), &policy, &log, &[]);
    let load = &report["summary"]["load"];
    // Three intervals at pressure 4 take the factor straight to high_factor; with every
    // request of the minute denied no report comes, so it holds until three intervals of the
    // next minute's fast answers lift it.
    assert_eq!(load["lowest_factor"], 0.25, "{report:#}");
    assert_eq!(load["highest_factor"], 1.0);
    let below = load["seconds_below_one"].as_f64().unwrap();
    assert!((25.0..=40.0).contains(&below), "{below} s below 1");
    assert_eq!(load["latencies"], load["reported"]);
    // 30 of 80 used by each user when the factor fell to 0.25 (a limit of 20): the rest of
    // the minute is denied for `load`; base limits would have denied nothing.
    let by_load = report["summary"]["denied_by_reason"]["load"]
        .as_u64()
        .unwrap();
    assert!(by_load >= 80, "{by_load} load denials: {report:#}");
    assert_eq!(report["summary"]["denied"], by_load);
    assert!(
        stdout.contains("load factor from upstream reports: 0.25 to 1.00, below 1 for"),
        "{stdout}"
    );
}

#[test]
fn logs_give_latencies_where_they_have_them() {
    let base = r#"203.0.113.7 - alice [15/Nov/2026:10:00:00 +0000] "GET /api/search HTTP/1.1" 200 512 "-" "curl/8""#;
    let latency = |extra: &str| {
        parse_combined_line(&format!("{base}{extra}"))
            .unwrap()
            .latency_ms
    };
    assert_eq!(latency(" rt=0.250"), Some(250.0));
    assert_eq!(latency(" \"request_time=0.125\" uct=0.01"), Some(125.0));
    // nginx's `$request_time` appended as is: seconds with milliseconds.
    assert_eq!(latency(" 0.500"), Some(500.0));
    // Traefik: requests so far, router, service URL, duration.
    assert_eq!(
        latency(" 1 \"search@docker\" \"http://10.0.0.2:80\" 42ms"),
        Some(42.0)
    );
    assert_eq!(latency(""), None);
    assert_eq!(latency(" \"-\" 17"), None);

    let line = parse_jsonl_line(
        r#"{"ts": 1795334400, "user": "u", "endpoint": "/x", "status": 200, "latency_ms": 12.5}"#,
    )
    .unwrap();
    assert_eq!(line.latency_ms, Some(12.5));
    let refused =
        parse_jsonl_line(r#"{"ts": 1795334400, "user": "u", "endpoint": "/x", "latency_ms": -1}"#)
            .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "`latency_ms` must be a number of milliseconds, at least 0 (it is -1)"
    );
}
