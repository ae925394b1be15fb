//! Everything a replay found, as one value: printed as the table, written by `--report` as
//! JSON, drawn by `--plot`.

use super::summary::Summary;
use super::sweep::SweepRow;
use super::traffic::{FileStats, LineProblem};
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    pub path: PathBuf,
    pub kind: &'static str,
    pub version: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub policy: PathBuf,
    /// The model in force; `None` without one (no anomaly scaling).
    pub model: Option<ModelInfo>,
    /// `--subject`.
    pub subject: String,
    pub inputs: Vec<FileStats>,
    pub lines_skipped: u64,
    /// The first lines skipped, with their numbers and why.
    pub skipped_examples: Vec<LineProblem>,
    /// Lines whose chosen subject was absent (the fallback was used).
    pub subject_fallbacks: u64,
    pub start: String,
    pub end: String,
    pub span_seconds: f64,
    pub load_factor: f64,
    /// The replay at the policy's threshold.
    pub summary: Summary,
    /// One row per `--sweep` value, in ascending order.
    pub sweep: Option<Vec<SweepRow>>,
}
