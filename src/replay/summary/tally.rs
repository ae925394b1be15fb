//! The running counts of one replay pass, and the [`Summary`] they finish into.

mod unflagged;

use super::{
    FeatureContribution, FlaggedRow, LabelStats, ReasonCounts, RuleRow, SubjectRow, Summary, TOP,
    TierRow, Timeline,
};
use crate::clock::Micros;
use crate::engine::{CheckError, Decision, Reason};
use crate::replay::input::time::format_rfc3339;
use crate::replay::traffic::{Record, Traffic};
use crate::simulate::Label;
use std::collections::HashMap;

#[derive(Debug, Clone)]
struct Flag {
    /// The features that pushed its score up most at its first flag, with their
    /// contributions to the logit (empty until explained).
    why: Vec<(&'static str, f64)>,
    first: Micros,
    episodes: u64,
    max_score: f64,
    now: bool,
    /// Flagged at the cycle noted before the last one: `now` and not `was` starts an episode.
    was: bool,
}

/// What scoring a subject takes, to say why one was never scored.
#[derive(Debug, Clone)]
pub struct Scoring {
    /// Whether a model is in force (none: nobody is scored).
    pub model: bool,
    pub min_requests: u64,
    /// `adaptive.anomaly.window`, as the policy writes it.
    pub window: String,
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
    /// Each subject's highest score, `None` while it was never scored.
    scores: Vec<Option<f64>>,
    /// Per subject, its highest score of the cycles where it was novel with no second signal
    /// (the score alone flagged nothing).
    novel_scores: Vec<Option<f64>>,
    scoring: Scoring,
    labels: LabelStats,
    labelled: bool,
    timeline: Timeline,
}

impl Tally {
    pub fn new(traffic: &Traffic, threshold: f64, scoring: Scoring) -> Self {
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
            scores: vec![None; traffic.subjects.len()],
            novel_scores: vec![None; traffic.subjects.len()],
            scoring,
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
            flag.was = flag.now;
            flag.now = false;
        }
        for (subject, score) in flagged {
            let flag = self.flags.entry(subject).or_insert(Flag {
                why: Vec::new(),
                first: now,
                episodes: 0,
                max_score: score,
                now: false,
                was: false,
            });
            flag.max_score = flag.max_score.max(score);
            // A run of consecutive flagged cycles is one episode.
            flag.episodes += u64::from(!flag.was && !flag.now);
            flag.now = true;
        }
    }

    /// Notes why subjects were flagged (the features that pushed their scores up most), for
    /// those not explained yet: at their first flag, as the daemon's log line names it.
    pub fn explain_first_flags(
        &mut self,
        begun: impl Iterator<Item = (u32, Vec<(&'static str, f64)>)>,
    ) {
        for (subject, why) in begun {
            if let Some(flag) = self.flags.get_mut(&subject).filter(|f| f.why.is_empty()) {
                flag.why = why;
            }
        }
    }

    /// Notes the scores of a control cycle (every subject scored, flagged or not), and whether
    /// each subject was novel with no second signal.
    pub fn scored(&mut self, scores: impl Iterator<Item = (u32, f64, bool)>) {
        let higher = |best: &mut Option<f64>, score: f64| {
            *best = Some(best.map_or(score, |b| b.max(score)));
        };
        for (subject, score, novel) in scores {
            higher(&mut self.scores[subject as usize], score);
            if novel {
                higher(&mut self.novel_scores[subject as usize], score);
            }
        }
    }

    /// Whether any subject was flagged at the last cycle noted.
    pub fn any_flagged_now(&self) -> bool {
        self.flags.values().any(|f| f.now)
    }

    pub fn finish(self, traffic: &Traffic, labels: &[Option<Label>]) -> Summary {
        let name = |s: u32| traffic.subjects[s as usize].to_string();
        let flagged = self.flagged_rows(&name, labels);
        let top_denied = self.top_denied(&name, labels);
        let label_stats = self.label_stats(labels);
        let abuse_unflagged = self.abuse_unflagged(&name, labels);
        let (never_scored, never_scored_top) = self.never_scored(&name, labels);
        Summary {
            threshold: self.threshold,
            requests: self.requests,
            allowed: self.allowed,
            denied: self.denied,
            shadow_denied: self.shadow_denied,
            undecidable: self.undecidable,
            undecidable_examples: self.undecidable_examples,
            denied_by_reason: self.reasons,
            by_rule: rule_rows(self.rules),
            by_tier: tier_rows(self.tiers),
            subjects: self.per_subject.iter().filter(|s| s.0 > 0).count() as u64,
            subjects_flagged: flagged.len() as u64,
            flagged,
            abuse_unflagged,
            never_scored,
            never_scored_top,
            top_denied,
            labels: self.labelled.then_some(label_stats),
            timeline: self.timeline,
            load: None,
        }
    }

    /// Every subject ever flagged, the earliest first.
    fn flagged_rows(
        &self,
        name: &impl Fn(u32) -> String,
        labels: &[Option<Label>],
    ) -> Vec<FlaggedRow> {
        let mut flagged: Vec<FlaggedRow> = self
            .flags
            .iter()
            .map(|(&s, f)| FlaggedRow {
                subject: name(s),
                first_flagged: format_rfc3339(f.first),
                first_flagged_after_s: f.first.saturating_sub(self.first) as f64 / 1e6,
                episodes: f.episodes,
                // The subject's highest score of any cycle, flagged or not (one reached while
                // novel flagged nothing, yet it is the top score).
                max_score: self.scores[s as usize].map_or(f.max_score, |b| b.max(f.max_score)),
                requests: self.per_subject[s as usize].0,
                denied: self.per_subject[s as usize].1,
                label: labels[s as usize],
                top_features: f
                    .why
                    .iter()
                    .map(|&(feature, contribution)| FeatureContribution {
                        feature,
                        contribution,
                    })
                    .collect(),
            })
            .collect();
        flagged.sort_by(|a, b| {
            a.first_flagged_after_s
                .total_cmp(&b.first_flagged_after_s)
                .then_with(|| a.subject.cmp(&b.subject))
        });
        flagged
    }

    /// The [`TOP`] subjects denied most (ties in subject index order).
    fn top_denied(
        &self,
        name: &impl Fn(u32) -> String,
        labels: &[Option<Label>],
    ) -> Vec<SubjectRow> {
        let mut top: Vec<u32> = (0..self.per_subject.len() as u32)
            .filter(|&s| self.per_subject[s as usize].1 > 0)
            .collect();
        top.sort_by_key(|&s| (std::cmp::Reverse(self.per_subject[s as usize].1), s));
        top.truncate(TOP);
        top.into_iter()
            .map(|s| SubjectRow {
                subject: name(s),
                requests: self.per_subject[s as usize].0,
                denied: self.per_subject[s as usize].1,
                flagged: self.flags.contains_key(&s),
                label: labels[s as usize],
            })
            .collect()
    }

    /// The request counts by label, with the labelled subjects and how many were flagged.
    fn label_stats(&self, labels: &[Option<Label>]) -> LabelStats {
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
        label_stats
    }
}

/// One row per tier and rule that denied, the most denials first.
fn rule_rows(rules: HashMap<String, HashMap<String, (ReasonCounts, u64)>>) -> Vec<RuleRow> {
    let mut by_rule: Vec<RuleRow> = rules
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
    by_rule
}

/// One row per tier, the most requests first.
fn tier_rows(tiers: HashMap<String, (u64, u64)>) -> Vec<TierRow> {
    let mut by_tier: Vec<TierRow> = tiers
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
    by_tier
}
