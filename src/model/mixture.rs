//! The unsupervised kind: a Gaussian mixture of the training traffic (linfa-clustering),
//! whose log-likelihood is mapped to a score by the training traffic's own distribution.
//!
//! score(x) = the share of training rows whose log-likelihood is higher than x's: 0.99 means
//! "less typical than 99 % of the traffic the model was trained on". The mapping is stored as
//! [`QUANTILES`] evenly spaced quantiles of the training log-likelihoods, interpolated
//! linearly, so a threshold `t` flags about `1 - t` of traffic like the training traffic.

use super::train::TrainError;
use crate::features::FEATURE_COUNT;
use linfa::prelude::*;
use linfa_clustering::GaussianMixtureModel;
use linfa_linalg::cholesky::Cholesky;
use ndarray::{Array2, ArrayView1, ArrayView2};

const D: usize = FEATURE_COUNT;

/// How many quantiles of the training log-likelihood a model stores (0 %, 0.1 %, ... 100 %).
pub const QUANTILES: usize = 1001;

/// The most components a model may have (scoring keeps them on the stack).
pub const MAX_COMPONENTS: usize = 16;

/// The fewest rows per Gaussian a mixture is fitted on.
const MIN_ROWS_PER_COMPONENT: usize = 10;

/// Added to the covariances' diagonals (in standardised units): keeps a column that is
/// nearly constant in the training traffic (denials, say) from making a component a spike.
const REG_COVARIANCE: f64 = 1e-2;

#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    pub weight: f64,
    pub mean: [f64; D],
    /// The inverse covariance, as stored in the file.
    pub precision: [[f64; D]; D],
    /// Lower Cholesky factor `L` of the precision (`P = L Lᵀ`).
    chol: [[f64; D]; D],
    /// `ln weight - d/2 ln 2π + ln det L`.
    log_norm: f64,
}

impl Component {
    /// A component from its stored parameters; refused unless the precision is symmetric
    /// positive definite and the weight in (0, 1].
    pub fn new(weight: f64, mean: [f64; D], precision: [[f64; D]; D]) -> Result<Self, String> {
        if !(weight > 0.0 && weight <= 1.0) {
            return Err("weight must be in (0, 1]".into());
        }
        let asymmetric = (0..D).any(|i| {
            (0..i).any(|j| {
                let (a, b) = (precision[i][j], precision[j][i]);
                (a - b).abs() > 1e-9 * a.abs().max(b.abs()).max(1.0)
            })
        });
        if asymmetric {
            return Err("precision is not symmetric".into());
        }
        let matrix = Array2::from_shape_fn((D, D), |(i, j)| precision[i][j]);
        let lower = matrix
            .cholesky()
            .map_err(|_| "precision is not positive definite".to_string())?;
        let chol: [[f64; D]; D] = std::array::from_fn(|i| std::array::from_fn(|j| lower[[i, j]]));
        let log_det_l: f64 = (0..D).map(|i| chol[i][i].ln()).sum();
        let log_norm = weight.ln() - 0.5 * D as f64 * (2.0 * std::f64::consts::PI).ln() + log_det_l;
        if !log_norm.is_finite() {
            return Err("precision is degenerate".into());
        }
        Ok(Component {
            weight,
            mean,
            precision,
            chol,
            log_norm,
        })
    }

    /// `ln(weight · N(x; mean, precision⁻¹))`.
    #[inline]
    fn weighted_log_density(&self, x: &[f64; D]) -> f64 {
        let diff: [f64; D] = std::array::from_fn(|i| x[i] - self.mean[i]);
        // ‖Lᵀ(x − μ)‖²; L is lower triangular.
        let mut q = 0.0;
        for j in 0..D {
            let y: f64 = (j..D).map(|i| self.chol[i][j] * diff[i]).sum();
            q += y * y;
        }
        self.log_norm - 0.5 * q
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Mixture {
    pub components: Vec<Component>,
    /// Ascending log-likelihoods of the training rows at shares 0, 1/(n-1), ... 1.
    pub quantiles: Vec<f64>,
}

impl Mixture {
    /// Refused unless there is a component and the quantiles are finite and ascending.
    pub fn new(components: Vec<Component>, quantiles: Vec<f64>) -> Result<Self, String> {
        if components.is_empty() || components.len() > MAX_COMPONENTS {
            return Err(format!(
                "components must hold 1 to {MAX_COMPONENTS} components"
            ));
        }
        if quantiles.len() < 2 {
            return Err("log_likelihood_quantiles needs at least 2 values".into());
        }
        if quantiles.iter().any(|q| !q.is_finite()) {
            return Err(
                "log_likelihood_quantiles holds a value that is not a finite number".into(),
            );
        }
        if quantiles.windows(2).any(|w| w[0] > w[1]) {
            return Err("log_likelihood_quantiles is not ascending".into());
        }
        Ok(Mixture {
            components,
            quantiles,
        })
    }

    #[inline]
    pub fn log_likelihood(&self, x: &[f64; D]) -> f64 {
        let mut logs = [f64::NEG_INFINITY; MAX_COMPONENTS];
        let mut best = f64::NEG_INFINITY;
        for (slot, c) in logs.iter_mut().zip(&self.components) {
            *slot = c.weighted_log_density(x);
            best = best.max(*slot);
        }
        // log-sum-exp, shifted by the largest term (unused slots add exp(-inf) = 0).
        let sum: f64 = logs.iter().map(|l| (l - best).exp()).sum();
        best + sum.ln()
    }

    /// The share of training rows more typical (higher likelihood) than `log_likelihood`.
    #[inline]
    pub fn score_of(&self, log_likelihood: f64) -> f64 {
        let q = &self.quantiles;
        let last = q.len() - 1;
        if log_likelihood.is_nan() || log_likelihood <= q[0] {
            return 1.0;
        }
        if log_likelihood >= q[last] {
            return 0.0;
        }
        // q[i] <= ll < q[i + 1]
        let i = q.partition_point(|&v| v <= log_likelihood) - 1;
        let span = q[i + 1] - q[i];
        let frac = if span > 0.0 {
            (log_likelihood - q[i]) / span
        } else {
            0.0
        };
        (1.0 - (i as f64 + frac) / last as f64).clamp(0.0, 1.0)
    }

    #[inline]
    pub fn score(&self, x: &[f64; D]) -> f64 {
        self.score_of(self.log_likelihood(x))
    }

    /// Fits `components` Gaussians (full covariance) to standardised rows with linfa, then
    /// stores the quantiles of the rows' own log-likelihoods.
    pub fn fit(rows: &[[f64; D]], components: usize) -> Result<Mixture, TrainError> {
        // linfa's k-means start panics on no rows; a handful per Gaussian is the least that
        // estimates anything.
        let needed = MIN_ROWS_PER_COMPONENT * components;
        if rows.len() < needed {
            return Err(TrainError::TooFewRows {
                rows: rows.len(),
                needed,
                components,
            });
        }
        let records = Array2::from_shape_fn((rows.len(), D), |(i, j)| rows[i][j]);
        let dataset = DatasetBase::from(records);
        let gmm = GaussianMixtureModel::params(components)
            .n_runs(3)
            .tolerance(1e-4)
            .max_n_iterations(300)
            .reg_covariance(REG_COVARIANCE)
            .fit(&dataset)?;
        let parts = (0..components)
            .map(|k| {
                let mean = row(gmm.means().row(k));
                let precision = square(gmm.precisions().index_axis(ndarray::Axis(0), k));
                Component::new(gmm.weights()[k], mean, precision)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(TrainError::Degenerate)?;
        let unmapped = Mixture {
            components: parts,
            quantiles: vec![0.0, 0.0],
        };
        let mut lls: Vec<f64> = rows.iter().map(|x| unmapped.log_likelihood(x)).collect();
        lls.sort_by(f64::total_cmp);
        let quantiles = (0..QUANTILES)
            .map(|i| lls[i * (lls.len() - 1) / (QUANTILES - 1)])
            .collect();
        Mixture::new(unmapped.components, quantiles).map_err(TrainError::Degenerate)
    }
}

fn row(view: ArrayView1<f64>) -> [f64; D] {
    std::array::from_fn(|i| view[i])
}

fn square(view: ArrayView2<f64>) -> [[f64; D]; D] {
    std::array::from_fn(|i| std::array::from_fn(|j| view[[i, j]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_few_rows_are_refused_by_name() {
        for (rows, components) in [(0, 1), (9, 1), (19, 2)] {
            let err = Mixture::fit(&vec![[0.5; D]; rows], components).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "the gmm kind needs at least {} feature samples (10 per component, \
                     --components {components}) in the fitting and calibration part (80 % of \
                     the subjects, split by --seed), and there are {rows}: train on longer or \
                     busier traffic, or ask for fewer components",
                    10 * components
                )
            );
        }
        assert!(Mixture::fit(&vec![[0.5; D]; 10], 1).is_ok());
    }
}
