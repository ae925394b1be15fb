//! A model as the file's text: the raw types filled from the model, pretty-printed (the file is
//! committed and reviewed).

use super::{
    FORMAT, FORMAT_VERSION, RawComponent, RawEvidence, RawLogistic, RawMixture, RawModel,
    RawPreprocessing,
};
use crate::features::FEATURE_NAMES;
use crate::model::{Model, Scorer};

/// The file's text for a model (pretty-printed: it is committed and reviewed).
pub fn render(model: &Model) -> String {
    let parameters = match &model.scorer {
        Scorer::Logistic(l) => serde_json::to_value(RawLogistic {
            weights: l.weights.iter().map(|w| Some(*w)).collect(),
            interactions: l.interactions.iter().map(|w| Some(*w)).collect(),
            intercept: Some(Some(l.intercept)),
        }),
        Scorer::Mixture(m) => serde_json::to_value(RawMixture {
            components: m
                .components
                .iter()
                .map(|c| RawComponent {
                    weight: Some(Some(c.weight)),
                    mean: c.mean.iter().map(|v| Some(*v)).collect(),
                    precision: c
                        .precision
                        .iter()
                        .map(|r| r.iter().map(|v| Some(*v)).collect())
                        .collect(),
                })
                .collect(),
            log_likelihood_quantiles: m.quantiles.iter().map(|v| Some(*v)).collect(),
        }),
    }
    .unwrap_or_default();
    let raw = RawModel {
        format: Some(FORMAT.into()),
        format_version: Some(FORMAT_VERSION.into()),
        version: Some(model.version.clone()),
        kind: Some(model.kind().label().into()),
        features: Some(FEATURE_NAMES.iter().map(|s| s.to_string()).collect()),
        preprocessing: Some(RawPreprocessing {
            transforms: Some(Some(model.scaler.transforms.to_vec())),
            mean: Some(Some(model.scaler.mean.iter().map(|v| Some(*v)).collect())),
            scale: Some(Some(model.scaler.scale.iter().map(|v| Some(*v)).collect())),
            low: Some(Some(model.scaler.low.iter().map(|v| Some(*v)).collect())),
            high: Some(Some(model.scaler.high.iter().map(|v| Some(*v)).collect())),
        }),
        evidence: Some(RawEvidence {
            half_weight_requests: Some(Some(model.evidence.half_weight_requests)),
            max_logit: Some(Some(model.evidence.max_logit)),
            prior_logit: Some(Some(model.evidence.prior_logit)),
        }),
        parameters: Some(parameters),
        training: model.training.clone(),
        evaluation: model
            .evaluation
            .as_ref()
            .and_then(|e| serde_json::to_value(e).ok()),
    };
    let mut text = serde_json::to_string_pretty(&raw).unwrap_or_default();
    text.push('\n');
    text
}
