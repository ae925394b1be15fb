//! Parsed log lines as the replay needs them: compact records in time order, with subjects,
//! endpoints and tiers stored once each (a week of logs names the same few thousand).

use crate::clock::Micros;
use crate::engine::{Cost, EndpointPath, path_of};
use crate::simulate::Label;
use hashbrown::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;

/// One request to replay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Record {
    pub at: Micros,
    /// Index into [`Traffic::subjects`].
    pub subject: u32,
    /// Index into [`Traffic::endpoints`].
    pub endpoint: u32,
    /// Index into [`Traffic::tiers`].
    pub tier: Option<u32>,
    pub ip: Option<IpAddr>,
    pub cost: Cost,
    pub status: Option<u16>,
    /// The upstream's latency in milliseconds, when the log has it (the `upstream` source).
    pub latency_ms: Option<f32>,
    pub label: Option<Label>,
    /// Index into [`Traffic::files`], and the line's number in its file.
    pub file: u32,
    pub line: u64,
}

/// What reading one file found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FileStats {
    pub path: PathBuf,
    /// `combined` or `jsonl` (`None`: the file had no line to tell).
    pub format: Option<&'static str>,
    pub gzip: bool,
    pub lines: u64,
    pub parsed: u64,
    pub skipped: u64,
}

/// A line that could not be read, with where it is.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LineProblem {
    pub file: PathBuf,
    pub line: u64,
    pub problem: String,
    /// The line's first characters, when it is text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
}

/// How many problems are kept as examples.
pub const EXAMPLES: usize = 5;
/// Characters of a problem line shown.
const EXCERPT: usize = 100;

#[derive(Debug, Default)]
pub struct Traffic {
    pub records: Vec<Record>,
    pub subjects: Vec<Box<str>>,
    pub endpoints: Vec<Box<str>>,
    pub tiers: Vec<Box<str>>,
    pub files: Vec<FileStats>,
    /// Lines skipped, and the first few of them.
    pub skipped: u64,
    pub examples: Vec<LineProblem>,
    /// Lines whose chosen subject was absent, so the fallback named in README was used.
    pub fallbacks: u64,
    ids: Ids,
}

#[derive(Debug, Default)]
struct Ids {
    subjects: HashMap<Box<str>, u32>,
    endpoints: HashMap<Box<str>, u32>,
    tiers: HashMap<Box<str>, u32>,
}

fn intern(names: &mut Vec<Box<str>>, ids: &mut HashMap<Box<str>, u32>, name: &str) -> u32 {
    if let Some(id) = ids.get(name) {
        return *id;
    }
    let id = u32::try_from(names.len()).unwrap_or(u32::MAX);
    names.push(name.into());
    ids.insert(name.into(), id);
    id
}

/// A parsed line in the replay's terms, before interning.
#[derive(Debug, Clone)]
pub struct Parsed<'a> {
    pub at: Micros,
    pub subject: &'a str,
    pub endpoint: &'a str,
    pub tier: Option<&'a str>,
    pub ip: Option<IpAddr>,
    pub cost: Cost,
    pub status: Option<u16>,
    /// Milliseconds.
    pub latency_ms: Option<f64>,
    pub label: Option<Label>,
}

impl Traffic {
    /// Adds a line; its endpoint is kept normalised, as the daemon would see it, so the
    /// decisions, the report and every pass name one spelling.
    pub fn push(&mut self, file: u32, line: u64, parsed: &Parsed<'_>) {
        let subject = intern(&mut self.subjects, &mut self.ids.subjects, parsed.subject);
        let endpoint = intern(
            &mut self.endpoints,
            &mut self.ids.endpoints,
            &EndpointPath::new(path_of(parsed.endpoint)),
        );
        let tier = parsed
            .tier
            .map(|t| intern(&mut self.tiers, &mut self.ids.tiers, t));
        self.records.push(Record {
            at: parsed.at,
            subject,
            endpoint,
            tier,
            ip: parsed.ip,
            cost: parsed.cost,
            status: parsed.status,
            // A millisecond's fraction is all a percentile needs; half the record's bytes.
            latency_ms: parsed.latency_ms.map(|ms| ms as f32),
            label: parsed.label,
            file,
            line,
        });
    }

    pub fn skip(&mut self, file: &std::path::Path, line: u64, problem: String, text: Option<&str>) {
        self.skipped += 1;
        if self.examples.len() < EXAMPLES {
            self.examples.push(LineProblem {
                file: file.to_path_buf(),
                line,
                problem,
                excerpt: text.map(|t| t.chars().take(EXCERPT).collect()),
            });
        }
    }

    /// Puts the records in time order (stable: lines of one instant keep their order) and
    /// drops the lookup tables.
    pub fn finish(&mut self) {
        self.records.sort_by_key(|r| r.at);
        self.ids = Ids::default();
    }

    /// Each subject's label: abuse when any of its lines says so, normal when its lines say
    /// normal, `None` when they carry no label.
    pub fn subject_labels(&self) -> Vec<Option<Label>> {
        let mut labels = vec![None; self.subjects.len()];
        for record in &self.records {
            let slot = &mut labels[record.subject as usize];
            match (*slot, record.label) {
                (_, Some(Label::Abuse)) => *slot = Some(Label::Abuse),
                (None, Some(Label::Normal)) => *slot = Some(Label::Normal),
                _ => {}
            }
        }
        labels
    }

    pub fn first(&self) -> Option<Micros> {
        self.records.first().map(|r| r.at)
    }

    pub fn last(&self) -> Option<Micros> {
        self.records.last().map(|r| r.at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_path_are_one_endpoint() {
        let mut traffic = Traffic::default();
        for (line, endpoint) in [
            (1, "/api/export"),
            (2, "/api//export"),
            (3, "/api/%65xport"),
        ] {
            let parsed = Parsed {
                at: 0,
                subject: "u",
                endpoint,
                tier: None,
                ip: None,
                cost: Cost::ONE,
                status: None,
                latency_ms: None,
                label: None,
            };
            traffic.push(0, line, &parsed);
        }
        assert_eq!(traffic.endpoints, [Box::from("/api/export")]);
        assert!(traffic.records.iter().all(|r| r.endpoint == 0));
    }
}
