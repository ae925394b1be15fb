//! Malformed input: each kind of bad line gives its exact message from the line parsers; the
//! binary counts and shows such lines (with their numbers) and replays the rest; an empty file,
//! a file of garbage, a missing file and an unreadable policy exit non-zero with a clear
//! message. Arbitrary text never panics a parser.

use super::harness::{example_policy, read_json, replay, replay_report};
use proptest::prelude::*;
use ratewarden::replay::{parse_combined_line, parse_jsonl_line};
use std::io::Write;

const GOOD: &str = r#"203.0.113.7 - alice [22/Nov/2026:08:00:00 +0000] "GET /api/search?q=x HTTP/1.1" 200 512 "-" "curl/8.5""#;

/// (fixture: the failure it provokes, line, exact message)
const COMBINED: &[(&str, &str, &str)] = &[
    (
        "truncated_in_the_date",
        "203.0.113.7 - - [22/Nov/2026:08:00:0",
        "unterminated [$time_local]",
    ),
    (
        "truncated_in_the_request",
        r#"203.0.113.7 - - [22/Nov/2026:08:00:01 +0000] "GET /api/sea"#,
        r#"unterminated "$request""#,
    ),
    (
        "truncated_before_the_status",
        r#"203.0.113.7 - - [22/Nov/2026:08:00:01 +0000] "GET / HTTP/1.1""#,
        "missing field $status",
    ),
    (
        "truncated_after_the_address",
        "203.0.113.7 -",
        "missing field $remote_user",
    ),
    (
        "february_31st",
        r#"203.0.113.7 - - [31/Feb/2026:08:00:02 +0000] "GET / HTTP/1.1" 200 5"#,
        "bad date [31/Feb/2026:08:00:02 +0000]: input is out of range (expected like 10/Oct/2000:13:55:36 -0700)",
    ),
    (
        "month_misspelt",
        r#"203.0.113.7 - - [22/Nox/2026:08:00:02 +0000] "GET / HTTP/1.1" 200 5"#,
        "bad date [22/Nox/2026:08:00:02 +0000]: input contains invalid characters (expected like 10/Oct/2000:13:55:36 -0700)",
    ),
    (
        "date_without_utc_offset",
        r#"203.0.113.7 - - [22/Nov/2026:08:00:02] "GET / HTTP/1.1" 200 5"#,
        "bad date [22/Nov/2026:08:00:02]: premature end of input (expected like 10/Oct/2000:13:55:36 -0700)",
    ),
    (
        "status_of_four_digits",
        r#"203.0.113.7 - - [22/Nov/2026:08:00:03 +0000] "GET / HTTP/1.1" 2000 5"#,
        r#"bad status "2000" (a number from 100 to 999, or -)"#,
    ),
    (
        "no_date_at_all",
        r#"203.0.113.7 - - "GET / HTTP/1.1" 200 5"#,
        "expected [$time_local] at byte 16",
    ),
];

const JSONL: &[(&str, &str, &str)] = &[
    (
        "truncated_object",
        r#"{"ts": 1795334400, "user": "a", "endp"#,
        "EOF while parsing a string at line 1 column 37",
    ),
    (
        "month_thirteen",
        r#"{"ts": "2026-13-01T00:00:00Z", "user": "a", "endpoint": "/x"}"#,
        "`ts`: input is out of range (expected RFC 3339)",
    ),
    (
        "date_in_words",
        r#"{"ts": "yesterday", "user": "a", "endpoint": "/x"}"#,
        "`ts`: premature end of input (expected RFC 3339)",
    ),
    (
        "before_1970",
        r#"{"ts": -5, "user": "a", "endpoint": "/x"}"#,
        "`ts`: before 1970 or after 2255",
    ),
    (
        "no_ts",
        r#"{"user": "a", "endpoint": "/x"}"#,
        "missing field `ts` at line 1 column 31",
    ),
    (
        "cost_zero",
        r#"{"ts": 1795334400, "user": "a", "endpoint": "/x", "cost": 0}"#,
        "`cost` must be between 1 and 1000000 (it is 0)",
    ),
    (
        "status_700",
        r#"{"ts": 1795334400, "user": "a", "endpoint": "/x", "status": 700}"#,
        "`status` must be between 100 and 599 (it is 700)",
    ),
    (
        "ip_not_an_address",
        r#"{"ts": 1795334400, "user": "a", "endpoint": "/x", "ip": "not-an-ip"}"#,
        r#"`ip` "not-an-ip" is not an IPv4 or IPv6 address"#,
    ),
    (
        "empty_user",
        r#"{"ts": 1795334400, "user": "", "endpoint": "/x"}"#,
        "`user` is empty",
    ),
    (
        "unknown_label",
        r#"{"ts": 1795334400, "user": "a", "endpoint": "/x", "label": "evil"}"#,
        "unknown variant `evil`, expected `normal` or `abuse` at line 1 column 65",
    ),
];

#[test]
fn each_bad_line_gets_its_exact_message() {
    for (fixture, line, message) in COMBINED {
        let error = parse_combined_line(line).expect_err(fixture);
        assert_eq!(error.to_string(), *message, "{fixture}");
    }
    for (fixture, line, message) in JSONL {
        let error = parse_jsonl_line(line).expect_err(fixture);
        assert_eq!(error.to_string(), *message, "{fixture}");
    }
    assert!(parse_combined_line(GOOD).is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn no_text_panics_a_parser(text in ".{0,300}") {
        let _ = parse_combined_line(&text);
        let _ = parse_jsonl_line(&text);
    }

    #[test]
    fn no_cut_of_a_good_line_panics_a_parser(cut in 0usize..GOOD.len()) {
        if let Some(prefix) = GOOD.get(..cut) {
            let _ = parse_combined_line(prefix);
        }
    }
}

#[test]
fn bad_lines_are_counted_shown_with_their_numbers_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let mut file = std::fs::File::create(&log).unwrap();
    writeln!(file, "{GOOD}").unwrap();
    for (_, line, _) in COMBINED {
        writeln!(file, "{line}").unwrap();
    }
    // Binary garbage: NULs, bytes that are not UTF-8, a PNG signature, no newline for a while.
    file.write_all(b"\x00\x01\xff\xfe\x89PNG\r\n\x1a\n")
        .unwrap();
    file.write_all(&[0xde, 0xad, 0xbe, 0xef].repeat(40_000))
        .unwrap();
    file.write_all(b"\n").unwrap();
    writeln!(file, "{}", GOOD.replace("08:00:00", "08:00:09")).unwrap();
    drop(file);
    let report_path = dir.path().join("report.json");
    let policy = example_policy();
    let run = replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
            "--report",
            report_path.to_str().unwrap(),
        ],
        &[],
    );
    run.assert_ok();
    let report = read_json(&report_path);
    // The good lines, the bad ones, the PNG signature's two lines and the garbage run.
    let bad = COMBINED.len() as u64 + 3;
    assert_eq!(report["lines_skipped"], bad, "{report:#}");
    assert_eq!(report["inputs"][0]["lines"], bad + 2);
    assert_eq!(report["inputs"][0]["parsed"], 2);
    assert_eq!(report["summary"]["requests"], 2);
    let examples = report["skipped_examples"].as_array().unwrap();
    for (i, example) in examples.iter().enumerate() {
        assert_eq!(example["line"], i as u64 + 2);
        assert_eq!(example["problem"], COMBINED[i].2);
        assert_eq!(example["excerpt"], COMBINED[i].1);
    }
    assert!(
        run.stdout.contains(&format!(
            "skipped {}:2: unterminated [$time_local]",
            log.display()
        )),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(&format!("skipped ... {bad} lines in all")),
        "{}",
        run.stdout
    );

    // The garbage alone: lines that are not UTF-8 (or too long) are named as such.
    let garbage = dir.path().join("garbage.bin");
    let mut bytes = b"\xff\xfe\x00garbage\n".to_vec();
    bytes.extend(std::iter::repeat_n(0x80u8, 70 * 1024));
    std::fs::write(&garbage, &bytes).unwrap();
    let run = replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            garbage.to_str().unwrap(),
        ],
        &[],
    );
    run.assert_fails_with(&format!(
        "error: no parsable line in {} (2 lines skipped)\n  {0}:1: not UTF-8 text\n  {0}:2: 71680 bytes long (over 65536)",
        garbage.display()
    ));
}

#[test]
fn an_empty_file_a_missing_file_a_bad_policy_and_an_unreadable_model_exit_non_zero_with_a_clear_message()
 {
    let dir = tempfile::tempdir().unwrap();
    let policy = example_policy();
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "").unwrap();
    replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            empty.to_str().unwrap(),
        ],
        &[],
    )
    .assert_fails_with(&format!(
        "error: no parsable line in {} (0 lines skipped)",
        empty.display()
    ));

    let missing = dir.path().join("missing.log");
    replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            missing.to_str().unwrap(),
        ],
        &[],
    )
    .assert_fails_with(&format!(
        "error: cannot open {}: No such file or directory (os error 2)\n",
        missing.display()
    ));

    let good = dir.path().join("good.log");
    std::fs::write(&good, format!("{GOOD}\n")).unwrap();
    let bad_policy = dir.path().join("policy.yaml");
    std::fs::write(&bad_policy, "tiers: {}\nfrobnicate: 1\n").unwrap();
    let run = replay(
        &[
            "--policy",
            bad_policy.to_str().unwrap(),
            "--log",
            good.to_str().unwrap(),
        ],
        &[],
    );
    run.assert_fails_with(&format!("error: policy {}:\n", bad_policy.display()));
    run.assert_fails_with("frobnicate");

    // A policy naming a model that cannot be read: no replay without the model it names.
    let no_model = dir.path().join("no-model.yaml");
    let missing_model = dir.path().join("missing-model.json");
    std::fs::write(
        &no_model,
        std::fs::read_to_string(&policy).unwrap().replace(
            "model: models/abuse.json",
            &format!("model: {}", missing_model.display()),
        ),
    )
    .unwrap();
    replay(
        &[
            "--policy",
            no_model.to_str().unwrap(),
            "--log",
            good.to_str().unwrap(),
        ],
        &[],
    )
    .assert_fails_with(&format!(
        "error: adaptive.anomaly.model: cannot read model file {}: No such file or directory (os error 2) (fix the file, or remove the key to replay without anomaly scaling)\n",
        missing_model.display()
    ));

    // An empty file next to a good one is counted, not an error.
    let run = replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            empty.to_str().unwrap(),
            "--log",
            good.to_str().unwrap(),
        ],
        &[],
    );
    run.assert_ok();
    assert!(
        run.stdout
            .contains(&format!("input   {} (empty): 0 lines", empty.display())),
        "{}",
        run.stdout
    );

    // A combined log has no X-Api-Key header to take the subject from.
    replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            good.to_str().unwrap(),
            "--subject",
            "header:X-Api-Key",
        ],
        &[],
    )
    .assert_fails_with(&format!(
        "error: --subject header:X-Api-Key reads the `headers` object of JSON lines, and {} is a combined log, which logs no request headers by name: use --subject ip or user, or a jsonl log",
        good.display()
    ));
}

#[test]
fn a_header_subject_is_refused_for_combined_logs_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let policy = example_policy();
    // With --format combined nothing is opened: the file does not even exist.
    let missing = dir.path().join("not-there.log");
    replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            missing.to_str().unwrap(),
            "--format",
            "combined",
            "--subject",
            "header:User-Agent",
        ],
        &[],
    )
    .assert_fails_with(&format!(
        "error: --subject header:User-Agent reads the `headers` object of JSON lines, and {} is a combined log, which logs no request headers by name: use --subject ip or user, or a jsonl log",
        missing.display()
    ));
}

#[test]
fn a_jsonl_line_without_the_subject_header_is_unparsable() {
    let dir = tempfile::tempdir().unwrap();
    let policy = example_policy();
    let log = dir.path().join("headers.jsonl");
    std::fs::write(
        &log,
        concat!(
            r#"{"ts": 1795334400, "user": "u1", "endpoint": "/a", "headers": {"X-Api-Key": "k1"}}"#,
            "\n",
            r#"{"ts": 1795334401, "user": "u2", "endpoint": "/a"}"#,
            "\n",
            r#"{"ts": 1795334402, "user": "u3", "endpoint": "/a", "headers": {"x-api-key": "k2"}}"#,
            "\n",
        ),
    )
    .unwrap();
    let (report, _) = replay_report(
        dir.path(),
        &policy,
        &log,
        &["--subject", "header:x-API-key"],
    );
    assert_eq!(report["lines_skipped"], 1, "{report:#}");
    assert_eq!(report["summary"]["requests"], 2);
    assert_eq!(report["summary"]["subjects"], 2);
    assert_eq!(report["subject_fallbacks"], 0);
    let example = &report["skipped_examples"][0];
    assert_eq!(example["line"], 2);
    assert_eq!(
        example["problem"],
        "no `headers.x-API-key`, and --subject header:x-API-key needs it"
    );
}

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
    let by_header = summary_of(&gz_path, "header:X-Api-Key");
    assert_eq!(by_header["summary"]["subjects"], 2);
    assert_eq!(by_header["subject"], "header:X-Api-Key");
}

/// `load` denials appear in a replay only when the policy pins the load factor.
#[test]
fn load_denials_appear_only_under_a_pinned_load_factor() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("steady.jsonl");
    // One user, 8 requests in a minute on a rule of 10 a minute.
    let lines: String = (0..8)
        .map(|i| {
            format!(
                "{{\"ts\": {}, \"user\": \"u1\", \"endpoint\": \"/api/export\"}}\n",
                1_795_334_400 + i
            )
        })
        .collect();
    std::fs::write(&log, lines).unwrap();
    let base = r#"
default_tier: free
tiers:
  free:
    limits: [ { name: hourly, algorithm: fixed_window, requests: 1000, window: 1h } ]
endpoints:
  - path: /api/export
    limits: [ { name: export, algorithm: fixed_window, requests: 10, window: 1m } ]
default_endpoint:
  limits: [ { name: endpoint, algorithm: fixed_window, requests: 100, window: 1m } ]
"#;
    let run_with = |policy_text: &str| {
        let policy = dir.path().join("policy.yaml");
        std::fs::write(&policy, policy_text).unwrap();
        replay_report(dir.path(), &policy, &log, &[])
    };
    let (report, stdout) = run_with(base);
    assert_eq!(report["load_factor"], 1.0);
    assert_eq!(report["summary"]["denied"], 0, "{report:#}");
    assert!(
        stdout.contains("load factor 1 (a log has no CPU"),
        "{stdout}"
    );

    let pinned = format!("{base}adaptive:\n  load:\n    factor_override: 0.5\n");
    let (report, stdout) = run_with(&pinned);
    assert_eq!(report["load_factor"], 0.5);
    // export: 10 → 5 a minute; 3 of the 8 denied, for load.
    assert_eq!(report["summary"]["denied"], 3, "{report:#}");
    assert_eq!(
        report["summary"]["denied_by_reason"]["load"], 3,
        "{report:#}"
    );
    assert!(
        stdout.contains("load factor 0.5 (adaptive.load.factor_override)"),
        "{stdout}"
    );
}
