//! A decision as the API shows it: the JSON body, the status, the problem members of a denial.

use super::problem::{self, Problem};
use crate::engine::{Decision, Reason};
use crate::ratelimit_headers::{self, ceil_secs};
use axum::Json;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// The decision JSON of `/v1/check` (also each item of a batch's `results`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DecisionBody {
    pub allowed: bool,
    /// The effective limit (after scaling) with the least remaining quota.
    pub limit: Option<u64>,
    pub remaining: Option<u64>,
    pub reset_after_ms: u64,
    /// 0 when allowed; null when no time can be named.
    pub retry_after_ms: Option<u64>,
    pub policy: Option<String>,
    pub violated: Vec<String>,
    pub scale: f64,
    pub load_factor: f64,
    /// The factor of the endpoint rule's own load source (`endpoints[].load`), which the
    /// rule's limits scale by instead of `load_factor`; null when the rule has none.
    pub rule_load_factor: Option<f64>,
    pub abuse_score: Option<f64>,
    /// quota, burst, load, anomaly or store_unavailable; null when allowed.
    pub reason: Option<String>,
    pub shadow: bool,
    pub degraded: bool,
}

/// Whole milliseconds, rounded up (a client told to wait never retries too early).
fn ceil_ms(micros: u64) -> u64 {
    micros.div_ceil(1_000)
}

impl From<&Decision> for DecisionBody {
    fn from(d: &Decision) -> Self {
        Self {
            allowed: d.allowed,
            limit: d.limit,
            remaining: d.remaining,
            reset_after_ms: ceil_ms(d.reset_after),
            retry_after_ms: d.retry_after.map(ceil_ms),
            policy: d.headline_limit().map(|l| l.label.clone()),
            violated: d.violated_names().map(str::to_owned).collect(),
            scale: d.scale,
            load_factor: d.load_factor,
            rule_load_factor: d.rule_load_factor,
            abuse_score: d.abuse_score,
            reason: d.reason.map(|r| r.label().to_owned()),
            shadow: d.shadow,
            degraded: d.degraded,
        }
    }
}

/// The status of a decision: 200, 429, or 503 when the store failed and `on_error` denies.
pub fn status(decision: &Decision) -> StatusCode {
    match (decision.allowed, decision.reason) {
        (true, _) => StatusCode::OK,
        (false, Some(Reason::StoreUnavailable)) => StatusCode::SERVICE_UNAVAILABLE,
        (false, _) => StatusCode::TOO_MANY_REQUESTS,
    }
}

/// The problem members of a denial (IETF ratelimit-headers problem types).
pub fn denial_problem(d: &Decision) -> Problem {
    let (kind, title) = match d.reason {
        Some(Reason::Anomaly) => (problem::ABNORMAL_USAGE, "Abnormal usage detected"),
        Some(Reason::Load) | Some(Reason::StoreUnavailable) => {
            (problem::REDUCED_CAPACITY, "Temporary reduced capacity")
        }
        _ => (problem::QUOTA_EXCEEDED, "Quota exceeded"),
    };
    let mut p = Problem::new(status(d), explain(d));
    p.kind = kind.to_owned();
    p.title = title.to_owned();
    let violated: Vec<&str> = d.violated_names().collect();
    p.with("violated-policies", violated)
}

fn explain(d: &Decision) -> String {
    let denying = d.violated.first().and_then(|&i| d.limit_at(i));
    let name = denying.map_or("", |l| l.name.as_str());
    let wait = match d.retry_after {
        Some(r) => format!("; retry in {} s", ceil_secs(r)),
        None => String::new(),
    };
    // The numbers shown are the denying limit's own effective rate, never the headline's. A
    // bucket's `limit` is its burst, and the rate it refills at is another number.
    let allowance = match (d.violated_rate, denying) {
        (Some(rate), _) if rate.algorithm.reports_burst() && rate.burst != rate.requests => {
            format!(
                "{} per {} s, at most {} at once",
                rate.requests,
                ceil_secs(rate.window).max(1),
                rate.burst
            )
        }
        (Some(rate), _) => format!(
            "{} per {} s",
            rate.capacity(),
            ceil_secs(rate.window).max(1)
        ),
        (None, Some(l)) => format!(
            "{} per {} s",
            d.limit.unwrap_or(0),
            ceil_secs(l.window_micros()).max(1)
        ),
        (None, None) => String::new(),
    };
    match (d.reason, denying) {
        (Some(Reason::StoreUnavailable), _) if d.store_full => {
            "the embedded store (under on_error: local, while Redis fails, the per-instance one) \
             is full (store.max_keys) and none of its keys has expired: a new subject is denied \
             until some expire"
                .to_owned()
        }
        (Some(Reason::StoreUnavailable), _) => {
            "the rate limit store is unavailable and store.on_error denies".to_owned()
        }
        (_, Some(l)) if d.cost_exceeds_limit => format!(
            "cost {} exceeds the limit of {} on \"{name}\"; this request can never pass",
            d.cost,
            l.base_rate().capacity()
        ),
        (Some(Reason::Anomaly), Some(_)) => format!(
            "limit \"{name}\" is reduced to {allowance} for this subject after abnormal usage{wait}"
        ),
        (Some(Reason::Load), Some(_)) => format!(
            "limit \"{name}\" is reduced to {allowance} while the service is under load{wait}"
        ),
        (_, Some(_)) => format!("limit \"{name}\" allows {allowance}{wait}"),
        _ => format!("denied{wait}"),
    }
}

/// The response header that carries a denial's problem for proxies that drop the body.
pub const PROBLEM_HEADER: HeaderName = HeaderName::from_static("x-ratewarden-problem");

/// The `/v1/check` response: the decision JSON, with the problem members on a denial.
pub fn check_response(d: &Decision) -> Response {
    let body = DecisionBody::from(d);
    let mut response = if d.allowed {
        (StatusCode::OK, Json(body)).into_response()
    } else {
        let denial = Denial {
            decision: body,
            problem: denial_problem(d),
        };
        let mut r = (status(d), Json(denial)).into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(problem::CONTENT_TYPE),
        );
        r
    };
    add_headers(d, response.headers_mut());
    response
}

/// The `/v1/auth` response: 200 with no body, or the denial problem; with the problem in the
/// `X-Ratewarden-Problem` header too when `problem_header` (the proxy asked for it).
pub fn auth_response(d: &Decision, problem_header: bool) -> Response {
    let mut response = if d.allowed {
        StatusCode::OK.into_response()
    } else {
        problem_response(denial_problem(d), problem_header)
    };
    add_headers(d, response.headers_mut());
    response
}

/// A problem as the response, copied into the `X-Ratewarden-Problem` header too when
/// `problem_header` (nginx drops the body of an auth subrequest's answer).
pub fn problem_response(problem: Problem, problem_header: bool) -> Response {
    let copy = problem_header.then(|| problem.header_value()).flatten();
    let mut response = problem.into_response();
    if let Some(value) = copy {
        response.headers_mut().insert(PROBLEM_HEADER, value);
    }
    response
}

/// The rate limit headers of a decision.
pub fn add_headers(d: &Decision, headers: &mut HeaderMap) {
    for (name, value) in ratelimit_headers::render(d) {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
}

/// One body that a decision client and a problem-details client both read: the body of a
/// denied `/v1/check` (429, or 503 when the store is unavailable and `store.on_error` denies).
#[derive(Serialize, ToSchema)]
pub struct Denial {
    #[serde(flatten)]
    decision: DecisionBody,
    #[serde(flatten)]
    problem: Problem,
}
