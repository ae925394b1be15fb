//! `POST /v1/report`: the upstream's outcome of a request (feeds the error-rate feature and
//! the `upstream` load source).

use super::AppState;
use super::body::JsonBody;
use super::check::{MAX_ENDPOINT_BYTES, MAX_USER_BYTES, endpoint_path, optional_ip, required_text};
use super::problem::Problem;
use crate::engine::Outcome;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

/// The longest latency a report may give: a day.
const MAX_LATENCY_MS: f64 = 86_400_000.0;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportBody {
    /// The subject, as in checks. 1 to 512 bytes.
    // Optional in Rust so a missing field gets a clear message; required in the document.
    #[schema(example = "alice", value_type = String, required = true, min_length = 1)]
    pub user: Option<String>,
    /// The endpoint, as in checks. 1 to 2048 bytes.
    #[schema(example = "/login", value_type = String, required = true, min_length = 1)]
    pub endpoint: Option<String>,
    /// The upstream's HTTP status, 100 to 599.
    #[schema(example = 401, value_type = i64, required = true, minimum = 100, maximum = 599)]
    pub status: Option<i64>,
    #[schema(example = "203.0.113.7")]
    pub ip: Option<String>,
    /// The upstream's latency in milliseconds, 0 to a day.
    #[schema(example = 12, minimum = 0)]
    pub latency_ms: Option<f64>,
}

/// Accepts a report of an upstream outcome.
#[utoipa::path(
    post, path = "/v1/report", tag = "decisions",
    request_body = ReportBody,
    responses(
        (status = 202, description = "Accepted"),
        (status = 400, description = "Invalid report", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 64 KiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON, a charset other than utf-8, or a Content-Encoding", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn report(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<ReportBody>,
) -> Result<StatusCode, Problem> {
    let user = required_text(body.user, "user", MAX_USER_BYTES)?;
    let endpoint = required_text(body.endpoint, "endpoint", MAX_ENDPOINT_BYTES)?;
    let status = match body.status {
        None => return Err(Problem::bad_request("field `status` is required")),
        Some(s) if (100..=599).contains(&s) => s,
        Some(s) => {
            return Err(Problem::bad_request(format!(
                "field `status` must be between 100 and 599 (it is {s})"
            )));
        }
    };
    optional_ip(body.ip, "ip")?;
    if let Some(latency) = body.latency_ms {
        // A day bounds any upstream call; past it a number is a mistake (seconds sent as
        // microseconds) or an attempt to pin the load factor, and prints as 300 digits.
        if !(latency.is_finite() && (0.0..=MAX_LATENCY_MS).contains(&latency)) {
            return Err(Problem::bad_request(
                "field `latency_ms` must be a number of milliseconds, 0 to 86400000 (a day)",
            ));
        }
    }
    state.engine.report(&Outcome {
        user: &user,
        endpoint: endpoint_path(&endpoint, "field `endpoint`: ")?,
        // In range by the match above.
        status: u16::try_from(status).unwrap_or(599),
        latency_ms: body.latency_ms,
    });
    Ok(StatusCode::ACCEPTED)
}
