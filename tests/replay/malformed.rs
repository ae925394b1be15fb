//! Malformed input: each kind of bad line gives its exact message from the line parsers; the
//! binary counts and shows such lines (with their numbers) and replays the rest; a file of
//! garbage alone exits non-zero with a clear message. Arbitrary text never panics a parser.
//! (Inputs refused before replaying are in `refused`.)

use super::harness::{example_policy, read_json, replay};
use proptest::prelude::*;
use ratewarden::replay::{parse_combined_line, parse_jsonl_line};
use std::io::Write;

pub const GOOD: &str = r#"203.0.113.7 - alice [22/Nov/2026:08:00:00 +0000] "GET /api/search?q=x HTTP/1.1" 200 512 "-" "curl/8.5""#;

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
        r#"bad status "2000" (a number from 100 to 599, or -)"#,
    ),
    (
        "status_beyond_http_range",
        r#"203.0.113.7 - - [22/Nov/2026:08:00:03 +0000] "GET / HTTP/1.1" 600 5"#,
        r#"bad status "600" (a number from 100 to 599, or -)"#,
    ),
    (
        "no_date_at_all",
        r#"203.0.113.7 - - "GET / HTTP/1.1" 200 5"#,
        "expected [$time_local] at byte 16",
    ),
    (
        "a_json_line",
        r#"{"ts": 1795334400, "user": "a", "endpoint": "/x"}"#,
        "a JSON object, not a combined log line (JSON lines are read with --format jsonl or auto)",
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
        "seconds_in_a_string",
        r#"{"ts": "1795334400", "user": "a", "endpoint": "/x"}"#,
        "`ts`: \"1795334400\" is a number in a string: seconds since the epoch are a JSON number, a string is an RFC 3339 time",
    ),
    (
        "ts_null",
        r#"{"ts": null, "user": "a", "endpoint": "/x"}"#,
        "`ts`: invalid type: null, expected seconds since the epoch (a number) or an RFC 3339 time (a string) at line 1 column 11",
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
        "`label`: unknown variant `evil`, expected `normal` or `abuse` at line 1 column 65",
    ),
    (
        "user_a_number",
        r#"{"ts": 1795334400, "user": 5, "endpoint": "/x"}"#,
        "`user`: invalid type: integer `5`, expected a string at line 1 column 28",
    ),
    (
        "a_combined_line",
        r#"203.0.113.7 - - [25/Nov/2026:00:00:00 +0000] "GET /x HTTP/1.1" 200 5 "-" "-""#,
        "not a JSON object (JSON lines hold one object per line)",
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
