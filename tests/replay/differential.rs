//! Differential: the same JSON-lines traffic sent live to the real daemon's HTTP API, each
//! request at its time, and replayed from the file, gets the same decision per request
//! (allowed or not, and the reason of a denial), within the tolerance real timing allows:
//!
//! - a request sent late (the sender's sleep overshoots, the machine is busy) meets a limit a
//!   few milliseconds later than the log says: at most 1 % of requests may differ for that;
//! - the daemon runs its control cycle every `adaptive.interval` from its own start, the
//!   replay from the first request: a subject's flag may start up to one interval apart, so
//!   requests of a flagged subject within two intervals of its flag may differ.
//!
//! The traffic: 20 s of `ratewarden simulate` (labelled, every archetype), a credential
//! stuffer (8 logins a second, all 401, from many addresses) that the shipped model flags
//! within seconds, and a client hammering the search rule (10 a minute, burst 5).

use super::harness::{read_decisions, read_json, replay, simulate};
use crate::common::daemon::{Connection, Daemon};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const SECONDS: f64 = 20.0;

fn policy(dir: &Path) -> PathBuf {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/abuse.json");
    let yaml = crate::common::EXAMPLE_POLICY.replace(
        "model: models/abuse.json",
        &format!("model: {}", model.display()),
    );
    let path = dir.join("policy.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The traffic, with times from 0.
fn traffic(dir: &Path) -> Vec<Value> {
    let simulated = dir.join("simulated.jsonl");
    simulate(&simulated, 5, "20s", 200);
    let mut records: Vec<Value> = std::fs::read_to_string(&simulated)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first = records[0]["ts"].as_f64().unwrap();
    for r in &mut records {
        r["ts"] = json!(r["ts"].as_f64().unwrap() - first);
    }
    for i in 0..(SECONDS * 8.0) as u64 {
        records.push(json!({"ts": 0.3 + i as f64 / 8.0, "user": "stuffer-1", "endpoint": "/login",
            "ip": format!("198.51.100.{}", i % 60 + 1), "tier": "free", "status": 401, "label": "abuse"}));
    }
    for i in 0..(SECONDS * 3.0) as u64 {
        records.push(
            json!({"ts": 0.1 + i as f64 / 3.0, "user": "searcher", "endpoint": "/api/search",
            "ip": "192.0.2.44", "tier": "pro", "status": 200, "label": "normal"}),
        );
    }
    records.sort_by(|a, b| {
        a["ts"]
            .as_f64()
            .unwrap()
            .total_cmp(&b["ts"].as_f64().unwrap())
    });
    records
}

fn post(connection: &mut Connection, path: &str, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: ratewarden\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let reply = connection
        .exchange(request.as_bytes(), false)
        .expect("the daemon answers");
    let text = reply.text();
    (
        reply.status,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

#[test]
fn live_and_replayed_decisions_agree_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(dir.path());
    let mut records = traffic(dir.path());
    let mut daemon = Daemon::start(&policy, &[]);
    daemon.wait_for("model loaded", Duration::from_secs(10));

    // The log: the planned send times, from a second from now.
    let start = now_s() + 1.0;
    for r in &mut records {
        r["ts"] = json!(((start + r["ts"].as_f64().unwrap()) * 1000.0).round() / 1000.0);
    }
    let log = dir.path().join("live.jsonl");
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&log, text).unwrap();

    let mut connection = Connection::open(daemon.addr).unwrap();
    let mut live = Vec::with_capacity(records.len());
    let mut late = Vec::with_capacity(records.len());
    for r in &records {
        let at = r["ts"].as_f64().unwrap();
        let wait = at - now_s();
        if wait > 0.0 {
            std::thread::sleep(Duration::from_secs_f64(wait));
        }
        late.push(now_s() - at);
        let mut check = json!({"user": r["user"], "endpoint": r["endpoint"], "ip": r["ip"]});
        if let Some(tier) = r.get("tier") {
            check["tier"] = tier.clone();
        }
        let (code, decision) = post(&mut connection, "/v1/check", &check);
        assert!(code == 200 || code == 429, "{code} {decision}");
        if decision["allowed"] == true {
            if let Some(status) = r.get("status") {
                let report =
                    json!({"user": r["user"], "endpoint": r["endpoint"], "status": status});
                assert_eq!(post(&mut connection, "/v1/report", &report).0, 202);
            }
        }
        live.push(decision);
    }
    daemon.stop(Duration::from_secs(10));

    let decisions_path = dir.path().join("decisions.jsonl");
    let report_path = dir.path().join("report.json");
    replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
            "--decisions",
            decisions_path.to_str().unwrap(),
            "--report",
            report_path.to_str().unwrap(),
        ],
        &[("RATEWARDEN_HASH_KEY", "daemon test secret")],
    )
    .assert_ok();
    let replayed = read_decisions(&decisions_path);
    let report = read_json(&report_path);
    assert_eq!(replayed.len(), records.len());
    let flagged_at: HashMap<&str, f64> = report["summary"]["flagged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["subject"].as_str().unwrap(),
                records[0]["ts"].as_f64().unwrap() + f["first_flagged_after_s"].as_f64().unwrap(),
            )
        })
        .collect();
    let interval = 1.0;

    let mut timing = Vec::new();
    let mut phase = Vec::new();
    let mut anomaly_live = 0;
    for (d, live) in replayed.iter().zip(&live) {
        let line = d["line"].as_u64().unwrap() as usize;
        let record = &records[line - 1];
        let outcome = |allowed: &Value, reason: &Value| {
            if allowed == true {
                "allowed".to_owned()
            } else {
                reason.as_str().unwrap_or("?").to_owned()
            }
        };
        let want = outcome(&live["allowed"], &live["reason"]);
        anomaly_live += usize::from(want == "anomaly");
        let got = outcome(&d["allowed"], &d["reason"]);
        if want == got {
            continue;
        }
        let at = record["ts"].as_f64().unwrap();
        let user = record["user"].as_str().unwrap();
        let what = format!(
            "line {line} {user} {} at +{:.3} s (sent {:.1} ms late): live {want}, replay {got}",
            record["endpoint"],
            at - start,
            late[line - 1] * 1000.0
        );
        match flagged_at.get(user) {
            Some(flag) if (at - flag).abs() <= 2.0 * interval => phase.push(what),
            _ => timing.push(what),
        }
    }
    late.sort_by(f64::total_cmp);
    eprintln!(
        "{} requests; sent late by median {:.2} ms, p99 {:.2} ms, max {:.2} ms; live anomaly denials {anomaly_live}; \
         differences near a flag: {}, others: {}\n{}",
        records.len(),
        late[late.len() / 2] * 1000.0,
        late[late.len() * 99 / 100] * 1000.0,
        late[late.len() - 1] * 1000.0,
        phase.len(),
        timing.len(),
        phase
            .iter()
            .chain(&timing)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(anomaly_live > 0, "the stuffer was flagged live");
    assert!(
        flagged_at.contains_key("stuffer-1"),
        "the stuffer was flagged in the replay"
    );
    assert!(
        timing.len() * 100 <= records.len(),
        "over 1 % of requests differ away from a flag: {timing:#?}"
    );
}
