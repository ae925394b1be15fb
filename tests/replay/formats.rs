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
