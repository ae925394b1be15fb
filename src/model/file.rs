//! The model file: JSON, parsed into a [`Model`] that cannot be invalid, or refused with a
//! message naming the problem.
//!
//! ```json
//! { "format": "ratewarden-abuse-model", "format_version": "3", "version": "logistic-3f2a9c1b",
//!   "kind": "logistic", "features": ["limit_usage", ...],
//!   "preprocessing": { "transforms": [...], "mean": [...], "scale": [...],
//!                      "low": [...], "high": [...] },
//!   "evidence": { "half_weight_requests": 30, "max_logit": 8, "prior_logit": -2.1 },
//!   "parameters": { "weights": [...], "interactions": [...], "intercept": -4.2 },
//!   "training": { ... }, "evaluation": { "precision": 0.99, ... } }
//! ```
//! A `gmm` model's parameters are `{ "components": [{ "weight", "mean", "precision" }],
//! "log_likelihood_quantiles": [...] }`. Numbers are read as "maybe a number" so that a
//! `null` (what a NaN becomes in JSON) is refused by name rather than as a type error.

use super::evaluate::Evaluation;
use super::evidence::Evidence;
use super::logistic::{Logistic, PAIRS};
use super::mixture::{Component, Mixture};
use super::scaler::{Scaler, Transform};
use super::{Model, ModelKind, Scorer, Training};
use crate::features::{FEATURE_COUNT, FEATURE_NAMES};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

mod render;
pub use render::render;

pub const FORMAT: &str = "ratewarden-abuse-model";
pub const FORMAT_VERSION: &str = "3";

/// The largest model file read: the shipped one is 30 KB, a 16-component mixture with a long
/// `evaluation` a few MB; anything far larger is not a model (`/dev/zero`, a log named by
/// mistake) and would be read into memory whole.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("cannot read model file {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "cannot read model file {path}: not a regular file (a pipe or a device would hold the \
         daemon's start-up until it ends)"
    )]
    NotAFile { path: PathBuf },
    #[error("cannot read model file {path}: larger than {MAX_FILE_BYTES} bytes")]
    TooLarge { path: PathBuf },
    #[error("cannot write model file {path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("model file {path}: {problem}")]
    Invalid { path: PathBuf, problem: Problem },
}

/// What is wrong with a model file's content.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Problem {
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("missing `{0}`")]
    Missing(String),
    #[error("not a ratewarden abuse model (format is {0:?}, expected \"{FORMAT}\")")]
    Format(String),
    #[error("format_version {0:?} is not supported (this build reads \"{FORMAT_VERSION}\")")]
    FormatVersion(String),
    #[error(
        "format_version \"1\" was trained on features this build no longer computes (an absolute \
         request rate, one error ratio) and has no training ranges or evidence settings; \
         retrain it with `ratewarden train` (this build reads \"{FORMAT_VERSION}\")"
    )]
    RetiredVersion,
    #[error(
        "format_version \"2\" was trained without the features this build's models weigh \
         (client_error_ratio, address_spread, limit_demand); retrain it with `ratewarden train` (this build \
         reads \"{FORMAT_VERSION}\")"
    )]
    WithoutCombinedFeatures,
    #[error("unknown kind {0:?} (this build knows \"logistic\" and \"gmm\")")]
    UnknownKind(String),
    #[error("features {found:?} do not match this build's {expected:?}")]
    Features {
        found: Vec<String>,
        expected: Vec<String>,
    },
    #[error("{0} is not a finite number")]
    NotFinite(String),
    #[error("{field} has {found} values, expected {expected}")]
    Length {
        field: String,
        found: usize,
        expected: usize,
    },
    #[error("{field}: {problem}")]
    Field { field: String, problem: String },
}

/// The file as written; numbers are `Option` so a `null` is named on reading.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    format: Option<String>,
    format_version: Option<String>,
    version: Option<String>,
    kind: Option<String>,
    features: Option<Vec<String>>,
    preprocessing: Option<RawPreprocessing>,
    evidence: Option<RawEvidence>,
    parameters: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    training: Option<Training>,
    /// Figures for people (the model card); the daemon reads none of them, so a bad one does
    /// not refuse the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    evaluation: Option<serde_json::Value>,
}

/// A key that must be there: `None` when it is absent, `Some(None)` for a `null`.
type Required<T = f64> = Option<Option<T>>;

type Numbers = Vec<Option<f64>>;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPreprocessing {
    #[serde(default, deserialize_with = "present")]
    transforms: Required<Vec<Transform>>,
    #[serde(default, deserialize_with = "present")]
    mean: Required<Numbers>,
    #[serde(default, deserialize_with = "present")]
    scale: Required<Numbers>,
    #[serde(default, deserialize_with = "present")]
    low: Required<Numbers>,
    #[serde(default, deserialize_with = "present")]
    high: Required<Numbers>,
}

/// Reads a present key (a `null` too) as `Some`, so that an absent one stays `None`.
fn present<'de, D, T>(d: D) -> Result<Required<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEvidence {
    #[serde(default, deserialize_with = "present")]
    half_weight_requests: Required,
    #[serde(default, deserialize_with = "present")]
    max_logit: Required,
    #[serde(default, deserialize_with = "present")]
    prior_logit: Required,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLogistic {
    weights: Vec<Option<f64>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    interactions: Vec<Option<f64>>,
    #[serde(default, deserialize_with = "present")]
    intercept: Required,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMixture {
    components: Vec<RawComponent>,
    log_likelihood_quantiles: Vec<Option<f64>>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawComponent {
    #[serde(default, deserialize_with = "present")]
    weight: Required,
    mean: Vec<Option<f64>>,
    precision: Vec<Vec<Option<f64>>>,
}

/// Parses a model file's text.
pub fn parse(text: &str) -> Result<Model, Problem> {
    let text = crate::files::without_byte_order_mark(text);
    // serde would read a list as a struct's fields in order: name the shape instead.
    if !text.trim_start().starts_with('{') {
        return Err(Problem::Json("a model file is one JSON object".to_owned()));
    }
    objects_where_objects_belong(text)?;
    let mut de = serde_json::Deserializer::from_str(text);
    let raw: RawModel = serde_path_to_error::deserialize(&mut de).map_err(|e| at_path("", e))?;
    de.end().map_err(|e| Problem::Json(e.to_string()))?;
    let format = raw.format.ok_or(missing("format"))?;
    if format != FORMAT {
        return Err(Problem::Format(format));
    }
    let format_version = raw.format_version.ok_or(missing("format_version"))?;
    if format_version == "1" {
        return Err(Problem::RetiredVersion);
    }
    if format_version == "2" {
        return Err(Problem::WithoutCombinedFeatures);
    }
    if format_version != FORMAT_VERSION {
        return Err(Problem::FormatVersion(format_version));
    }
    let version = raw.version.ok_or(missing("version"))?;
    if version.chars().count() > MAX_VERSION_CHARS {
        // It is a metric label (`ratewarden_model_info{version}`).
        return Err(field("version", "must be at most 128 characters"));
    }
    if version.trim().is_empty() {
        return Err(field("version", "must not be empty"));
    }
    let kind: ModelKind = raw
        .kind
        .ok_or(missing("kind"))?
        .parse()
        .map_err(Problem::UnknownKind)?;
    let features = raw.features.ok_or(missing("features"))?;
    if features != FEATURE_NAMES {
        return Err(Problem::Features {
            found: features,
            expected: FEATURE_NAMES.iter().map(|s| s.to_string()).collect(),
        });
    }
    let scaler = preprocessing(raw.preprocessing.ok_or(missing("preprocessing"))?)?;
    let evidence = evidence(raw.evidence.ok_or(missing("evidence"))?)?;
    let parameters = raw.parameters.ok_or(missing("parameters"))?;
    let scorer = match kind {
        ModelKind::Logistic => Scorer::Logistic(logistic(parameters)?),
        ModelKind::Gmm => Scorer::Mixture(mixture(parameters)?),
    };
    let model = Model {
        version,
        scaler,
        scorer,
        evidence,
        training: raw.training,
        evaluation: raw
            .evaluation
            .and_then(|value| serde_json::from_value::<Evaluation>(value).ok()),
    };
    if !model.scores_everywhere() {
        return Err(field(
            "parameters",
            "give no score somewhere in the training range (a weight, scale or mean so large \
             that the arithmetic overflows)",
        ));
    }
    Ok(model)
}

/// The longest `version` a file may give.
const MAX_VERSION_CHARS: usize = 128;

fn field(name: &str, problem: &str) -> Problem {
    Problem::Field {
        field: name.into(),
        problem: problem.into(),
    }
}

/// Refuses a list (or anything else) where the file must hold an object: serde would take a
/// list's items as the object's fields in order, and might even load it.
fn objects_where_objects_belong(text: &str) -> Result<(), Problem> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| Problem::Json(e.to_string()))?;
    for key in ["preprocessing", "evidence", "parameters", "training"] {
        if value.get(key).is_some_and(|v| !v.is_object()) {
            return Err(field(key, "must be an object"));
        }
    }
    let components = value
        .get("parameters")
        .and_then(|p| p.get("components"))
        .and_then(|c| c.as_array());
    if let Some(i) = components.and_then(|c| c.iter().position(|c| !c.is_object())) {
        return Err(field(
            &format!("parameters.components[{i}]"),
            "must be an object",
        ));
    }
    Ok(())
}

fn missing(name: &str) -> Problem {
    Problem::Missing(name.to_owned())
}

/// A serde error at a key of the file (or of `parameters`, `under`) named by its path; a
/// syntax error is the file's, and a missing key is named as the others are.
fn at_path(under: &str, e: serde_path_to_error::Error<serde_json::Error>) -> Problem {
    let path = match (under, e.path().to_string()) {
        (under, path) if path == "." => under.to_owned(),
        ("", path) => path,
        (under, path) if path.starts_with('[') => format!("{under}{path}"),
        (under, path) => format!("{under}.{path}"),
    };
    let inner = e.into_inner();
    let text = without_type_names(&inner.to_string());
    if !inner.is_data() || (path.is_empty() && !text.starts_with("missing field")) {
        return Problem::Json(text);
    }
    // serde's wording, "missing field `name`" (then a position when read from text).
    let missing_key = text
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(key, _)| key);
    match missing_key {
        Some(key) if path.is_empty() => missing(key),
        Some(key) => missing(&format!("{path}.{key}")),
        None => field(&path, &text),
    }
}

/// serde's message with our type names (`expected struct RawMixture with 2 elements`) read as
/// what the file must hold there (`expected an object`).
fn without_type_names(text: &str) -> String {
    let Some(start) = text.find("expected struct ") else {
        return text.to_owned();
    };
    let rest = &text[start + "expected struct ".len()..];
    let name_end = rest
        .find(|c: char| !c.is_alphanumeric())
        .unwrap_or(rest.len());
    let mut rest = &rest[name_end..];
    if let Some(after) = rest.strip_prefix(" with ") {
        // " with N element(s)", before any " at line ..."
        rest = after.find(" at line").map_or("", |i| &after[i..]);
    }
    format!("{}expected an object{rest}", &text[..start])
}

/// A key that must hold a finite number: absent is missing, `null` is not finite.
fn required(name: impl Fn() -> String, value: Required) -> Result<f64, Problem> {
    finite(&name, value.ok_or_else(|| Problem::Missing(name()))?)
}

fn finite(name: impl Fn() -> String, value: Option<f64>) -> Result<f64, Problem> {
    value
        .filter(|v| v.is_finite())
        .ok_or_else(|| Problem::NotFinite(name()))
}

/// A list of exactly `N` finite numbers.
fn numbers<const N: usize>(name: &str, values: &[Option<f64>]) -> Result<[f64; N], Problem> {
    if values.len() != N {
        return Err(Problem::Length {
            field: name.into(),
            found: values.len(),
            expected: N,
        });
    }
    let mut out = [0.0; N];
    for (i, v) in values.iter().enumerate() {
        out[i] = finite(|| format!("{name}[{i}]"), *v)?;
    }
    Ok(out)
}

/// The list under required key `name`.
fn list<T>(name: &str, value: Required<Vec<T>>) -> Result<Vec<T>, Problem> {
    value
        .ok_or_else(|| missing(name))?
        .ok_or_else(|| field(name, "is null, expected a list"))
}

fn preprocessing(raw: RawPreprocessing) -> Result<Scaler, Problem> {
    let raw_transforms = list("preprocessing.transforms", raw.transforms)?;
    let count = raw_transforms.len();
    let transforms: [Transform; FEATURE_COUNT] =
        raw_transforms.try_into().map_err(|_| Problem::Length {
            field: "preprocessing.transforms".into(),
            found: count,
            expected: FEATURE_COUNT,
        })?;
    let mean = numbers("preprocessing.mean", &list("preprocessing.mean", raw.mean)?)?;
    let scale = numbers(
        "preprocessing.scale",
        &list("preprocessing.scale", raw.scale)?,
    )?;
    if let Some(i) = scale.iter().position(|s| *s <= 0.0) {
        return Err(field(
            &format!("preprocessing.scale[{i}]"),
            "must be positive",
        ));
    }
    let low = numbers("preprocessing.low", &list("preprocessing.low", raw.low)?)?;
    let high = numbers("preprocessing.high", &list("preprocessing.high", raw.high)?)?;
    if let Some(i) = (0..FEATURE_COUNT).find(|&i| low[i] > high[i]) {
        return Err(field(
            &format!("preprocessing.low[{i}]"),
            "must not exceed preprocessing.high",
        ));
    }
    Ok(Scaler {
        transforms,
        mean,
        scale,
        low,
        high,
    })
}

fn evidence(raw: RawEvidence) -> Result<Evidence, Problem> {
    let evidence = Evidence {
        half_weight_requests: required(
            || "evidence.half_weight_requests".into(),
            raw.half_weight_requests,
        )?,
        max_logit: required(|| "evidence.max_logit".into(), raw.max_logit)?,
        prior_logit: required(|| "evidence.prior_logit".into(), raw.prior_logit)?,
    };
    evidence
        .check()
        .map_err(|(name, problem)| field(&format!("evidence.{name}"), problem))?;
    Ok(evidence)
}

fn parameters<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, Problem> {
    serde_path_to_error::deserialize(value).map_err(|e| at_path("parameters", e))
}

fn logistic(value: serde_json::Value) -> Result<Logistic, Problem> {
    let raw: RawLogistic = parameters(value)?;
    let interactions = if raw.interactions.is_empty() {
        Vec::new()
    } else {
        numbers::<PAIRS>("parameters.interactions", &raw.interactions)?.to_vec()
    };
    Ok(Logistic {
        weights: numbers("parameters.weights", &raw.weights)?,
        interactions,
        intercept: required(|| "parameters.intercept".into(), raw.intercept)?,
    })
}

fn mixture(value: serde_json::Value) -> Result<Mixture, Problem> {
    let raw: RawMixture = parameters(value)?;
    let mut components = Vec::with_capacity(raw.components.len());
    for (k, c) in raw.components.iter().enumerate() {
        let at = format!("parameters.components[{k}]");
        let weight = required(|| format!("{at}.weight"), c.weight)?;
        let mean = numbers(&format!("{at}.mean"), &c.mean)?;
        if c.precision.len() != FEATURE_COUNT {
            return Err(Problem::Length {
                field: format!("{at}.precision"),
                found: c.precision.len(),
                expected: FEATURE_COUNT,
            });
        }
        let mut precision = [[0.0; FEATURE_COUNT]; FEATURE_COUNT];
        for (i, row) in c.precision.iter().enumerate() {
            precision[i] = numbers(&format!("{at}.precision[{i}]"), row)?;
        }
        components
            .push(Component::new(weight, mean, precision).map_err(|problem| field(&at, &problem))?);
    }
    let quantiles = raw
        .log_likelihood_quantiles
        .iter()
        .enumerate()
        .map(|(i, v)| finite(|| format!("parameters.log_likelihood_quantiles[{i}]"), *v))
        .collect::<Result<Vec<_>, _>>()?;
    Mixture::new(components, quantiles).map_err(|problem| field("parameters", &problem))
}
