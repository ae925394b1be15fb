//! Why a subject scored what it did: each feature's share of the logit, so a security team
//! can defend or overrule a flag.
//!
//! For the logistic kind the logit is a sum: the intercept, each feature's weight times its
//! value, and each pair's weight times both values (a pair's term is split evenly between
//! its two features). The evidence rule ([`super::evidence`]) bounds and shrinks that sum;
//! the same factor is applied to every feature's part and the rest goes to `base`, so
//! `base + Σ contributions` is exactly the score's logit.

use super::logistic::Logistic;
use super::{Model, Scorer};
use crate::features::{FEATURE_COUNT, FEATURE_NAMES, SubjectFeatures};
use serde::Serialize;

/// One feature's value and its part of the logit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Contribution {
    pub feature: &'static str,
    pub value: f64,
    /// `None` for a kind whose score is not a sum (`gmm`).
    pub contribution: Option<f64>,
    /// The value lies outside the range the training data covered (it was scored at the
    /// range's edge).
    pub outside_training_range: bool,
}

/// A score taken apart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub score: f64,
    /// `ln(score / (1 - score))`, as computed (before the logistic function).
    pub logit: f64,
    /// The part of the logit no feature carries: the intercept and the prior's pull.
    pub base: f64,
    /// The model's weight after this many requests (the evidence rule).
    pub evidence_weight: f64,
    /// Some feature lies outside the training range on the side that raises the score (see
    /// [`Model::is_novel`]).
    pub novel: bool,
    pub features: Vec<Contribution>,
}

impl Explanation {
    /// The `n` features that push the score up most, with their contributions, largest
    /// first (none for a kind whose score is not a sum).
    pub fn top_features(&self, n: usize) -> Vec<(&'static str, f64)> {
        let mut parts: Vec<(&'static str, f64)> = self
            .features
            .iter()
            .filter_map(|c| Some((c.feature, c.contribution?)))
            .filter(|(_, c)| *c > 0.0)
            .collect();
        parts.sort_by(|a, b| b.1.total_cmp(&a.1));
        parts.truncate(n);
        parts
    }
}

/// Each feature's part of a logistic model's raw logit (before the evidence rule).
fn logistic_parts(l: &Logistic, x: &[f64; FEATURE_COUNT]) -> [f64; FEATURE_COUNT] {
    let mut parts: [f64; FEATURE_COUNT] = std::array::from_fn(|j| l.weights[j] * x[j]);
    if !l.interactions.is_empty() {
        let mut k = 0;
        for i in 0..FEATURE_COUNT {
            for j in i..FEATURE_COUNT {
                let term = l.interactions[k] * x[i] * x[j];
                if i == j {
                    parts[i] += term;
                } else {
                    parts[i] += term / 2.0;
                    parts[j] += term / 2.0;
                }
                k += 1;
            }
        }
    }
    parts
}

impl Model {
    /// The score of one subject, taken apart.
    pub fn explain(&self, observed: &SubjectFeatures) -> Explanation {
        let x = self.scaler.apply(&observed.features);
        let raw = observed.features.to_array();
        let outside: Vec<usize> = self
            .scaler
            .outside(&observed.features)
            .map(|(j, _)| j)
            .collect();
        let evidence = &self.evidence;
        let w = evidence.weight(observed.requests);
        let z = self.raw_logit(&x);
        let logit = evidence.apply(z, observed.requests);
        let (base, parts) = match &self.scorer {
            Scorer::Logistic(l) => {
                let parts = logistic_parts(l, &x);
                let bound = |v: f64| v.clamp(-evidence.max_logit, evidence.max_logit);
                // The features move the logit from the bounded intercept to the bounded sum;
                // bounding is monotone, so the share kept lies in [0, 1] and no part changes
                // sign, even for an intercept beyond the bound.
                let anchor = bound(l.intercept);
                let spread = z - l.intercept;
                let kept = if spread == 0.0 {
                    1.0
                } else {
                    (bound(z) - anchor) / spread
                };
                let base = evidence.prior_logit * (1.0 - w) + w * anchor;
                (base, parts.map(|p| Some(w * kept * p)))
            }
            Scorer::Mixture(_) => (logit, [None; FEATURE_COUNT]),
        };
        Explanation {
            score: super::logistic::sigmoid(logit),
            logit,
            base,
            evidence_weight: w,
            novel: self.is_novel(&observed.features),
            features: (0..FEATURE_COUNT)
                .map(|j| Contribution {
                    feature: FEATURE_NAMES[j],
                    value: raw[j],
                    // `+ 0.0` turns the -0.0 of a weight-0 feature with a negative value into 0.
                    contribution: parts[j].map(|c| c + 0.0),
                    outside_training_range: outside.contains(&j),
                })
                .collect(),
        }
    }
}
