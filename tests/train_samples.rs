//! `train --samples-out`: the feature samples `train` fits on, written as JSON lines that name
//! no user, one per subject and sampling instant, for fitting other models outside ratewarden.

mod common;

use common::cli::{copy_without, ratewarden, simulate, text};
use ratewarden::features::FEATURE_NAMES;

#[test]
fn train_writes_the_samples_it_fits_on_without_user_ids() {
    let dir = tempfile::tempdir().unwrap();
    simulate(dir.path(), 3, "15m", 150);
    let trained = ratewarden(
        dir.path(),
        &[
            "train",
            "--data",
            "t.jsonl",
            "--out",
            "m.json",
            "--samples-out",
            "samples.jsonl",
        ],
    );
    let stdout = text(&trained.stdout);
    assert!(trained.status.success(), "{}", text(&trained.stderr));

    // As many lines as the samples `train` reports, each a subject's features at one instant.
    let written = std::fs::read_to_string(dir.path().join("samples.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = written
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let reported = stdout
        .lines()
        .find_map(|line| line.strip_prefix("samples: "))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("train reports its samples");
    assert_eq!(lines.len().to_string(), reported, "{stdout}");
    assert!(
        stdout.contains(&format!(
            "wrote {} feature samples to samples.jsonl",
            lines.len()
        )),
        "{stdout}"
    );
    for line in &lines {
        let object = line.as_object().unwrap();
        let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut expected = vec!["archetype", "label", "requests", "subject"];
        expected.extend(FEATURE_NAMES);
        expected.sort_unstable();
        assert_eq!(keys, expected, "{line}");
        assert!(["abuse", "normal"].contains(&line["label"].as_str().unwrap()));
        assert!(line["requests"].as_u64().unwrap() >= 20, "{line}");
    }
    // Both labels occur, and no user id of the traffic appears in the file.
    assert!(lines.iter().any(|l| l["label"] == "abuse"));
    assert!(lines.iter().any(|l| l["label"] == "normal"));
    let traffic = std::fs::read_to_string(dir.path().join("t.jsonl")).unwrap();
    for record in traffic.lines().take(2000) {
        let record: serde_json::Value = serde_json::from_str(record).unwrap();
        let user = record["user"].as_str().unwrap();
        assert!(!written.contains(&format!("\"{user}\"")), "{user}");
    }
}

#[test]
fn unlabelled_traffic_gives_samples_without_a_label() {
    let dir = tempfile::tempdir().unwrap();
    simulate(dir.path(), 4, "10m", 60);
    copy_without(dir.path(), "t.jsonl", "logs.jsonl", "label");
    let trained = ratewarden(
        dir.path(),
        &[
            "train",
            "--data",
            "logs.jsonl",
            "--kind",
            "gmm",
            "--out",
            "m.json",
            "--samples-out",
            "samples.jsonl",
        ],
    );
    assert!(trained.status.success(), "{}", text(&trained.stderr));
    let written = std::fs::read_to_string(dir.path().join("samples.jsonl")).unwrap();
    assert!(written.lines().count() > 0);
    for line in written.lines() {
        let line: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(line.get("label").is_none(), "{line}");
        assert!(line["archetype"].is_string(), "{line}");
    }
}
