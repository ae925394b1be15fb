//! A subject that is novel with no second signal is listed with why: its score was over the
//! threshold, and the novelty rule kept it from flagging. It used to read "below the
//! threshold", which its score was not.

use super::harness::{example_policy, replay_report};
use crate::common::narrow_model::model_with_a_narrow_range;
use serde_json::json;
use std::path::Path;

const START: f64 = 1_772_442_000.0;

/// The example policy over a model that makes a subject seen from many addresses novel.
fn policy_with_a_narrow_model(dir: &Path) -> std::path::PathBuf {
    model_with_a_narrow_range(dir);
    let policy = std::fs::read_to_string(example_policy())
        .unwrap()
        .replace("model: models/abuse.json", "model: narrow.json");
    let path = dir.join("policy.yaml");
    std::fs::write(&path, policy).unwrap();
    path
}

#[test]
fn a_novel_subject_without_a_second_signal_is_listed_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let policy = policy_with_a_narrow_model(dir.path());
    // Every request from another address, within every limit: novel, and no limit agrees.
    let lines: Vec<String> = (0..60)
        .map(|i| {
            json!({"ts": START + f64::from(i) * 2.0, "user": "roamer", "endpoint": "/api/orders",
                "ip": format!("203.0.113.{}", i + 1), "tier": "enterprise", "status": 200,
                "label": "abuse"})
            .to_string()
        })
        .collect();
    let log = dir.path().join("roamer.jsonl");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let (report, table) = replay_report(dir.path(), &policy, &log, &[]);
    let summary = &report["summary"];
    let missed = summary["abuse_unflagged"].as_array().unwrap();
    assert_eq!(missed.len(), 1, "{summary}");
    let score = missed[0]["max_score"].as_f64().unwrap_or_default();
    assert!(score >= 0.8, "{}", missed[0]);
    let why = format!(
        "highest score {score:.3}, reached while novel (outside the model's training range) with \
         no second signal: its score alone flags nothing"
    );
    assert_eq!(missed[0]["why"], why.as_str());
    assert!(table.contains(&why), "{table}");
}
