//! One line of labelled traffic in the JSON-lines format of docs/reference/cli.md (replay), written by `simulate` and read
//! by `train`.

use crate::replay::input::parse_jsonl_line;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    Normal,
    Abuse,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficRecord {
    /// Seconds since the Unix epoch (millisecond precision when simulated).
    pub ts: f64,
    pub user: String,
    pub endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<Label>,
    /// The simulated behaviour that produced the line (an extra field; replay ignores it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archetype: Option<String>,
}

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
        // Windows tools start a UTF-8 file with a byte order mark.
        let line = match index {
            0 => line.strip_prefix('\u{feff}').unwrap_or(&line),
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

/// What is wrong with a JSON line `T` could not be read from (`error`): the field it is
/// about named first (`` `user`: invalid type: integer `5`, expected a string ``), and a line
/// that is no JSON object named as such (a combined log given as JSON lines). Run only on
/// failure, so the path tracking costs nothing on good lines.
pub fn json_line_problem<'de, T: Deserialize<'de>>(
    line: &'de str,
    error: serde_json::Error,
) -> String {
    if !line.trim_start().starts_with('{') {
        return "not a JSON object (JSON lines hold one object per line)".to_owned();
    }
    let mut de = serde_json::Deserializer::from_str(line);
    match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Err(e) if e.inner().is_data() && e.path().to_string() != "." => {
            format!("`{}`: {}", e.path(), e.inner())
        }
        _ => error.to_string(),
    }
}

impl Traffic {
    fn skip(&mut self, line: usize, problem: String) {
        self.skipped += 1;
        if self.examples.len() < 3 {
            self.examples.push((line, problem));
        }
    }
}

/// Writes records one JSON object a line.
pub fn write_jsonl(mut out: impl Write, records: &[TrafficRecord]) -> std::io::Result<()> {
    for record in records {
        serde_json::to_writer(&mut out, record)?;
        out.write_all(b"\n")?;
    }
    out.flush()
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
}
