//! Feature preprocessing stored in the model: a per-column transform, then standardisation.
//!
//! Rates span orders of magnitude (a poller at 0.01/s, a scraper at 3/s), so they are taken
//! as `ln(1 + x)` before the mean and deviation of the training data bring every column to
//! a comparable scale; the same numbers are applied when scoring, so a model file carries
//! everything needed to turn [`Features`] into what it was trained on.

use crate::features::{FEATURE_COUNT, Features};
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

/// The transforms this build trains with: log of the request rate and of the gaps'
/// coefficient of variation; the shares are already in [0, 1].
pub const DEFAULT_TRANSFORMS: [Transform; FEATURE_COUNT] = [
    Transform::Log1p,
    Transform::Identity,
    Transform::Identity,
    Transform::Identity,
    Transform::Identity,
    Transform::Log1p,
];

/// Per column: transform, then `(x - mean) / scale`. `scale` is positive and finite.
#[derive(Debug, Clone, PartialEq)]
pub struct Scaler {
    pub transforms: [Transform; FEATURE_COUNT],
    pub mean: [f64; FEATURE_COUNT],
    pub scale: [f64; FEATURE_COUNT],
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
        Scaler {
            transforms,
            mean,
            scale,
        }
    }

    /// The standardised row the model sees. A non-finite input counts as 0.
    #[inline]
    pub fn apply(&self, features: &Features) -> [f64; FEATURE_COUNT] {
        let mut x = transformed(&self.transforms, features);
        for ((v, mean), scale) in x.iter_mut().zip(&self.mean).zip(&self.scale) {
            *v = (*v - mean) / scale;
        }
        x
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
