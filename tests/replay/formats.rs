//! Input formats replay alike: gzip (recognised by its content) with RFC 3339 times gives the
//! same decisions as plain JSON lines with numeric times, for a user or a header subject, and
//! so does a file that starts with a byte order mark.

use super::harness::{example_policy, read_json, replay};
use std::io::Write;

#[test]
fn gzip_and_rfc3339_times_replay_like_plain_numeric_lines() {
    let dir = tempfile::tempdir().unwrap();
    let policy = example_policy();
    let mut plain = String::new();
    let mut rfc = String::new();
    for i in 0..40u64 {
        let ms = i * 250;
        plain.push_str(&format!(
            "{{\"ts\": {}.{:03}, \"user\": \"u{}\", \"endpoint\": \"/api/search\", \"headers\": {{\"x-api-key\": \"key-{}\"}}}}\n",
            1_795_334_400 + ms / 1000,
            ms % 1000,
            i % 3,
            i % 2
        ));
        rfc.push_str(&format!(
            "{{\"ts\": \"2026-11-22T08:00:{:02}.{:03}+00:00\", \"user\": \"u{}\", \"endpoint\": \"/api/search\", \"headers\": {{\"x-api-key\": \"key-{}\"}}}}\n",
            ms / 1000,
            ms % 1000,
            i % 3,
            i % 2
        ));
    }
    let plain_path = dir.path().join("plain.jsonl");
    std::fs::write(&plain_path, &plain).unwrap();
    // A .log name: gzip is recognised by its content.
    let gz_path = dir.path().join("rfc3339.log");
    let mut encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz_path).unwrap(),
        flate2::Compression::default(),
    );
    encoder.write_all(rfc.as_bytes()).unwrap();
    encoder.finish().unwrap();

    let summary_of = |log: &std::path::Path, subject: &str| {
        let report = dir.path().join("r.json");
        replay(
            &[
                "--policy",
                policy.to_str().unwrap(),
                "--log",
                log.to_str().unwrap(),
                "--subject",
                subject,
                "--report",
                report.to_str().unwrap(),
            ],
            &[],
        )
        .assert_ok();
        read_json(&report)
    };
    let a = summary_of(&plain_path, "user");
    let b = summary_of(&gz_path, "user");
    assert_eq!(b["inputs"][0]["gzip"], true);
    assert_eq!(b["inputs"][0]["format"], "jsonl");
    assert_eq!(a["summary"], b["summary"]);
    assert_eq!(a["summary"]["subjects"], 3);
    // The search rule (10 a minute, burst 5) per user: 40 requests in 10 s from 3 users.
    assert!(a["summary"]["denied"].as_u64().unwrap() > 0);
    let bom_path = dir.path().join("bom.jsonl");
    std::fs::write(&bom_path, format!("\u{feff}{plain}")).unwrap();
    let c = summary_of(&bom_path, "user");
    assert_eq!(c["inputs"][0]["format"], "jsonl");
    assert_eq!(c["lines_skipped"], 0);
    assert_eq!(a["summary"], c["summary"]);
    let by_header = summary_of(&gz_path, "header:X-Api-Key");
    assert_eq!(by_header["summary"]["subjects"], 2);
    assert_eq!(by_header["subject"], "header:X-Api-Key");
}

/// What nginx writes for a `\` path and a dual-stack listener counts as the daemon counts the
/// request: `/api\x5Cexport` is the export (a raw `\` reads as `/`), and `::ffff:192.0.2.7`
/// is the same client as `192.0.2.7`.
#[test]
fn nginx_escapes_and_ipv4_mapped_addresses_count_as_the_daemon_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = String::new();
    for i in 0..6 {
        let address = if i % 2 == 0 {
            "192.0.2.7"
        } else {
            "::ffff:192.0.2.7"
        };
        log.push_str(&format!(
            "{address} - - [22/Nov/2026:08:00:0{i} +0000] \"GET /api\\x5Cexport?q=\\x22 HTTP/1.1\" 200 5 \"-\" \"curl\" 1795613240.123\n"
        ));
    }
    let path = dir.path().join("access.log");
    std::fs::write(&path, log).unwrap();
    let decisions = dir.path().join("d.jsonl");
    replay(
        &[
            "--policy",
            example_policy().to_str().unwrap(),
            "--log",
            path.to_str().unwrap(),
            "--decisions",
            decisions.to_str().unwrap(),
        ],
        &[],
    )
    .assert_ok();
    let lines = super::harness::read_decisions(&decisions);
    assert_eq!(lines.len(), 6);
    for line in &lines {
        assert_eq!(line["endpoint"], "/api/export", "{line}");
        assert_eq!(line["subject"], "192.0.2.7", "{line}");
    }
    // The export rule (5 a minute) saw one client: the sixth is denied.
    assert_eq!(lines[5]["allowed"], false, "{:#?}", lines);
}
