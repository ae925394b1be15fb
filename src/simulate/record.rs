//! One line of labelled traffic in the JSON-lines format of docs/reference/cli.md (replay), written
//! by `simulate` and read by `train` ([`crate::model::traffic`]).

use serde::{Deserialize, Serialize};
use std::io::Write;

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

/// Writes records one JSON object a line.
pub fn write_jsonl(mut out: impl Write, records: &[TrafficRecord]) -> std::io::Result<()> {
    for record in records {
        serde_json::to_writer(&mut out, record)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
