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

use crate::features::{FEATURE_COUNT, Features, MAX_CV};
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
        let (low, high) = (0.0, if j == FEATURE_COUNT - 1 { MAX_CV } else { 1.0 });
        self.low[j] = self.transforms[j].apply(low);
        self.high[j] = self.transforms[j].apply(high);
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
