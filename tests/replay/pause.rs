//! A pause does not buy an abuser a fresh start: the gap before its first request after the
//! pause is left out of its timing regularity, so the flag of a steady enumerator that stops
//! for ten minutes and resumes the same way holds (it once let 13 to 18 % of the resumed
//! requests through, against under 3 % without a pause).

use super::harness::{example_policy, read_decisions, replay};
use serde_json::json;

const START: f64 = 1_772_442_000.0;
const PAUSE_S: f64 = 600.0;

/// 2.5 requests a second of `/api/items/{id}`, nine in ten answered 404, for `seconds`.
fn enumerate(lines: &mut Vec<String>, from: f64, seconds: f64, seed: &mut u64) -> f64 {
    let mut at = from;
    while at < from + seconds {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let draw = *seed >> 33;
        let status = if draw % 10 == 0 { 200 } else { 404 };
        let line = json!({"ts": at, "user": "enumerator", "endpoint": format!("/api/items/{draw}"),
            "ip": "203.0.113.9", "tier": "pro", "status": status});
        lines.push(line.to_string());
        at += 0.4;
    }
    at
}

#[test]
fn an_enumerator_that_pauses_and_resumes_stays_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    let mut seed = 4;
    let paused_at = enumerate(&mut lines, START, 120.0, &mut seed);
    let resumed_at = paused_at + PAUSE_S;
    enumerate(&mut lines, resumed_at, 600.0, &mut seed);
    let log = dir.path().join("pause.jsonl");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();

    let decisions = dir.path().join("decisions.jsonl");
    let policy = example_policy();
    replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
            "--decisions",
            decisions.to_str().unwrap(),
        ],
        &[],
    )
    .assert_ok();
    let decisions = read_decisions(&decisions);
    let before: Vec<_> = decisions
        .iter()
        .filter(|d| d["ts"].as_f64().unwrap() < paused_at)
        .collect();
    assert!(
        before.iter().any(|d| d["reason"] == "anomaly"),
        "flagged before the pause"
    );
    let resumed: Vec<_> = decisions
        .iter()
        .filter(|d| d["ts"].as_f64().unwrap() >= resumed_at)
        .collect();
    let allowed = resumed.iter().filter(|d| d["allowed"] == true).count();
    assert_eq!(resumed.len(), 1500);
    assert!(
        allowed * 100 < resumed.len() * 5,
        "{allowed} of {} resumed requests allowed",
        resumed.len()
    );
}
