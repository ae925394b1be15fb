//! `train --samples-out`: every feature sample `train` draws its fit from, written as JSON
//! lines that name no user, one per subject and sampling instant, for fitting other models
//! outside ratewarden.

mod common;

use common::cli::{copy_without, ratewarden, simulate, text};
use ratewarden::features::FEATURE_NAMES;
use serde_json::Value;
use std::path::Path;

/// `train --data DATA ARGS --out m.json --samples-out samples.jsonl` in `dir`: its stdout and
/// the samples written.
fn train_samples(dir: &Path, data: &str, args: &[&str]) -> (String, Vec<Value>) {
    let mut all = vec!["train", "--data", data, "--out", "m.json", "--force"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--samples-out", "samples.jsonl"]);
    let trained = ratewarden(dir, &all);
    assert!(trained.status.success(), "{}", text(&trained.stderr));
    let written = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    let lines: Vec<Value> = written
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(!lines.is_empty());
    (text(&trained.stdout), lines)
}

#[test]
fn train_writes_the_samples_it_fits_on_without_user_ids() {
    let dir = tempfile::tempdir().unwrap();
    simulate(dir.path(), 3, "15m", 150);
    let (stdout, lines) = train_samples(dir.path(), "t.jsonl", &[]);

    // As many lines as the samples `train` reports, each a subject's features at one instant.
    let reported = stdout
        .lines()
        .find_map(|line| line.strip_prefix("samples: "))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("train reports its samples");
    assert_eq!(lines.len().to_string(), reported, "{stdout}");
    let said = format!("wrote {} feature samples to samples.jsonl", lines.len());
    assert!(stdout.contains(&said), "{stdout}");
    let mut expected = vec!["archetype", "label", "requests", "subject"];
    expected.extend(FEATURE_NAMES);
    expected.sort_unstable();
    for line in &lines {
        let mut keys: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(keys, expected, "{line}");
        assert!(["abuse", "normal"].contains(&line["label"].as_str().unwrap()));
        assert!(line["requests"].as_u64().unwrap() >= 20, "{line}");
    }
    // Both labels occur, and no user id of the traffic appears in the file.
    assert!(lines.iter().any(|l| l["label"] == "abuse"));
    assert!(lines.iter().any(|l| l["label"] == "normal"));
    let written = std::fs::read_to_string(dir.path().join("samples.jsonl")).unwrap();
    let traffic = std::fs::read_to_string(dir.path().join("t.jsonl")).unwrap();
    for record in traffic.lines().take(2000) {
        let record: Value = serde_json::from_str(record).unwrap();
        let user = record["user"].as_str().unwrap();
        assert!(!written.contains(&format!("\"{user}\"")), "{user}");
    }
}

#[test]
fn unlabelled_traffic_gives_samples_without_a_label() {
    let dir = tempfile::tempdir().unwrap();
    simulate(dir.path(), 4, "10m", 60);
    copy_without(dir.path(), "t.jsonl", "logs.jsonl", "label");
    let (_, lines) = train_samples(dir.path(), "logs.jsonl", &["--kind", "gmm"]);
    for line in lines {
        assert!(line.get("label").is_none(), "{line}");
        assert!(line["archetype"].is_string(), "{line}");
    }
}

#[test]
fn traffic_without_archetypes_gives_null_ones_and_labels_must_be_all_or_none() {
    let dir = tempfile::tempdir().unwrap();
    simulate(dir.path(), 5, "10m", 60);
    copy_without(dir.path(), "t.jsonl", "recorded.jsonl", "archetype");
    let (_, lines) = train_samples(dir.path(), "recorded.jsonl", &[]);
    for line in lines {
        assert!(line["archetype"].is_null(), "{line}");
    }

    // A mixture trains on traffic labelled in part, but its samples' labels would be guesses.
    let mut partly = std::fs::read_to_string(dir.path().join("t.jsonl")).unwrap();
    let first = partly.lines().next().unwrap().to_owned();
    let mut record: Value = serde_json::from_str(&first).unwrap();
    record.as_object_mut().unwrap().remove("label");
    partly.push_str(&format!("{record}\n"));
    std::fs::write(dir.path().join("partly.jsonl"), &partly).unwrap();
    let lines = partly.lines().count();
    let refused = ratewarden(
        dir.path(),
        &[
            "train",
            "--data",
            "partly.jsonl",
            "--kind",
            "gmm",
            "--out",
            "g.json",
            "--samples-out",
            "partly-samples.jsonl",
        ],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        text(&refused.stderr).lines().last().unwrap_or_default(),
        format!(
            "error: 1 of {lines} lines have no `label`: --samples-out needs every line labelled or none (a subject's label would be a guess)"
        )
    );
    assert!(!dir.path().join("partly-samples.jsonl").exists());
}

/// An address counts once however it is spelt, as in the daemon: a client at `10.0.0.7` that
/// some log lines write as `::ffff:10.0.0.7` is one address, not two.
#[test]
fn an_address_in_two_spellings_is_one_address() {
    let dir = tempfile::tempdir().unwrap();
    simulate(dir.path(), 6, "10m", 60);
    copy_without(dir.path(), "t.jsonl", "logs.jsonl", "label");
    let mut logs = std::fs::read_to_string(dir.path().join("logs.jsonl")).unwrap();
    let start = logs
        .lines()
        .next()
        .and_then(|line| serde_json::from_str::<Value>(line).ok())
        .and_then(|first| first["ts"].as_f64())
        .unwrap();
    for i in 0..40 {
        let ip = ["10.0.0.7", "::ffff:10.0.0.7", "::FFFF:10.0.0.7"][i % 3];
        let ts = start + 5.0 * i as f64;
        logs.push_str(&format!(
            "{{\"ts\": {ts}, \"user\": \"twin\", \"endpoint\": \"/a\", \"ip\": \"{ip}\", \"archetype\": \"twin\"}}\n"
        ));
    }
    std::fs::write(dir.path().join("logs.jsonl"), logs).unwrap();
    let (_, lines) = train_samples(dir.path(), "logs.jsonl", &["--kind", "gmm"]);
    let twin: Vec<&Value> = lines.iter().filter(|l| l["archetype"] == "twin").collect();
    assert!(!twin.is_empty());
    for sample in twin {
        let requests = sample["requests"].as_f64().unwrap();
        assert_eq!(
            sample["ips_per_request"].as_f64(),
            Some(1.0 / requests),
            "{sample}"
        );
    }
}
