//! `--sweep` on labelled traffic from `ratewarden simulate`: every figure of the printed table
//! (and of `--report`) that per-request decisions determine matches a direct count over the
//! `--decisions` file; flag counts agree with the subjects denied for anomaly; `--plot` writes
//! a PNG that decodes.

use super::harness::{example_policy, read_decisions, read_json, replay, simulate};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

const THRESHOLDS: [f64; 3] = [0.2, 0.6, 1.0];

#[derive(Default, Debug)]
struct Count {
    requests: u64,
    allowed: u64,
    denied: u64,
    anomaly: u64,
    reasons: BTreeMap<String, u64>,
    abuse: u64,
    abuse_denied: u64,
    abuse_anomaly_denied: u64,
    normal: u64,
    normal_denied: u64,
    anomaly_denied_subjects: HashSet<String>,
    normal_anomaly_denied_subjects: HashSet<String>,
}

fn pct(part: u64, whole: u64) -> String {
    format!("{:.2} %", 100.0 * part as f64 / whole as f64)
}

#[test]
fn sweep_rows_match_a_direct_count_of_the_decisions_and_the_plot_is_a_png() {
    let dir = tempfile::tempdir().unwrap();
    let traffic = dir.path().join("traffic.jsonl");
    simulate(&traffic, 31, "20m", 400);
    let report_path = dir.path().join("report.json");
    let plot = dir.path().join("plot.png");
    let decisions_path = dir.path().join("decisions.jsonl");
    let policy = example_policy();
    let run = replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            traffic.to_str().unwrap(),
            "--sweep",
            "threshold=0.2:1.0:0.4",
            "--report",
            report_path.to_str().unwrap(),
            "--plot",
            plot.to_str().unwrap(),
            "--decisions",
            decisions_path.to_str().unwrap(),
        ],
        &[],
    );
    run.assert_ok();
    let report = read_json(&report_path);
    let decisions = read_decisions(&decisions_path);

    let mut counts: BTreeMap<String, Count> = BTreeMap::new();
    for d in &decisions {
        let c = counts.entry(d["threshold"].to_string()).or_default();
        c.requests += 1;
        let denied = d["allowed"] == false;
        c.allowed += u64::from(!denied);
        c.denied += u64::from(denied);
        if denied {
            *c.reasons
                .entry(d["reason"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
        let anomaly = d["reason"] == "anomaly";
        c.anomaly += u64::from(anomaly);
        let subject = d["subject"].as_str().unwrap().to_owned();
        if anomaly {
            c.anomaly_denied_subjects.insert(subject.clone());
        }
        match d["label"].as_str() {
            Some("abuse") => {
                c.abuse += 1;
                c.abuse_denied += u64::from(denied);
                c.abuse_anomaly_denied += u64::from(anomaly);
            }
            Some("normal") => {
                c.normal += 1;
                c.normal_denied += u64::from(denied);
                if anomaly {
                    c.normal_anomaly_denied_subjects.insert(subject);
                }
            }
            _ => panic!("simulated traffic is labelled: {d}"),
        }
    }
    // The policy's threshold (0.8) is replayed too, for the summary.
    assert_eq!(counts.len(), 4, "{:?}", counts.keys());
    let lines = decisions.len() as u64 / 4;
    assert_eq!(report["inputs"][0]["parsed"], lines);

    // The table's sweep rows, as printed.
    let printed: Vec<Vec<&str>> = run
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("sweep "))
        .skip(1)
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .collect()
        })
        .collect();
    assert_eq!(printed.len(), THRESHOLDS.len(), "{}", run.stdout);
    let rows = report["sweep"].as_array().unwrap();
    for ((threshold, row), printed) in THRESHOLDS.iter().zip(rows).zip(&printed) {
        let key = serde_json::to_string(threshold).unwrap();
        let c = &counts[&key];
        assert_eq!(row["threshold"], *threshold);
        assert_eq!(printed[0], threshold.to_string());
        assert_eq!(row["anomaly_denied"], c.anomaly, "{row}");
        assert_eq!(printed[2], c.anomaly.to_string());
        assert_eq!(printed[3], pct(c.abuse_denied, c.abuse));
        // Beside the share denied for any reason, the share denied for anomaly alone.
        assert_eq!(printed[4], pct(c.abuse_anomaly_denied, c.abuse));
        assert_eq!(printed[5], pct(c.normal_denied, c.normal));
        let share = |v: &Value| v.as_f64().unwrap();
        assert!(
            (share(&row["abuse_denied_share"]) - c.abuse_denied as f64 / c.abuse as f64).abs()
                < 1e-12
        );
        assert!(
            (share(&row["normal_denied_share"]) - c.normal_denied as f64 / c.normal as f64).abs()
                < 1e-12
        );
        // Flags are not per request, but every subject denied for anomaly was flagged.
        assert_eq!(printed[1], row["subjects_flagged"].to_string());
        assert_eq!(printed[6], row["normal_subjects_flagged"].to_string());
        assert!(
            (share(&row["abuse_denied_anomaly_share"])
                - c.abuse_anomaly_denied as f64 / c.abuse as f64)
                .abs()
                < 1e-12
        );
        assert!(
            row["subjects_flagged"].as_u64().unwrap() >= c.anomaly_denied_subjects.len() as u64
        );
        assert!(
            row["normal_subjects_flagged"].as_u64().unwrap()
                >= c.normal_anomaly_denied_subjects.len() as u64
        );
    }
    // A lower threshold flags at least as many subjects.
    let flagged: Vec<u64> = rows
        .iter()
        .map(|r| r["subjects_flagged"].as_u64().unwrap())
        .collect();
    assert!(flagged.windows(2).all(|w| w[0] >= w[1]), "{flagged:?}");
    assert!(flagged[0] > 0, "the shipped model flags simulated abusers");

    // The summary (at the policy's 0.8) against its own decisions.
    let summary = &report["summary"];
    let c = &counts["0.8"];
    assert_eq!(summary["threshold"], 0.8);
    assert_eq!(summary["requests"], c.requests);
    assert_eq!(summary["allowed"], c.allowed);
    assert_eq!(summary["denied"], c.denied);
    for (reason, n) in summary["denied_by_reason"].as_object().unwrap() {
        assert_eq!(*n, c.reasons.get(reason).copied().unwrap_or(0), "{reason}");
    }
    let by_rule: u64 = summary["by_rule"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["denied"].as_u64().unwrap())
        .sum();
    assert_eq!(by_rule, c.denied);
    assert!(
        run.stdout.contains(&format!(
            "  denied         {:>12}  {}",
            c.denied,
            pct(c.denied, c.requests)
        )),
        "{}",
        run.stdout
    );

    assert_flags_and_misses(summary, &run.stdout);

    // The plot: a PNG by its signature, and one that decodes to the size drawn.
    let bytes = std::fs::read(&plot).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let decoder = png::Decoder::new(std::io::Cursor::new(&bytes));
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut pixels = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut pixels).expect("PNG image data");
    assert_eq!((frame.width, frame.height), (1200, 1000));
    assert!(pixels.iter().any(|p| *p != 255), "something is drawn");
}

/// Episodes are runs of flagged cycles (a flag lasts at least `hold`, 5 minutes: a handful in
/// 20 minutes, where a count of flagged cycles would be hundreds); each flag says which
/// features carried it, as the daemon's log line does; every subject labelled abuse is flagged
/// or listed with why; the subjects never scored are counted and the busiest listed.
fn assert_flags_and_misses(summary: &Value, table: &str) {
    let flagged = summary["flagged"].as_array().unwrap();
    let weighed = [
        "interarrival_cv",
        "client_error_ratio",
        "address_spread",
        "limit_demand",
    ];
    for row in flagged {
        let episodes = row["episodes"].as_u64().unwrap();
        assert!((1..=5).contains(&episodes), "{row}");
        let why = row["top_features"].as_array().unwrap();
        assert!((1..=3).contains(&why.len()), "{row}");
        let contributions: Vec<f64> = why
            .iter()
            .map(|f| f["contribution"].as_f64().unwrap())
            .collect();
        assert!(contributions.windows(2).all(|w| w[0] >= w[1]), "{row}");
        assert!(contributions[0] > 0.0, "{row}");
        assert!(
            why.iter()
                .all(|f| weighed.contains(&f["feature"].as_str().unwrap())),
            "{row}"
        );
        let shown = format!(
            "{} episode{}",
            episodes,
            if episodes == 1 { "" } else { "s" }
        );
        assert!(table.contains(&shown), "{shown:?} not in:\n{table}");
    }
    let labels = &summary["labels"];
    let missed = summary["abuse_unflagged"].as_array().unwrap();
    assert_eq!(
        missed.len() as u64,
        labels["abuse_subjects"].as_u64().unwrap()
            - labels["abuse_subjects_flagged"].as_u64().unwrap(),
        "{missed:?}"
    );
    let never =
        "never scored: fewer than 20 requests (adaptive.anomaly.min_requests) in any 30m window";
    // The table shows the first 20; the report has them all.
    for (shown, row) in missed.iter().enumerate() {
        assert_eq!(row["label"], "abuse", "{row}");
        let why = row["why"].as_str().unwrap();
        match row["max_score"].as_f64() {
            Some(score) => {
                assert!(score < 0.8, "{row}");
                assert_eq!(
                    why,
                    format!("highest score {score:.3}, below the threshold 0.8")
                );
            }
            None => assert_eq!(why, never, "{row}"),
        }
        let subject = row["subject"].as_str().unwrap();
        assert!(
            shown >= 20 || (table.contains(subject) && table.contains(why)),
            "{row} not in:\n{table}"
        );
    }
    let unscored = summary["never_scored"].as_u64().unwrap();
    assert!(
        table.contains(&format!("subjects never scored: {unscored}\n")),
        "{table}"
    );
    let top = summary["never_scored_top"].as_array().unwrap();
    assert_eq!(top.len() as u64, unscored.min(10));
    for row in top {
        assert_eq!(row["max_score"], Value::Null, "{row}");
        assert_eq!(row["why"], never, "{row}");
        assert!(row["requests"].as_u64().unwrap() > 0, "{row}");
    }
}
