//! The traffic `train` learns from: a JSON-lines file read into [`TrafficRecord`]s, every line
//! checked by the parser `replay` uses ([`crate::logs`]), so `train` learns from exactly the
//! lines `replay` replays and skips the same ones, with the same message.

use crate::logs::{MAX_LINE, parse_jsonl_line};
use crate::simulate::{TrafficRecord, json_line_problem};
use std::io::BufRead;

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("reading line {line}: {error}")]
    Io { line: usize, error: std::io::Error },
    #[error(
        "reading line {line}: not UTF-8 text (this reads plain JSON lines: decompress a .gz file first)"
    )]
    NotText { line: usize },
    #[error("no line to read: the file is empty")]
    NoLines,
    #[error("no parsable line ({bad} unparsable; first at line {first_bad}: {example})")]
    Empty {
        bad: usize,
        first_bad: usize,
        example: String,
    },
}

/// What reading a traffic file found.
#[derive(Debug, Default)]
pub struct Traffic {
    pub records: Vec<TrafficRecord>,
    /// Lines that could not be parsed: how many, and the first few with their line numbers.
    pub skipped: usize,
    pub examples: Vec<(usize, String)>,
}

/// Reads jsonl traffic (numeric `ts`), skipping and counting the lines `replay` would skip and
/// those without a numeric `ts`; `progress` is told the bytes read so far.
pub fn read_jsonl(
    reader: impl BufRead,
    mut progress: impl FnMut(u64),
) -> Result<Traffic, ReadError> {
    let mut traffic = Traffic::default();
    let mut bytes = 0u64;
    for (index, line) in reader.lines().enumerate() {
        let line = line.map_err(|error| match error.kind() {
            std::io::ErrorKind::InvalidData => ReadError::NotText { line: index + 1 },
            _ => ReadError::Io {
                line: index + 1,
                error,
            },
        })?;
        bytes += line.len() as u64 + 1;
        if index % 4096 == 0 {
            progress(bytes);
        }
        if line.trim().is_empty() {
            continue;
        }
        if line.len() > MAX_LINE {
            traffic.skip(
                index + 1,
                format!("{} bytes long (over {MAX_LINE})", line.len()),
            );
            continue;
        }
        // Windows tools start a UTF-8 file with a byte order mark.
        let line = match index {
            0 => crate::files::without_byte_order_mark(&line),
            _ => &line,
        };
        // Replay's reading first: a line it refuses (a time before 1970 or past 2255, a cost
        // the engine refuses, a status no upstream answers, an address that is none) would
        // give `train` features the daemon and `replay` never compute.
        if let Err(problem) = parse_jsonl_line(line) {
            traffic.skip(index + 1, problem.to_string());
            continue;
        }
        match serde_json::from_str::<TrafficRecord>(line) {
            Ok(record) => traffic.records.push(record),
            Err(e) => traffic.skip(index + 1, json_line_problem::<TrafficRecord>(line, e)),
        }
    }
    progress(bytes);
    if traffic.records.is_empty() && traffic.skipped == 0 {
        return Err(ReadError::NoLines);
    }
    if traffic.records.is_empty() {
        let (first_bad, example) = traffic.examples.first().cloned().unwrap_or_default();
        return Err(ReadError::Empty {
            bad: traffic.skipped,
            first_bad,
            example,
        });
    }
    Ok(traffic)
}

impl Traffic {
    fn skip(&mut self, line: usize, problem: String) {
        self.skipped += 1;
        if self.examples.len() < 3 {
            self.examples.push((line, problem));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `train` reads what `replay` reads: a line `replay` refuses gives no record here, so the
    /// features of `train` are those the daemon computes (and a time far in the future no
    /// longer sends the sampling clock round past `u64::MAX`).
    #[test]
    fn lines_replay_refuses_are_skipped_naming_the_problem() {
        let good = r#"{"ts": 1800000000.5, "user": "ann", "endpoint": "/a", "ip": "::ffff:10.0.0.1", "status": 200}"#;
        let refused = [
            (
                r#"{"ts": -5, "user": "ann", "endpoint": "/a"}"#,
                "`ts`: before 1970 or after 2255",
            ),
            (
                r#"{"ts": 2e13, "user": "ann", "endpoint": "/a"}"#,
                "`ts`: before 1970 or after 2255",
            ),
            (
                r#"{"ts": 1800000001, "user": "ann", "endpoint": "/a", "cost": 0}"#,
                "`cost` must be between 1 and 1000000 (it is 0)",
            ),
            (
                r#"{"ts": 1800000002, "user": "ann", "endpoint": "/a", "status": 999}"#,
                "`status` must be between 100 and 599 (it is 999)",
            ),
            (
                r#"{"ts": 1800000003, "user": "ann", "endpoint": "/a", "ip": "10.0.0"}"#,
                "`ip` \"10.0.0\" is not an IPv4 or IPv6 address",
            ),
            (
                r#"{"ts": "2027-01-15T08:00:00Z", "user": "ann", "endpoint": "/a"}"#,
                "`ts`: invalid type: string \"2027-01-15T08:00:00Z\", expected f64 at line 1 column 29",
            ),
        ];
        for (line, problem) in refused {
            let text = format!("{good}\n{line}\n");
            let traffic = read_jsonl(text.as_bytes(), |_| {}).expect("one good line");
            assert_eq!(traffic.records.len(), 1, "{line}");
            assert_eq!(traffic.examples, [(2, problem.to_owned())], "{line}");
        }
    }

    #[test]
    fn a_line_longer_than_replay_reads_is_skipped_as_replay_skips_it() {
        let good = r#"{"ts": 1800000000, "user": "ann", "endpoint": "/a"}"#;
        let user = "u".repeat(MAX_LINE);
        let long = format!(r#"{{"ts": 1800000001, "user": "{user}", "endpoint": "/a"}}"#);
        let traffic = read_jsonl(format!("{good}\n{long}\n").as_bytes(), |_| {}).expect("a line");
        assert_eq!(traffic.records.len(), 1);
        let skipped = format!("{} bytes long (over 65536)", long.len());
        assert_eq!(traffic.examples, [(2, skipped)]);
    }
}
