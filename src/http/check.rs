//! `POST /v1/check` and `POST /v1/check/batch`: JSON in, decision out.

use super::AppState;
use super::body::{Capped, JsonBody, MAX_BATCH_BODY_BYTES};
use super::decision::{self, DecisionBody, Denial};
use super::number::{NotInRange, whole_in};
use super::problem::Problem;
use crate::engine::{CheckError, CheckRequest, Cost, EndpointPath, MAX_COST, path_of};
use axum::Json;
use axum::extract::State;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use utoipa::ToSchema;

pub use crate::engine::{MAX_ENDPOINT_BYTES, MAX_USER_BYTES};
pub const MAX_BATCH: usize = 1000;

/// A check request as sent: every field optional here, so a missing one gets a clear message.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckBody {
    /// The subject: an API key, account id, phone number. 1 to 512 bytes.
    // Optional in Rust so a missing field gets a clear message; required in the document.
    #[schema(example = "alice", value_type = String, required = true, min_length = 1)]
    pub user: Option<String>,
    /// The endpoint called, matched against the policy's endpoint rules. 1 to 2048 bytes.
    #[schema(example = "/api/search", value_type = String, required = true, min_length = 1)]
    pub endpoint: Option<String>,
    /// The subject's tier; when absent, the stored tier or the default tier.
    pub tier: Option<String>,
    /// The client's IPv4 or IPv6 address.
    #[schema(example = "203.0.113.7")]
    pub ip: Option<String>,
    /// 1 to 1,000,000; default 1.
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 1_000_000)]
    pub cost: Option<serde_json::Number>,
}

/// A check request whose every field is valid.
#[derive(Debug, Clone)]
pub struct ValidCheck {
    pub user: String,
    /// As sent (its length is checked on what the client sent); normalised by
    /// [`ValidCheck::request`].
    pub endpoint: String,
    pub tier: Option<String>,
    pub ip: Option<IpAddr>,
    pub cost: Cost,
}

impl ValidCheck {
    pub fn request(&self) -> CheckRequest<'_> {
        CheckRequest {
            user: &self.user,
            endpoint: EndpointPath::new(&self.endpoint),
            tier: self.tier.as_deref(),
            ip: self.ip,
            cost: self.cost,
        }
    }
}

/// A required string field of 1 to `max` bytes.
pub fn required_text(value: Option<String>, field: &str, max: usize) -> Result<String, Problem> {
    match value {
        None => Err(Problem::bad_request(format!("field `{field}` is required"))),
        Some(s) if s.is_empty() || s.len() > max => Err(Problem::bad_request(format!(
            "field `{field}` must be 1 to {max} bytes (it has {})",
            s.len()
        ))),
        Some(s) => Ok(s),
    }
}

/// `endpoint`'s path in normal form, or a 400 naming both readings of a path servers read as
/// two endpoints (`/api/export/../x`); `at` says where it was (`field \`endpoint\`: `). An
/// absolute URI's scheme and host go first (`http://h/api/export` is `/api/export`), as on
/// forward auth and gRPC: an app that passes the request target as it came must not let a
/// client dodge a rule by sending the absolute form.
pub fn endpoint_path<'a>(endpoint: &'a str, at: &str) -> Result<EndpointPath<'a>, Problem> {
    EndpointPath::parse(path_of(endpoint)).map_err(|e| Problem::bad_request(format!("{at}{e}")))
}

pub fn optional_ip(value: Option<String>, field: &str) -> Result<Option<IpAddr>, Problem> {
    value
        .map(|s| {
            s.parse().map_err(|_| {
                Problem::bad_request(format!("field `{field}` is not an IP address: {s:?}"))
            })
        })
        .transpose()
}

impl CheckBody {
    /// Validates every field; `at` prefixes field names (`requests[3].`).
    pub fn validate(self, at: &str) -> Result<ValidCheck, Problem> {
        let cost = match self.cost {
            None => Cost::ONE,
            Some(n) => match whole_in(&n, 1..=u64::from(MAX_COST)).map(Cost::new) {
                Ok(Some(cost)) => cost,
                Err(NotInRange::NotWhole) => {
                    return Err(Problem::bad_request(format!(
                        "field `{at}cost` must be a whole number between 1 and {MAX_COST} (it is {n})"
                    )));
                }
                Ok(None) | Err(NotInRange::OutOfRange) => {
                    return Err(Problem::bad_request(format!(
                        "field `{at}cost` must be between 1 and {MAX_COST} (it is {n})"
                    )));
                }
            },
        };
        let user = required_text(self.user, &format!("{at}user"), MAX_USER_BYTES)?;
        let field = format!("{at}endpoint");
        let mut endpoint = required_text(self.endpoint, &field, MAX_ENDPOINT_BYTES)?;
        endpoint_path(&endpoint, &format!("field `{field}`: "))?;
        if path_of(&endpoint) != endpoint {
            endpoint = path_of(&endpoint).to_owned();
        }
        Ok(ValidCheck {
            user,
            endpoint,
            tier: self.tier,
            ip: optional_ip(self.ip, &format!("{at}ip"))?,
            cost,
        })
    }
}

/// A request the policy cannot decide, as a 400.
pub fn undecidable(error: &CheckError, at: &str) -> Problem {
    match error {
        CheckError::UnknownTier(_) => Problem::bad_request(format!("field `{at}tier`: {error}")),
        CheckError::MissingIp { .. } => match at.strip_suffix('.') {
            Some(item) => Problem::bad_request(format!("{item}: {error}")),
            None => Problem::bad_request(error.to_string()),
        },
    }
}

/// Decides one request.
#[utoipa::path(
    post, path = "/v1/check", tag = "decisions",
    request_body = CheckBody,
    responses(
        (status = 200, description = "Allowed", body = DecisionBody),
        (status = 429, description = "Denied: the decision JSON with problem members", content_type = "application/problem+json", body = Denial),
        (status = 400, description = "Invalid request", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 64 KiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON, a charset other than utf-8, or a Content-Encoding", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Store unavailable and store.on_error denies: the decision JSON with problem members", body = Denial, content_type = "application/problem+json"),
    )
)]
pub async fn check(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<CheckBody>,
) -> Result<Response, Problem> {
    let valid = body.validate("")?;
    let decision = state
        .engine
        .check(&valid.request())
        .await
        .map_err(|e| undecidable(&e, ""))?;
    Ok(decision::check_response(&decision))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchBody {
    /// 1 to 1000 check requests, decided in order, each as if sent alone.
    #[serde(default)]
    #[schema(value_type = Vec<CheckBody>, required = true, min_items = 1, max_items = 1000)]
    pub requests: Option<Capped<CheckBody, MAX_BATCH>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BatchResults {
    /// One decision per request, in order.
    pub results: Vec<DecisionBody>,
}

/// Decides up to 1000 requests in order, in one store round trip.
#[utoipa::path(
    post, path = "/v1/check/batch", tag = "decisions",
    request_body = BatchBody,
    responses(
        (status = 200, description = "One decision per request, allowed or not", body = BatchResults),
        (status = 400, description = "An invalid item (named by its index) or batch size", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 4 MiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON, a charset other than utf-8, or a Content-Encoding", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn batch(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<BatchBody, MAX_BATCH_BODY_BYTES>,
) -> Result<Json<BatchResults>, Problem> {
    let list = body
        .requests
        .ok_or_else(|| Problem::bad_request("field `requests` is required"))?;
    if list.held == 0 || list.held > MAX_BATCH {
        return Err(Problem::bad_request(format!(
            "field `requests` must hold 1 to {MAX_BATCH} items (it holds {})",
            list.held
        )));
    }
    let valid = list
        .items
        .into_iter()
        .enumerate()
        .map(|(i, item)| item.validate(&format!("requests[{i}].")))
        .collect::<Result<Vec<_>, _>>()?;
    let requests: Vec<_> = valid.iter().map(ValidCheck::request).collect();
    let decisions = state
        .engine
        .check_batch(&requests)
        .await
        .map_err(|e| undecidable(&e.error, &format!("requests[{}].", e.index)))?;
    Ok(Json(BatchResults {
        results: decisions.iter().map(DecisionBody::from).collect(),
    }))
}
