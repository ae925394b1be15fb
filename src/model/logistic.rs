//! The supervised kind: logistic regression on labelled traffic, Platt-calibrated.
//!
//! linfa-logistic fits the weights on the training subjects; a second, one-input logistic
//! regression (Platt scaling, also linfa) is fitted on the logits of separate calibration
//! subjects and folded into the weights, so the stored model is still one logistic function
//! whose output is the probability of abuse at the traffic mix it was trained on.
//!
//! Besides one weight per feature, the model weighs the products of feature pairs
//! (`x_i · x_j`, i ≤ j): abuse is often a combination (many paths *and* a steady pace; errors
//! *and* many addresses) that a purely linear score would confuse with a heavy human user.

use super::train::TrainError;
use crate::features::FEATURE_COUNT;
use linfa::prelude::*;
use linfa_logistic::LogisticRegression;
use ndarray::{Array1, Array2};

/// Score = 1 / (1 + exp(-(intercept + weights · x + Σ interactions_ij x_i x_j))) on
/// standardised features.
#[derive(Debug, Clone, PartialEq)]
pub struct Logistic {
    pub weights: [f64; FEATURE_COUNT],
    /// One weight per pair i ≤ j, in the order (0,0), (0,1) … (0,10), (1,1) … (10,10); empty for
    /// a linear model.
    pub interactions: Vec<f64>,
    pub intercept: f64,
}

/// How many feature pairs (i ≤ j) there are.
pub const PAIRS: usize = FEATURE_COUNT * (FEATURE_COUNT + 1) / 2;

/// The features followed by their pairwise products, in [`Logistic::interactions`]' order.
fn expanded(x: &[f64; FEATURE_COUNT]) -> [f64; FEATURE_COUNT + PAIRS] {
    let mut out = [0.0; FEATURE_COUNT + PAIRS];
    out[..FEATURE_COUNT].copy_from_slice(x);
    let mut k = FEATURE_COUNT;
    for i in 0..FEATURE_COUNT {
        for j in i..FEATURE_COUNT {
            out[k] = x[i] * x[j];
            k += 1;
        }
    }
    out
}

/// L2 weight of linfa's fit: light, the data has far more samples than weights.
const ALPHA: f64 = 1e-3;
const MAX_ITERATIONS: u64 = 300;

impl Logistic {
    #[inline]
    pub fn logit(&self, x: &[f64; FEATURE_COUNT]) -> f64 {
        let mut z = self.intercept;
        for (w, v) in self.weights.iter().zip(x) {
            z += w * v;
        }
        if !self.interactions.is_empty() {
            let mut k = 0;
            for i in 0..FEATURE_COUNT {
                for j in i..FEATURE_COUNT {
                    z += self.interactions[k] * x[i] * x[j];
                    k += 1;
                }
            }
        }
        z
    }

    /// The largest magnitude the logit can take over rows with `|x_j| <= reach[j]`: the
    /// intercept's, each weight's and each pair's at their largest, all adding up.
    pub fn logit_bound(&self, reach: &[f64; FEATURE_COUNT]) -> f64 {
        let mut bound = self.intercept.abs();
        for (w, r) in self.weights.iter().zip(reach) {
            bound += w.abs() * r;
        }
        if !self.interactions.is_empty() {
            let mut k = 0;
            for i in 0..FEATURE_COUNT {
                for j in i..FEATURE_COUNT {
                    bound += self.interactions[k].abs() * reach[i] * reach[j];
                    k += 1;
                }
            }
        }
        bound
    }

    #[inline]
    pub fn probability(&self, x: &[f64; FEATURE_COUNT]) -> f64 {
        sigmoid(self.logit(x))
    }

    /// Fits the weights (and, with `pairs`, the pair weights) with linfa-logistic on
    /// standardised rows (`true` = abuse).
    pub fn fit(
        rows: &[[f64; FEATURE_COUNT]],
        abuse: &[bool],
        pairs: bool,
    ) -> Result<Logistic, TrainError> {
        let width = if pairs {
            FEATURE_COUNT + PAIRS
        } else {
            FEATURE_COUNT
        };
        let mut records = Array2::zeros((rows.len(), width));
        for (i, row) in rows.iter().enumerate() {
            for (j, v) in expanded(row).into_iter().take(width).enumerate() {
                records[[i, j]] = v;
            }
        }
        let (weights, intercept) = fit_linfa(records, abuse)?;
        Ok(Logistic {
            weights: std::array::from_fn(|j| weights[j]),
            interactions: weights.iter().skip(FEATURE_COUNT).copied().collect(),
            intercept,
        })
    }

    /// Platt scaling: fits `sigmoid(a · logit + c)` on held-apart rows and folds `a` and `c`
    /// into the weights.
    pub fn calibrated(
        &self,
        rows: &[[f64; FEATURE_COUNT]],
        abuse: &[bool],
    ) -> Result<Logistic, TrainError> {
        let logits = Array2::from_shape_fn((rows.len(), 1), |(i, _)| self.logit(&rows[i]));
        let (a, c) = fit_linfa(logits, abuse)?;
        let a = a[0];
        Ok(Logistic {
            weights: self.weights.map(|w| a * w),
            interactions: self.interactions.iter().map(|w| a * w).collect(),
            intercept: a * self.intercept + c,
        })
    }
}

/// Weights and intercept of P(abuse), whichever class linfa took as its positive one.
fn fit_linfa(records: Array2<f64>, abuse: &[bool]) -> Result<(Array1<f64>, f64), TrainError> {
    let targets = Array1::from_iter(abuse.iter().copied());
    let dataset = Dataset::new(records, targets);
    let fitted = LogisticRegression::default()
        .alpha(ALPHA)
        .max_iterations(MAX_ITERATIONS)
        .fit(&dataset)?;
    // linfa's probability is of the more frequent class; turn it into P(abuse).
    let sign = if fitted.labels().pos.class { 1.0 } else { -1.0 };
    Ok((
        fitted.params().mapv(|w| sign * w),
        sign * fitted.intercept(),
    ))
}

#[inline]
pub fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}
