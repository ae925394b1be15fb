//! Whether a model's arithmetic stays a number over every row it can be asked to score.
//!
//! A model file's checks take each number finite, yet a scale of 1e-320, weights of 1e308 or a
//! mixture's mean of 1e308 overflow: a NaN logit read as a score of 0 (never flagged), a NaN
//! log-likelihood as 1 (everyone flagged). Rows are clamped to the training range before they
//! are scored, so that range is all a model has to hold over.

use super::scaler::Scaler;
use super::{Model, Scorer};
use crate::features::FEATURE_COUNT;

impl Model {
    /// Whether every row within the training range gets a logit (for a mixture, a
    /// log-likelihood) that is a number.
    pub(crate) fn scores_everywhere(&self) -> bool {
        let Some((lows, highs)) = standardised_range(&self.scaler) else {
            return false;
        };
        match &self.scorer {
            // A linear logit's terms are largest at the range's edges: if even the sum of
            // their magnitudes is finite, no row overflows.
            Scorer::Logistic(l) => {
                let reach = std::array::from_fn(|j| lows[j].abs().max(highs[j].abs()));
                l.logit_bound(&reach).is_finite()
            }
            // A mixture's likelihood has no such bound: try every corner of the range, its
            // centre, and each feature alone at either edge.
            Scorer::Mixture(m) => {
                let corners = (0..1u32 << FEATURE_COUNT).map(|bits| {
                    std::array::from_fn(|j| {
                        if bits >> j & 1 == 1 {
                            highs[j]
                        } else {
                            lows[j]
                        }
                    })
                });
                let one_edge = (0..FEATURE_COUNT).flat_map(|j| {
                    [lows[j], highs[j]].map(|edge| {
                        let mut x = [0.0; FEATURE_COUNT];
                        x[j] = edge;
                        x
                    })
                });
                std::iter::once([0.0; FEATURE_COUNT])
                    .chain(corners)
                    .chain(one_edge)
                    .all(|x| !m.log_likelihood(&x).is_nan())
            }
        }
    }
}

type Row = [f64; FEATURE_COUNT];

/// The training range's ends, standardised; `None` when one is not finite.
fn standardised_range(s: &Scaler) -> Option<(Row, Row)> {
    let lows: Row = std::array::from_fn(|j| (s.low[j] - s.mean[j]) / s.scale[j]);
    let highs: Row = std::array::from_fn(|j| (s.high[j] - s.mean[j]) / s.scale[j]);
    lows.iter()
        .chain(&highs)
        .all(|x| x.is_finite())
        .then_some((lows, highs))
}
