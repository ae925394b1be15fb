//! `train --samples-out`: every feature sample `train` draws its fit from, one JSON line each.
//!
//! A security team may want to try a model of its own (trees, another library, its own labels)
//! on exactly what the daemon sees. Replaying traffic through the policy is the part only
//! ratewarden can do, so `train` hands its samples out rather than each team rebuilding the
//! feature code. Subjects are numbered, never named: the file carries no user id.

use super::samples::Samples;
use crate::features::Features;
use serde::Serialize;
use std::io::{BufWriter, Write};
use std::path::Path;

/// One line: a subject's features at one sampling instant.
#[derive(Serialize)]
struct Line<'a> {
    /// The subject's number, the same on every line of that subject.
    subject: u32,
    archetype: Option<&'a str>,
    /// `abuse` or `normal`; absent when the traffic is unlabelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<&'static str>,
    /// Requests in the window behind the features.
    requests: u64,
    #[serde(flatten)]
    features: &'a Features,
}

/// Writes every sample of `samples` to `path` (replacing it) as JSON lines.
pub fn write(samples: &Samples, path: &Path) -> std::io::Result<()> {
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    for sample in &samples.samples {
        let subject = samples.subjects.get(sample.subject as usize);
        let line = Line {
            subject: sample.subject,
            archetype: subject.and_then(|s| s.archetype.as_deref()),
            label: samples.labelled.then_some(match sample.abuse {
                true => "abuse",
                false => "normal",
            }),
            requests: sample.requests,
            features: &sample.features,
        };
        serde_json::to_writer(&mut out, &line)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
