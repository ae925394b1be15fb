//! What one replay pass did, counted as it goes: decisions by outcome, reason, rule and tier,
//! subjects flagged and when, the subjects denied most, label shares, denials over time.
//!
//! Rule and tier are named as the metrics name them (`Metrics::record_decision`): the limit
//! that denied (or would have, in shadow), else the headline; the tier or descriptor domain.

mod tally;

pub use tally::{Scoring, Tally};

use super::input::time::format_rfc3339;
use crate::clock::Micros;
use crate::engine::Reason;
use crate::simulate::Label;
use serde::Serialize;

/// Rows kept in the top-subjects list.
pub const TOP: usize = 10;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ReasonCounts {
    pub quota: u64,
    pub burst: u64,
    pub load: u64,
    pub anomaly: u64,
    pub store_unavailable: u64,
}

impl ReasonCounts {
    pub fn add(&mut self, reason: Reason) {
        *match reason {
            Reason::Quota => &mut self.quota,
            Reason::Burst => &mut self.burst,
            Reason::Load => &mut self.load,
            Reason::Anomaly => &mut self.anomaly,
            Reason::StoreUnavailable => &mut self.store_unavailable,
        } += 1;
    }

    /// (label, count) in a fixed order.
    pub fn pairs(&self) -> [(&'static str, u64); 5] {
        [
            ("quota", self.quota),
            ("burst", self.burst),
            ("load", self.load),
            ("anomaly", self.anomaly),
            ("store_unavailable", self.store_unavailable),
        ]
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RuleRow {
    pub rule: String,
    pub tier: String,
    pub denied: u64,
    pub reasons: ReasonCounts,
    pub shadow_denied: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TierRow {
    pub tier: String,
    pub requests: u64,
    pub denied: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct FlaggedRow {
    pub subject: String,
    pub first_flagged: String,
    /// Seconds from the first request of the replay.
    pub first_flagged_after_s: f64,
    /// Runs of consecutive flagged control cycles (a subject flagged once and held is 1).
    pub episodes: u64,
    pub max_score: f64,
    pub requests: u64,
    pub denied: u64,
    pub label: Option<Label>,
    /// Why, at its first flag: the features that pushed its score up most, largest first (the
    /// daemon's flag log line names the same; empty for a kind of model whose score is not a
    /// sum of contributions).
    pub top_features: Vec<FeatureContribution>,
}

/// One feature's contribution to a score's logit.
#[derive(Debug, Clone, Serialize)]
pub struct FeatureContribution {
    pub feature: &'static str,
    pub contribution: f64,
}

/// A subject that was never flagged, and why.
#[derive(Debug, Clone, Serialize)]
pub struct UnflaggedRow {
    pub subject: String,
    pub requests: u64,
    /// Its highest score; `None` when it was never scored.
    pub max_score: Option<f64>,
    pub label: Option<Label>,
    pub why: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SubjectRow {
    pub subject: String,
    pub requests: u64,
    pub denied: u64,
    pub flagged: bool,
    pub label: Option<Label>,
}

/// Counts over labelled requests and subjects (JSON lines with `label`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LabelStats {
    pub abuse_requests: u64,
    pub abuse_denied: u64,
    pub abuse_denied_anomaly: u64,
    pub normal_requests: u64,
    pub normal_denied: u64,
    pub normal_denied_anomaly: u64,
    pub abuse_subjects: u64,
    pub abuse_subjects_flagged: u64,
    pub normal_subjects: u64,
    pub normal_subjects_flagged: u64,
}

impl LabelStats {
    /// Share of abuse requests denied, for any reason.
    pub fn abuse_denied_share(&self) -> f64 {
        share(self.abuse_denied, self.abuse_requests)
    }

    /// Share of normal requests denied, for any reason.
    pub fn normal_denied_share(&self) -> f64 {
        share(self.normal_denied, self.normal_requests)
    }
}

pub fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Bucket {
    pub requests: u64,
    pub denied: ReasonCounts,
}

#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    pub start: String,
    #[serde(skip)]
    pub start_micros: Micros,
    pub bucket_seconds: u64,
    pub buckets: Vec<Bucket>,
}

/// Bucket widths, in seconds, the timeline picks from: the smallest that gives at most
/// [`MAX_BUCKETS`].
const WIDTHS: [u64; 15] = [
    1, 5, 10, 30, 60, 300, 600, 1800, 3600, 7200, 21600, 86400, 604_800, 2_592_000, 31_536_000,
];
const MAX_BUCKETS: u64 = 300;

impl Timeline {
    fn new(first: Micros, last: Micros) -> Self {
        let span = (last - first) / 1_000_000 + 1;
        let width = WIDTHS
            .iter()
            .copied()
            .find(|w| span.div_ceil(*w) <= MAX_BUCKETS)
            .unwrap_or(WIDTHS[WIDTHS.len() - 1]);
        Timeline {
            start: format_rfc3339(first),
            start_micros: first,
            bucket_seconds: width,
            buckets: vec![Bucket::default(); span.div_ceil(width) as usize],
        }
    }

    fn bucket(&mut self, at: Micros) -> Option<&mut Bucket> {
        let index =
            (at.saturating_sub(self.start_micros) / 1_000_000 / self.bucket_seconds) as usize;
        self.buckets.get_mut(index)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub threshold: f64,
    pub requests: u64,
    pub allowed: u64,
    pub denied: u64,
    pub shadow_denied: u64,
    /// Requests the policy cannot decide (an unknown tier, a `key: ip` rule without an
    /// address), left out of every other count.
    pub undecidable: u64,
    pub undecidable_examples: Vec<String>,
    pub denied_by_reason: ReasonCounts,
    pub by_rule: Vec<RuleRow>,
    pub by_tier: Vec<TierRow>,
    pub subjects: u64,
    pub subjects_flagged: u64,
    pub flagged: Vec<FlaggedRow>,
    /// Subjects labelled abuse that were never flagged, with why.
    pub abuse_unflagged: Vec<UnflaggedRow>,
    /// Subjects with requests that were never scored (below `min_requests`, or no model).
    pub never_scored: u64,
    /// The [`TOP`] of those with the most requests, with why.
    pub never_scored_top: Vec<UnflaggedRow>,
    pub top_denied: Vec<SubjectRow>,
    pub labels: Option<LabelStats>,
    pub timeline: Timeline,
    /// How the `upstream` load source moved the load factor (`None` with another source).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadStats>,
}

/// The load factor the `upstream` source gave over the replay, from the log's statuses and
/// latencies of the allowed requests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LoadStats {
    pub lowest_factor: f64,
    pub highest_factor: f64,
    /// Log time spent with the factor below 1 (limits shrunk), and above 1.
    pub seconds_below_one: f64,
    pub seconds_above_one: f64,
    /// Allowed requests whose latency the log gave, of those reported.
    pub latencies: u64,
    pub reported: u64,
}
