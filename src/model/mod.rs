//! PLACEHOLDER until the model branch lands: the abuse model's interface.

use crate::features::Features;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("cannot read model file {path}: {reason}")]
    Unreadable { path: String, reason: String },
}

#[derive(Debug)]
pub struct Model {
    weights: Vec<f64>,
    bias: f64,
}

impl Model {
    pub fn load(path: &Path) -> Result<Model, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::Unreadable {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| ModelError::Unreadable {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
        let weights = v["weights"]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
            .unwrap_or_default();
        Ok(Model {
            weights,
            bias: v["bias"].as_f64().unwrap_or(0.0),
        })
    }
    pub fn kind(&self) -> &str {
        "logistic"
    }
    pub fn version(&self) -> &str {
        "placeholder"
    }
    pub fn score_many(&self, features: &[Features]) -> Vec<f64> {
        features
            .iter()
            .map(|f| {
                let z: f64 = f
                    .to_array()
                    .iter()
                    .zip(&self.weights)
                    .map(|(x, w)| x * w)
                    .sum::<f64>()
                    + self.bias;
                1.0 / (1.0 + (-z).exp())
            })
            .collect()
    }
}
