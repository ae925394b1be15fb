//! Real access-log lines nobody here wrote: the excerpts Debian's `fail2ban` package ships for
//! its own filter tests (nginx, Apache and Traefik lines, with empty and binary request lines,
//! proxies' extra fields, CONNECT targets). The package is downloaded at test time with
//! `apt-get download` and unpacked to a temporary folder; nothing is copied here.
//!
//! Every combined-format line parses; its subject (the address, or `$remote_user` with
//! `--subject user`), time and status come out as the line says (and as fail2ban's own
//! `failJSON` comment says of the host); the binary replays exactly those lines.

use super::harness::{example_policy, read_decisions, read_json, replay};
use chrono::DateTime;
use ratewarden::replay::parse_combined_line;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Downloads and unpacks fail2ban into `dir`; the folder of its test logs.
fn fail2ban_test_logs(dir: &Path) -> PathBuf {
    let download = Command::new("apt-get")
        .args(["download", "fail2ban"])
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("this test needs apt-get (Debian or Ubuntu) to download fail2ban: {e}")
        });
    assert!(
        download.status.success(),
        "`apt-get download fail2ban` failed (this test needs apt and the network; run \
         `apt-get update` first if the package is unknown):\n{}",
        String::from_utf8_lossy(&download.stderr)
    );
    let deb = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
        .expect("apt-get download wrote a .deb");
    let root = dir.join("root");
    let unpack = Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(&root)
        .output()
        .expect("dpkg-deb runs");
    assert!(
        unpack.status.success(),
        "dpkg-deb -x failed: {}",
        String::from_utf8_lossy(&unpack.stderr)
    );
    find_dir(&root, &["tests", "files", "logs"])
        .expect("fail2ban ships tests/files/logs (under its Python package)")
}

fn find_dir(root: &Path, tail: &[&str]) -> Option<PathBuf> {
    if root.ends_with(tail.iter().collect::<PathBuf>()) {
        return Some(root.to_path_buf());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(root)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    entries.sort();
    entries.into_iter().find_map(|p| find_dir(&p, tail))
}

/// Whether a line has the combined format's head, told apart without the parser under test:
/// three fields, then `[dd/Mon/yyyy:hh:mm:ss ±hhmm]`, then a quoted request.
fn looks_combined(line: &str) -> bool {
    let fields: Vec<&str> = line.splitn(6, ' ').collect();
    if fields.len() < 6 {
        return false;
    }
    let (date, zone, rest) = (fields[3], fields[4], fields[5]);
    let date_ok = date.len() == 21
        && date.starts_with('[')
        && date.as_bytes()[3] == b'/'
        && date.as_bytes()[7] == b'/'
        && date.as_bytes()[12] == b':';
    let zone_ok = zone.len() == 6
        && (zone.starts_with('+') || zone.starts_with('-'))
        && zone.ends_with(']')
        && zone[1..5].bytes().all(|b| b.is_ascii_digit());
    date_ok && zone_ok && rest.starts_with('"')
}

/// The status as the line says it: the field after the request's closing quote.
fn status_of(line: &str) -> Option<u16> {
    let after_date = &line[line.find("] \"")? + 3..];
    let bytes = after_date.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => break,
            _ => i += 1,
        }
    }
    after_date
        .get(i + 1..)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

struct Expected {
    address: String,
    user: Option<String>,
    date: String,
    status: Option<u16>,
    /// fail2ban's `failJSON` comment above the line: the host it expects to find.
    host: Option<String>,
}

#[test]
fn fail2bans_access_log_excerpts_parse_as_their_lines_say() {
    let dir = tempfile::tempdir().unwrap();
    let logs = fail2ban_test_logs(dir.path());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&logs)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();

    let mut expected: HashMap<PathBuf, HashMap<u64, Expected>> = HashMap::new();
    let mut checked = 0;
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let mut host = None;
        for (index, line) in text.lines().enumerate() {
            if let Some(json) = line.strip_prefix("# failJSON:") {
                let json: Value = serde_json::from_str(json.trim()).unwrap_or_default();
                host = json["host"].as_str().map(str::to_owned);
                continue;
            }
            if !looks_combined(line) {
                host = None;
                continue;
            }
            let fields: Vec<&str> = line.splitn(6, ' ').collect();
            let date = format!("{} {}", &fields[3][1..], &fields[4][..5]);
            let want = Expected {
                address: fields[0].to_owned(),
                user: (fields[2] != "-").then(|| fields[2].to_owned()),
                date,
                status: status_of(line),
                host: host.take(),
            };
            let parsed = parse_combined_line(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}\n{line}", file.display(), index + 1));
            let at = |p: &str| format!("{}:{}: {p}", file.display(), index + 1);
            assert_eq!(parsed.address, want.address, "{}", at("address"));
            assert_eq!(parsed.user.map(str::to_owned), want.user, "{}", at("user"));
            assert_eq!(parsed.status, want.status, "{}", at("status"));
            assert!(want.status.is_some(), "{}", at("a status in the line"));
            // The time, written back in the line's own offset, is the line's text.
            let offset = DateTime::parse_from_str(
                &format!("01/Jan/2000:00:00:00 {}", &want.date[21..]),
                "%d/%b/%Y:%H:%M:%S %z",
            )
            .unwrap()
            .timezone();
            let written = DateTime::from_timestamp_micros(parsed.at as i64)
                .unwrap()
                .with_timezone(&offset)
                .format("%d/%b/%Y:%H:%M:%S %z")
                .to_string();
            assert_eq!(written, want.date, "{}", at("time"));
            if let Some(host) = &want.host {
                assert_eq!(parsed.address, host, "{}", at("fail2ban's host"));
            }
            expected
                .entry(file.clone())
                .or_default()
                .insert(index as u64 + 1, want);
            checked += 1;
        }
    }
    assert!(
        expected.len() >= 5 && checked >= 25,
        "fail2ban ships combined lines in at least 5 files, 25 lines (found {checked} in {})",
        expected.len()
    );
    eprintln!(
        "{checked} combined lines from {} fail2ban files",
        expected.len()
    );

    // The binary replays exactly those lines (the rest are fail2ban's comments and other
    // formats: skipped and counted), each under the subject the line names.
    let with_lines: Vec<&PathBuf> = files.iter().filter(|f| expected.contains_key(*f)).collect();
    for subject in ["ip", "user"] {
        let report = dir.path().join(format!("report-{subject}.json"));
        let decisions = dir.path().join(format!("decisions-{subject}.jsonl"));
        let policy = example_policy();
        let mut args = vec![
            "--policy",
            policy.to_str().unwrap(),
            "--format",
            "combined",
            "--subject",
            subject,
            "--report",
            report.to_str().unwrap(),
            "--decisions",
            decisions.to_str().unwrap(),
        ];
        for file in &with_lines {
            args.extend(["--log", file.to_str().unwrap()]);
        }
        replay(&args, &[]).assert_ok();
        let report = read_json(&report);
        for input in report["inputs"].as_array().unwrap() {
            let path = PathBuf::from(input["path"].as_str().unwrap());
            assert_eq!(
                input["parsed"],
                expected[&path].len() as u64,
                "{}",
                path.display()
            );
        }
        let decisions = read_decisions(&decisions);
        assert_eq!(decisions.len(), checked);
        let mut fallbacks = 0;
        for d in &decisions {
            let path = PathBuf::from(d["file"].as_str().unwrap());
            let want = &expected[&path][&d["line"].as_u64().unwrap()];
            let subject_wanted = match (subject, &want.user) {
                ("user", Some(user)) => user,
                _ => {
                    fallbacks += u64::from(subject == "user");
                    &want.address
                }
            };
            assert_eq!(d["subject"], subject_wanted.as_str(), "{d}");
            assert!(d["allowed"].is_boolean(), "decided: {d}");
        }
        assert_eq!(report["subject_fallbacks"], fallbacks);
    }
}
