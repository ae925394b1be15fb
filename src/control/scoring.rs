//! From a cycle's features to scores and standings: who is scored, the novelty rule, and
//! what is told of a flag when it begins and when it ends.
//!
//! A subject whose features lie outside the range the model was trained on is *novel*: it is
//! scored at the range's edge (the model never extrapolates) and its score alone flags
//! nothing. It is flagged only when a second signal agrees: the policy's own limits, as
//! written, denied at least [`SECOND_SIGNAL_DENIED_RATIO`] of its requests in the window, or
//! it asked at least [`SECOND_SIGNAL_DEMAND`] times what they allow over the window.

use super::CycleOutcome;
use super::flags::{EndedFlag, FlagTracker, Scored};
use super::model_slot::ModelSlot;
use crate::clock::Micros;
use crate::features::{FEATURE_COUNT, FEATURE_NAMES, ObservedSubjects, SubjectFeatures};
use crate::limit::KeyHash;
use crate::metrics::Metrics;
use crate::model::Model;
pub use crate::model::{SECOND_SIGNAL_DEMAND, SECOND_SIGNAL_DENIED_RATIO};
use crate::policy::Policy;

/// The `top_feature` label values of `ratewarden_flags_total`: a feature, or `none` when the
/// model's score is not a sum of features (`gmm`) or no feature pushed it up.
pub const TOP_FEATURE_LABELS: [&str; FEATURE_COUNT + 1] = {
    let mut labels = [""; FEATURE_COUNT + 1];
    let mut i = 0;
    while i < FEATURE_COUNT {
        labels[i] = FEATURE_NAMES[i];
        i += 1;
    }
    labels[FEATURE_COUNT] = "none";
    labels
};

/// How many features a flag's log line (and replay's report of a flag) names.
const TOLD_FEATURES: usize = 3;

/// A flag that began this cycle, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct BegunFlag {
    pub subject: KeyHash,
    pub score: f64,
    pub model_version: String,
    /// Feature names with their contributions to the logit, largest first.
    pub top_features: Vec<(&'static str, f64)>,
}

impl BegunFlag {
    fn of(model: &Model, subject: KeyHash, observed: &SubjectFeatures) -> BegunFlag {
        let explanation = model.explain(observed);
        BegunFlag {
            subject,
            score: explanation.score,
            model_version: model.version().to_owned(),
            top_features: explanation.top_features(TOLD_FEATURES),
        }
    }

    /// Logs the flag (the subject by its keyed hash: raw ids are never kept) and counts it
    /// by its top feature.
    pub fn announce(&self, metrics: &Metrics) {
        let top = self.top_features.first().map_or("none", |(f, _)| f);
        metrics.flags.with_label_values(&[top]).inc();
        let why: Vec<String> = self
            .top_features
            .iter()
            .map(|(f, c)| format!("{f} {c:+.2}"))
            .collect();
        tracing::info!(
            subject = %self.subject,
            score = %format_args!("{:.4}", self.score),
            model = %self.model_version,
            "subject flagged; top features (logit contributions): {}",
            if why.is_empty() { "none".to_owned() } else { why.join(", ") }
        );
    }
}

/// Logs a flag that ended by itself (the subject by its keyed hash), so an analyst who saw it
/// begin sees when and why the subject's limits were whole again.
pub fn announce_ended(flag: &EndedFlag, now: Micros) {
    // To the nearest second: cycles start a few microseconds either side of whole seconds, and
    // a 20 s hold ended at the cycle 21 s in must not read "20 s".
    let lasted = now.saturating_sub(flag.since).saturating_add(500_000) / 1_000_000;
    let why = match flag.score {
        None => "its hold is over and it was not scored since (too few requests)".to_owned(),
        Some(score) if flag.novel => format!(
            "its score {score:.4} no longer counts: outside the model's training range with no second signal"
        ),
        Some(score) => format!("its score {score:.4} is below the threshold after its hold"),
    };
    tracing::info!(subject = %flag.subject, "subject flag ended after {lasted} s: {why}");
}

/// Scores the subjects with enough requests and judges them.
pub(super) fn decide_with(
    model: &ModelSlot,
    judge: &mut FlagTracker,
    policy: &Policy,
    threshold: f64,
    now: Micros,
    totals: Vec<(KeyHash, SubjectFeatures)>,
    allowlisted: &hashbrown::HashSet<KeyHash>,
) -> CycleOutcome {
    let anomaly = &policy.adaptive.anomaly;
    let min_requests = anomaly.min_requests.get();
    let model = model.get();
    let scored: Vec<(Scored, bool)> = match &model {
        Some(model) => totals
            .iter()
            .filter(|(_, o)| o.requests >= min_requests)
            .map(|(subject, observed)| {
                let assessment = model.assess(observed);
                let scored = Scored {
                    subject: *subject,
                    score: assessment.score,
                    novel: !assessment.score_counts(),
                };
                (scored, assessment.novel)
            })
            .collect(),
        None => {
            // No model: nobody is scored and nobody stays flagged.
            judge.clear();
            Vec::new()
        }
    };
    let novel: Vec<KeyHash> = scored
        .iter()
        .filter(|(_, novel)| *novel)
        .map(|(s, _)| s.subject)
        .collect();
    let scored: Vec<Scored> = scored.into_iter().map(|(s, _)| s).collect();
    let standings = judge.judge(now, &scored, threshold, anomaly.hold, allowlisted);
    let observed = ObservedSubjects::new(totals);
    let begun = match &model {
        Some(model) => judge
            .begun()
            .iter()
            .filter_map(|subject| Some(BegunFlag::of(model, *subject, observed.get(subject)?)))
            .collect(),
        None => Vec::new(),
    };
    CycleOutcome {
        standings,
        scores: scored.iter().map(|s| s.score).collect(),
        observed,
        novel,
        begun,
        ended: judge.ended().to_vec(),
    }
}

/// How many subjects newly novel in one cycle get a log line of their own.
const NOVEL_LINES_PER_CYCLE: usize = 10;

/// The subjects novel at the last cycle, so each is logged once when it becomes novel.
#[derive(Debug, Default)]
pub(super) struct NovelSubjects {
    last: hashbrown::HashSet<KeyHash>,
}

impl NovelSubjects {
    /// Logs the subjects that became novel this cycle, naming the features outside the
    /// training range (the subject by its keyed hash).
    pub(super) fn announce(&mut self, model: &ModelSlot, verdict: &CycleOutcome) {
        let Some(model) = model.get() else {
            self.last.clear();
            return;
        };
        let new: Vec<&KeyHash> = verdict
            .novel
            .iter()
            .filter(|s| !self.last.contains(*s))
            .collect();
        for subject in new.iter().take(NOVEL_LINES_PER_CYCLE) {
            let Some(observed) = verdict.observed.get(subject) else {
                continue;
            };
            let outside: Vec<&str> = model
                .explain(observed)
                .features
                .iter()
                .filter(|c| c.outside_training_range)
                .map(|c| c.feature)
                .collect();
            // With the second signal the score counts: saying it flags nothing would read as a
            // void flag to an analyst who sees the flag's own line next to this one.
            let counts = if model.assess(observed).score_counts() {
                "its score counts: its limits agree (the second signal)"
            } else {
                "its score alone flags nothing"
            };
            tracing::info!(
                subject = %subject,
                model = %model.version(),
                "subject novel: outside the model's training range in {}; {counts}",
                outside.join(", ")
            );
        }
        if new.len() > NOVEL_LINES_PER_CYCLE {
            tracing::info!(
                "{} more subjects novel this cycle",
                new.len() - NOVEL_LINES_PER_CYCLE
            );
        }
        self.last = verdict.novel.iter().copied().collect();
    }
}
