//! What one replay pass did, counted as it goes: decisions by outcome, reason, rule and tier,
//! subjects flagged and when, the subjects denied most, label shares, denials over time.
//!
//! Rule and tier are named as the metrics name them (`Metrics::record_decision`): the limit
//! that denied (or would have, in shadow), else the headline; the tier or descriptor domain.

use super::input::time::format_rfc3339;
use super::traffic::{Record, Traffic};
use crate::clock::Micros;
use crate::engine::{CheckError, Decision, Reason};
use crate::simulate::Label;
use serde::Serialize;
use std::collections::HashMap;

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
    /// Times it went from not flagged to flagged.
    pub episodes: u64,
    pub max_score: f64,
    pub requests: u64,
    pub denied: u64,
    pub label: Option<Label>,
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
    pub top_denied: Vec<SubjectRow>,
    pub labels: Option<LabelStats>,
    pub timeline: Timeline,
}

#[derive(Debug, Clone, Copy)]
struct Flag {
    first: Micros,
    episodes: u64,
    max_score: f64,
    now: bool,
}

/// The running counts of one pass.
pub struct Tally {
    threshold: f64,
    first: Micros,
    requests: u64,
    allowed: u64,
    denied: u64,
    shadow_denied: u64,
    undecidable: u64,
    undecidable_examples: Vec<String>,
    reasons: ReasonCounts,
    /// tier → rule → (denials by reason, shadow denials)
    rules: HashMap<String, HashMap<String, (ReasonCounts, u64)>>,
    /// tier → (requests, denied)
    tiers: HashMap<String, (u64, u64)>,
    per_subject: Vec<(u64, u64)>,
    flags: HashMap<u32, Flag>,
    labels: LabelStats,
    labelled: bool,
    timeline: Timeline,
}

impl Tally {
    pub fn new(traffic: &Traffic, threshold: f64) -> Self {
        let first = traffic.first().unwrap_or(0);
        Tally {
            threshold,
            first,
            requests: 0,
            allowed: 0,
            denied: 0,
            shadow_denied: 0,
            undecidable: 0,
            undecidable_examples: Vec::new(),
            reasons: ReasonCounts::default(),
            rules: HashMap::new(),
            tiers: HashMap::new(),
            per_subject: vec![(0, 0); traffic.subjects.len()],
            flags: HashMap::new(),
            labels: LabelStats::default(),
            labelled: false,
            timeline: Timeline::new(first, traffic.last().unwrap_or(first)),
        }
    }

    pub fn add(&mut self, record: &Record, result: &Result<Decision, CheckError>) {
        let decision = match result {
            Ok(decision) => decision,
            Err(error) => {
                self.undecidable += 1;
                let message = error.to_string();
                if self.undecidable_examples.len() < 5
                    && !self.undecidable_examples.contains(&message)
                {
                    self.undecidable_examples.push(message);
                }
                return;
            }
        };
        self.requests += 1;
        let subject = &mut self.per_subject[record.subject as usize];
        subject.0 += 1;
        let tier = decision.tier_name();
        let tier_row = match self.tiers.get_mut(tier) {
            Some(row) => row,
            None => self.tiers.entry(tier.to_owned()).or_default(),
        };
        tier_row.0 += 1;
        let reason = decision.reason.filter(|_| !decision.allowed);
        if let Some(bucket) = self.timeline.bucket(record.at) {
            bucket.requests += 1;
            if let Some(reason) = reason {
                bucket.denied.add(reason);
            }
        }
        match record.label {
            Some(Label::Abuse) => {
                self.labelled = true;
                self.labels.abuse_requests += 1;
                self.labels.abuse_denied += u64::from(!decision.allowed);
                self.labels.abuse_denied_anomaly += u64::from(reason == Some(Reason::Anomaly));
            }
            Some(Label::Normal) => {
                self.labelled = true;
                self.labels.normal_requests += 1;
                self.labels.normal_denied += u64::from(!decision.allowed);
                self.labels.normal_denied_anomaly += u64::from(reason == Some(Reason::Anomaly));
            }
            None => {}
        }
        let shadow = decision.allowed && decision.shadow;
        if decision.allowed && !shadow {
            self.allowed += 1;
            return;
        }
        let rule = decision
            .deciding_limit()
            .map_or("none", |l| l.name.as_str());
        let rules = match self.rules.get_mut(tier) {
            Some(rules) => rules,
            None => self.rules.entry(tier.to_owned()).or_default(),
        };
        let row = match rules.get_mut(rule) {
            Some(row) => row,
            None => rules.entry(rule.to_owned()).or_default(),
        };
        if shadow {
            self.allowed += 1;
            self.shadow_denied += 1;
            row.1 += 1;
            return;
        }
        self.denied += 1;
        tier_row.1 += 1;
        subject.1 += 1;
        if let Some(reason) = reason {
            self.reasons.add(reason);
            row.0.add(reason);
        }
    }

    /// Notes the flagged subjects after a control cycle at `now`.
    pub fn flagged(&mut self, now: Micros, flagged: impl Iterator<Item = (u32, f64)>) {
        for flag in self.flags.values_mut() {
            flag.now = false;
        }
        for (subject, score) in flagged {
            let flag = self.flags.entry(subject).or_insert(Flag {
                first: now,
                episodes: 0,
                max_score: score,
                now: false,
            });
            flag.max_score = flag.max_score.max(score);
            flag.episodes += u64::from(!flag.now);
            flag.now = true;
        }
    }

    /// Whether any subject was flagged at the last cycle noted.
    pub fn any_flagged_now(&self) -> bool {
        self.flags.values().any(|f| f.now)
    }

    pub fn finish(self, traffic: &Traffic, labels: &[Option<Label>]) -> Summary {
        let name = |s: u32| traffic.subjects[s as usize].to_string();
        let mut flagged: Vec<FlaggedRow> = self
            .flags
            .iter()
            .map(|(&s, f)| FlaggedRow {
                subject: name(s),
                first_flagged: format_rfc3339(f.first),
                first_flagged_after_s: f.first.saturating_sub(self.first) as f64 / 1e6,
                episodes: f.episodes,
                max_score: f.max_score,
                requests: self.per_subject[s as usize].0,
                denied: self.per_subject[s as usize].1,
                label: labels[s as usize],
            })
            .collect();
        flagged.sort_by(|a, b| {
            a.first_flagged_after_s
                .total_cmp(&b.first_flagged_after_s)
                .then_with(|| a.subject.cmp(&b.subject))
        });
        let mut top: Vec<u32> = (0..self.per_subject.len() as u32)
            .filter(|&s| self.per_subject[s as usize].1 > 0)
            .collect();
        top.sort_by_key(|&s| (std::cmp::Reverse(self.per_subject[s as usize].1), s));
        top.truncate(TOP);
        let top_denied = top
            .into_iter()
            .map(|s| SubjectRow {
                subject: name(s),
                requests: self.per_subject[s as usize].0,
                denied: self.per_subject[s as usize].1,
                flagged: self.flags.contains_key(&s),
                label: labels[s as usize],
            })
            .collect();
        let mut by_rule: Vec<RuleRow> = self
            .rules
            .into_iter()
            .flat_map(|(tier, rules)| {
                rules
                    .into_iter()
                    .map(move |(rule, (reasons, shadow))| RuleRow {
                        rule,
                        tier: tier.clone(),
                        denied: reasons.pairs().iter().map(|(_, n)| n).sum(),
                        reasons,
                        shadow_denied: shadow,
                    })
            })
            .collect();
        by_rule.sort_by(|a, b| {
            (b.denied, b.shadow_denied)
                .cmp(&(a.denied, a.shadow_denied))
                .then_with(|| (&a.tier, &a.rule).cmp(&(&b.tier, &b.rule)))
        });
        let mut by_tier: Vec<TierRow> = self
            .tiers
            .into_iter()
            .map(|(tier, (requests, denied))| TierRow {
                tier,
                requests,
                denied,
            })
            .collect();
        by_tier.sort_by(|a, b| {
            b.requests
                .cmp(&a.requests)
                .then_with(|| a.tier.cmp(&b.tier))
        });
        let mut label_stats = self.labels;
        for (s, label) in labels.iter().enumerate() {
            let was_flagged = self.flags.contains_key(&(s as u32));
            match label {
                Some(Label::Abuse) => {
                    label_stats.abuse_subjects += 1;
                    label_stats.abuse_subjects_flagged += u64::from(was_flagged);
                }
                Some(Label::Normal) => {
                    label_stats.normal_subjects += 1;
                    label_stats.normal_subjects_flagged += u64::from(was_flagged);
                }
                None => {}
            }
        }
        Summary {
            threshold: self.threshold,
            requests: self.requests,
            allowed: self.allowed,
            denied: self.denied,
            shadow_denied: self.shadow_denied,
            undecidable: self.undecidable,
            undecidable_examples: self.undecidable_examples,
            denied_by_reason: self.reasons,
            by_rule,
            by_tier,
            subjects: self.per_subject.iter().filter(|s| s.0 > 0).count() as u64,
            subjects_flagged: flagged.len() as u64,
            flagged,
            top_denied,
            labels: self.labelled.then_some(label_stats),
            timeline: self.timeline,
        }
    }
}
