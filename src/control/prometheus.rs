//! The `prometheus` load source: an instant query (`/api/v1/query`) whose one value, 0 to 1,
//! is the load, mapped through `high` and `low` like the CPU share.
//!
//! A query that fails, times out or gives a value well outside 0 to 1 keeps the last factor for `keep_last` cycles (a Prometheus
//! restart should not loosen limits in the middle of an incident), then falls back to 1.0 (a
//! Prometheus gone for good must not hold limits down forever). Failures are counted in
//! `ratewarden_load_query_errors_total`.

use super::load::LoadController;
use crate::engine::Thresholds;
use crate::policy::PrometheusQuery;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;

/// How far past 0 or 1 a value is still read as that edge.
const SHARE_SLACK: f64 = 0.25;

/// Answers are a few hundred bytes; a larger one is not a single value.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum QueryError {
    #[error("no answer within {0} ms")]
    Timeout(u128),
    #[error("cannot reach Prometheus: {0}")]
    Unreachable(String),
    #[error("Prometheus answered {status}: {message}")]
    Refused { status: u16, message: String },
    #[error("the answer is not a Prometheus API answer: {0}")]
    Malformed(String),
    #[error("the query returned {0} series (it must return exactly one)")]
    SeriesCount(usize),
    #[error(
        "the query returned a range vector ({0} series): `[...]` selects a range; the query \
         must give one instant value, as rate(...[1m]) or a plain selector does"
    )]
    RangeVector(usize),
    #[error("the query's value {0:?} is not a finite number")]
    NotANumber(String),
    #[error(
        "the query's value {0} is outside 0 to 1 (by more than 0.25): it must be a share \
         (divide a count of cores, a percentage or a latency by what makes it one)"
    )]
    OutOfRange(f64),
}

#[derive(Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    error: String,
    data: Option<Data>,
}

#[derive(Deserialize)]
#[serde(tag = "resultType", content = "result", rename_all = "lowercase")]
enum Data {
    Vector(Vec<Sample>),
    Scalar((f64, String)),
    Matrix(Vec<serde_json::Value>),
    String((f64, String)),
}

#[derive(Deserialize)]
struct Sample {
    value: (f64, String),
}

/// Runs the query once and returns its single value.
pub async fn query_once(
    client: &Client<HttpConnector, Empty<Bytes>>,
    query: &PrometheusQuery,
) -> Result<f64, QueryError> {
    let uri = format!(
        "{}/api/v1/query?query={}",
        query.url,
        utf8_percent_encode(&query.query, NON_ALPHANUMERIC)
    );
    let uri: hyper::Uri = uri
        .parse()
        .map_err(|e: hyper::http::uri::InvalidUri| QueryError::Unreachable(e.to_string()))?;
    let fetch = async {
        let response = client
            .get(uri)
            .await
            .map_err(|e| QueryError::Unreachable(error_chain(&e)))?;
        let status = response.status().as_u16();
        let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| QueryError::Malformed(e.to_string()))?
            .to_bytes();
        Ok::<_, QueryError>((status, body))
    };
    let (status, body) = tokio::time::timeout(query.timeout, fetch)
        .await
        .map_err(|_| QueryError::Timeout(query.timeout.as_millis()))??;
    let answer: Answer = match serde_json::from_slice(&body) {
        Ok(answer) => answer,
        // A proxy's 502 or 401 page in front of Prometheus: its status says more than the body.
        Err(_) if status != 200 => {
            return Err(QueryError::Refused {
                status,
                message: "not a Prometheus API answer".to_owned(),
            });
        }
        Err(e) => return Err(QueryError::Malformed(e.to_string())),
    };
    if status != 200 || answer.status != "success" {
        return Err(QueryError::Refused {
            status,
            message: answer.error,
        });
    }
    let text = match answer.data {
        Some(Data::Scalar((_, v))) => v,
        Some(Data::Vector(samples)) if samples.len() == 1 => samples
            .into_iter()
            .next()
            .map(|s| s.value.1)
            .unwrap_or_default(),
        Some(Data::Vector(samples)) => return Err(QueryError::SeriesCount(samples.len())),
        Some(Data::Matrix(series)) => return Err(QueryError::RangeVector(series.len())),
        Some(Data::String((_, v))) => v,
        None => return Err(QueryError::Malformed("no data".to_owned())),
    };
    let value = text
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or(QueryError::NotANumber(text))?;
    // A share a little past its edge is the edge: `rate()` extrapolates, so a saturated
    // backend can read 1.02. Further out it is no share: clamped, a percentage or a count of
    // cores would pin the factor at `high_factor` for good, and a negative value would loosen
    // limits, without a word.
    if !(-SHARE_SLACK..=1.0 + SHARE_SLACK).contains(&value) {
        return Err(QueryError::OutOfRange(value));
    }
    Ok(value.clamp(0.0, 1.0))
}

/// The error and its causes (hyper's top-level message alone says only "client error").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The query, its smoothing and hysteresis, and the failures in a row.
pub struct PrometheusLoad {
    client: Client<HttpConnector, Empty<Bytes>>,
    query: PrometheusQuery,
    load: LoadController,
    failures: u32,
}

/// One cycle's reading.
#[derive(Debug, Clone, PartialEq)]
pub struct PrometheusReading {
    pub factor: f64,
    /// The smoothed value (none before the first answer, or after falling back to 1.0).
    pub smoothed: Option<f64>,
    pub error: Option<QueryError>,
}

impl PrometheusLoad {
    pub fn new(query: PrometheusQuery) -> Self {
        Self {
            client: Client::builder(TokioExecutor::new()).build_http(),
            query,
            load: LoadController::default(),
            failures: 0,
        }
    }

    pub fn query(&self) -> &PrometheusQuery {
        &self.query
    }

    pub fn load(&self) -> &LoadController {
        &self.load
    }

    pub async fn read(&mut self, smoothing: f64, t: &Thresholds) -> PrometheusReading {
        match query_once(&self.client, &self.query).await {
            Ok(value) => {
                self.failures = 0;
                let factor = self.load.update(Some(value), smoothing, t);
                PrometheusReading {
                    factor,
                    smoothed: self.load.smoothed(),
                    error: None,
                }
            }
            Err(error) => {
                self.failures = self.failures.saturating_add(1);
                if self.failures > self.query.keep_last {
                    // Start afresh when answers come back: the old smoothed value is stale.
                    self.load = LoadController::default();
                }
                PrometheusReading {
                    // The kept band judged again against `t`, as decisions read it: thresholds
                    // may have changed since the last answer.
                    factor: self.load.live().factor(t),
                    smoothed: self.load.smoothed(),
                    error: Some(error),
                }
            }
        }
    }
}
