//! Feature preprocessing stored in the model: a per-column transform, the range the training
//! data covered, then standardisation.
//!
//! The gaps' coefficient of variation and the limit demand are heavy-tailed, so they are taken
//! as `ln(1 + x)` before the mean and deviation of the training data bring every column to a
//! comparable scale.
//! A value outside the range the model saw is brought back to its edge before scoring: a
//! model must not extrapolate to certainty from behaviour it never met (the subject is
//! reported novel instead). The same numbers are applied when scoring, so a model file
//! carries everything needed to turn [`Features`] into what it was trained on.

use crate::features::{FEATURE_COUNT, FEATURE_DOMAINS, Features};
use serde::{Deserialize, Serialize};

/// What is done to a raw feature before standardisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transform {
    Identity,
    /// `ln(1 + x)`: for heavy-tailed, non-negative columns.
    Log1p,
}

impl Transform {
    fn apply(self, x: f64) -> f64 {
        match self {
            Transform::Identity => x,
            Transform::Log1p => x.max(0.0).ln_1p(),
        }
    }
}

/// The transforms this build trains with: logs of the gaps' coefficient of variation and of the
/// limit demand; the shares are already in [0, 1].
pub const DEFAULT_TRANSFORMS: [Transform; FEATURE_COUNT] = [
    Transform::Identity,
    Transform::Identity,
    Transform::Identity,
    Transform::Identity,
    Transform::Identity,
    Transform::Identity,
    Transform::Identity,
    Transform::Log1p,
    Transform::Identity,
    Transform::Identity,
    Transform::Log1p,
];

/// How close (a share of the training range's span) a range's end must come to the edge of
/// what its column can take to count as reaching it.
const SNAP: f64 = 0.01;

/// How far past the training range (in transformed units) a value may lie and still count
/// as seen: rounding, not behaviour.
const RANGE_TOLERANCE: f64 = 1e-9;

/// Per column: transform, clamp to `[low, high]` (the training data's range, transformed),
/// then `(x - mean) / scale`. `scale` is positive and finite; `low <= high`.
#[derive(Debug, Clone, PartialEq)]
pub struct Scaler {
    pub transforms: [Transform; FEATURE_COUNT],
    pub mean: [f64; FEATURE_COUNT],
    pub scale: [f64; FEATURE_COUNT],
    pub low: [f64; FEATURE_COUNT],
    pub high: [f64; FEATURE_COUNT],
}

impl Scaler {
    /// Fits mean and deviation of the transformed columns; a constant column gets scale 1.
    pub fn fit(transforms: [Transform; FEATURE_COUNT], rows: &[Features]) -> Scaler {
        let n = rows.len().max(1) as f64;
        let mut mean = [0.0; FEATURE_COUNT];
        let mut sum_sq = [0.0; FEATURE_COUNT];
        for row in rows {
            for (m, v) in mean.iter_mut().zip(transformed(&transforms, row)) {
                *m += v / n;
            }
        }
        for row in rows {
            let x = transformed(&transforms, row);
            for ((s, v), m) in sum_sq.iter_mut().zip(x).zip(mean) {
                *s += (v - m).powi(2);
            }
        }
        let scale = sum_sq.map(|s| {
            let sd = (s / n).sqrt();
            if sd.is_finite() && sd > 1e-9 { sd } else { 1.0 }
        });
        let (mut low, mut high) = (
            [f64::INFINITY; FEATURE_COUNT],
            [f64::NEG_INFINITY; FEATURE_COUNT],
        );
        for row in rows {
            for (j, v) in transformed(&transforms, row).into_iter().enumerate() {
                low[j] = low[j].min(v);
                high[j] = high[j].max(v);
            }
        }
        if rows.is_empty() {
            (low, high) = (mean, mean);
        }
        Scaler {
            transforms,
            mean,
            scale,
            low,
            high,
        }
    }

    /// Makes column `j` count as seen over every value it can take (a column the model
    /// ignores never makes a subject novel).
    pub fn widen(&mut self, j: usize) {
        let (low, high) = FEATURE_DOMAINS[j];
        self.low[j] = self.transforms[j].apply(low);
        self.high[j] = self.transforms[j].apply(high);
    }

    /// Makes column `j` count as seen up to the top of its domain.
    pub fn widen_top(&mut self, j: usize) {
        self.high[j] = self.transforms[j].apply(FEATURE_DOMAINS[j].1);
    }

    /// Stretches each range that ends within [`SNAP`] of its span from the edge of what the
    /// column can take to that edge: training data that came that close reached it (a poller
    /// with 0.05 % jitter and a bot with none are both metronomes), and nothing past an edge
    /// exists to be novel.
    pub fn snap_to_domain(&mut self) {
        for (j, (low, high)) in FEATURE_DOMAINS.into_iter().enumerate() {
            let t = self.transforms[j];
            let (low, high) = (t.apply(low), t.apply(high));
            let near = SNAP * (self.high[j] - self.low[j]);
            if self.low[j] - low <= near {
                self.low[j] = self.low[j].min(low);
            }
            if high - self.high[j] <= near {
                self.high[j] = self.high[j].max(high);
            }
        }
    }

    /// The standardised row the model sees, each column brought within the training range
    /// first. A non-finite input counts as 0.
    #[inline]
    pub fn apply(&self, features: &Features) -> [f64; FEATURE_COUNT] {
        let mut x = transformed(&self.transforms, features);
        for (j, v) in x.iter_mut().enumerate() {
            *v = (v.clamp(self.low[j], self.high[j]) - self.mean[j]) / self.scale[j];
        }
        x
    }

    /// The columns whose value lies outside the range the training data covered, each with
    /// `true` when above it (`false`: below).
    pub fn outside(&self, features: &Features) -> impl Iterator<Item = (usize, bool)> + '_ {
        let x = transformed(&self.transforms, features);
        (0..FEATURE_COUNT).filter_map(move |j| {
            if x[j] > self.high[j] + RANGE_TOLERANCE {
                Some((j, true))
            } else if x[j] < self.low[j] - RANGE_TOLERANCE {
                Some((j, false))
            } else {
                None
            }
        })
    }
}

#[inline]
fn transformed(
    transforms: &[Transform; FEATURE_COUNT],
    features: &Features,
) -> [f64; FEATURE_COUNT] {
    let raw = features.to_array();
    std::array::from_fn(|j| {
        let x = if raw[j].is_finite() { raw[j] } else { 0.0 };
        transforms[j].apply(x)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::{MAX_CV, MAX_DEMAND};

    fn fitted() -> Scaler {
        let row = Features {
            interarrival_cv: 1.0,
            address_spread: 0.5,
            limit_demand: 2.0,
            ..Features::default()
        };
        Scaler::fit(DEFAULT_TRANSFORMS, &[row, Features::default()])
    }

    #[test]
    fn an_ignored_column_is_seen_over_its_whole_domain_in_its_own_units() {
        let mut scaler = fitted();
        for j in 0..FEATURE_COUNT {
            scaler.widen(j);
        }
        assert_eq!(scaler.high[7], MAX_CV.ln_1p(), "interarrival_cv");
        assert_eq!(scaler.high[9], 1.0, "address_spread");
        assert_eq!(scaler.high[10], MAX_DEMAND.ln_1p(), "limit_demand");
        assert!(scaler.low.iter().all(|&low| low == 0.0));
        let extreme = Features {
            interarrival_cv: MAX_CV,
            limit_demand: MAX_DEMAND,
            ..Features::default()
        };
        assert_eq!(scaler.outside(&extreme).count(), 0);
    }

    #[test]
    fn a_range_within_a_hundredth_of_its_span_from_an_edge_reaches_it() {
        let rows = [
            Features {
                interarrival_cv: 0.0005,
                address_spread: 0.5,
                limit_usage: 0.995,
                ..Features::default()
            },
            Features {
                interarrival_cv: 2.0,
                address_spread: 0.1,
                limit_usage: 0.2,
                ..Features::default()
            },
        ];
        let mut scaler = Scaler::fit(DEFAULT_TRANSFORMS, &rows);
        scaler.snap_to_domain();
        assert_eq!(
            (scaler.low[7], scaler.high[7]),
            (0.0, 2.0f64.ln_1p()),
            "cv: low only"
        );
        assert_eq!(
            (scaler.low[9], scaler.high[9]),
            (0.1, 0.5),
            "spread: neither"
        );
        assert_eq!(
            (scaler.low[0], scaler.high[0]),
            (0.2, 1.0),
            "usage: high only"
        );
    }

    #[test]
    fn widening_the_top_keeps_the_bottom_and_the_standardisation() {
        let mut scaler = fitted();
        let before = scaler.clone();
        scaler.widen_top(9);
        assert_eq!(scaler.high[9], 1.0);
        assert_eq!(scaler.low[9], before.low[9]);
        assert_eq!((scaler.mean, scaler.scale), (before.mean, before.scale));
    }
}
