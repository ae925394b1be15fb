//! `GET /v1/admin/subjects/{user}`: why a subject gets what it gets.
//!
//! The engine reads the view ([`crate::engine::Engine::inspect_subject`]); this adapter checks
//! the query and writes the JSON.

use super::flags::rfc3339;
use super::subject_name::named_subject;
use super::{Admin, NoBody, query_problem, store_problem};
use crate::engine::{
    InspectError, LimitUsage, SubjectInspection, SubjectQuery, TierSource, path_of,
};
use crate::features::{FEATURE_NAMES, SubjectFeatures};
use crate::http::AppState;
use crate::http::check::{MAX_ENDPOINT_BYTES, endpoint_path};
use crate::http::problem::Problem;
use crate::model::Explanation;
use crate::policy::KeyScope;
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::net::IpAddr;
use utoipa::{IntoParams, ToSchema};

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SubjectParams {
    /// The endpoint whose rule's limits are listed with the tier's; default: `default_endpoint`.
    #[param(example = "/api/search")]
    pub endpoint: Option<String>,
    /// A client address, for the usage of `key: ip` rules (without it they show no usage).
    #[param(example = "203.0.113.7")]
    pub ip: Option<String>,
    /// `true`: the path names the subject by its keyed hash (32 hex digits, as the flagged
    /// list shows it).
    pub hashed: Option<bool>,
    /// The tier the subject's checks name (their `tier` field or `X-Tier` header), which no
    /// store keeps; default: the stored tier, else the policy's default.
    #[param(example = "pro")]
    pub tier: Option<String>,
}

/// Why a subject gets what it gets.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubjectView {
    /// The keyed hash of the user id (32 hex digits); the id itself is never echoed.
    #[schema(example = "5f0c6d1e9a2b4c7d8e1f20314a5b6c7d")]
    pub subject: String,
    /// The tier in force.
    #[schema(example = "free")]
    pub tier: String,
    /// `stored` (from the tier store), `default` (the policy's default tier) or `query`
    /// (named by `?tier=`).
    #[schema(example = "default")]
    pub tier_source: &'static str,
    /// The tier the tier store holds for the subject, null when none: it differs from `tier`
    /// when a reload removed or renamed the stored tier (the default tier applies then).
    #[schema(example = json!(null))]
    pub stored_tier: Option<String>,
    /// The endpoint rule whose limits are listed, as written in the policy (`default` for
    /// `default_endpoint`).
    #[schema(example = "/api/search")]
    pub endpoint_rule: String,
    /// The score of the last control cycle; null before the subject is first scored.
    pub abuse_score: Option<f64>,
    pub flagged: bool,
    /// The load factor in force (the override when one is set).
    pub load_factor: f64,
    /// The factor of the endpoint rule's own load source (`endpoints[].load`), which the
    /// rule's limits scale by instead of `load_factor`; null when the rule has none.
    pub rule_load_factor: Option<f64>,
    /// The load factor for this tier times the applied anomaly factor.
    pub scale: f64,
    /// The subject's features from the last control cycle (`requests` in the window, then the
    /// model's inputs); empty when it had no activity in the anomaly window.
    #[schema(value_type = Object)]
    pub features: Map<String, Value>,
    /// How far the subject is from being scored.
    pub scoring: ScoringView,
    /// The live anomaly threshold.
    pub threshold: f64,
    /// When the flag in force began (RFC 3339); null when not flagged.
    pub flag_start: Option<String>,
    /// The end of the flag's hold (RFC 3339); null when not flagged.
    pub hold_until: Option<String>,
    /// The end of an allowlisting through the admin API (RFC 3339); null when none.
    pub allowlisted_until: Option<String>,
    /// The model in force; null without one.
    pub model_version: Option<String>,
    /// Why the subject scores what it does (null before it is first scored): the score's
    /// `logit` as `base` plus each feature's `contribution`, the `evidence_weight` its request
    /// count gives the model, and whether it is `novel` (a feature outside the model's training
    /// range, scored at the range's edge: its score alone flags nothing).
    #[schema(value_type = Option<Object>)]
    pub explanation: Option<Explanation>,
    /// The tier's limits, then the endpoint rule's.
    pub limits: Vec<LimitView>,
}

/// Progress towards `adaptive.anomaly.min_requests`: a subject is scored once it has that many
/// requests in the anomaly window.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScoringView {
    /// Requests in the window at the last control cycle.
    #[schema(example = 8)]
    pub requests: u64,
    #[schema(example = 20)]
    pub min_requests: u64,
    #[schema(example = "8 of 20 requests")]
    pub progress: String,
}

/// `8 of 20 requests` on the way; `1006 requests, scored from 20` once there (with a model in
/// force: without one the view says so instead).
fn progress(requests: u64, min_requests: u64, model_in_force: bool) -> String {
    if requests < min_requests {
        format!("{requests} of {min_requests} requests")
    } else if model_in_force {
        format!("{requests} requests, scored from {min_requests}")
    } else {
        format!("{requests} requests, not scored: no model is in force")
    }
}

/// One applicable limit and the subject's usage of it.
#[derive(Debug, Serialize, ToSchema)]
pub struct LimitView {
    /// `tier` or `endpoint`.
    #[schema(example = "tier")]
    pub scope: &'static str,
    #[schema(example = "hourly")]
    pub name: String,
    #[schema(example = "sliding_log")]
    pub algorithm: &'static str,
    /// The capacity the policy states (the burst for token_bucket and gcra).
    #[schema(example = 100)]
    pub base: u64,
    /// The capacity after scaling, what the next request is checked against.
    #[schema(example = 100)]
    pub effective: u64,
    /// Quota consumed and not yet restored (null for a `key: ip` limit without `?ip=`).
    #[schema(example = 3)]
    pub used: Option<u64>,
    /// Quota left now, against `effective` (null for a `key: ip` limit without `?ip=`).
    #[schema(example = 97)]
    pub remaining: Option<u64>,
    #[schema(example = 3_600_000)]
    pub window_ms: u64,
    /// What the limit counts per: `user` or `ip`.
    #[schema(example = "user")]
    pub key: &'static str,
    /// A shadow limit never denies; it only reports.
    pub shadow: bool,
    /// The load factor this limit is scaled by: the endpoint rule's own source's for its
    /// limits when it has one, else `load_factor`; 1 for a limit exempt from load scaling.
    #[schema(example = 1.0)]
    pub load_factor: f64,
}

/// Tier, abuse standing, scale, and for each limit of the tier and the endpoint rule its base
/// and effective capacity and the subject's usage. Consumes nothing.
///
/// `used` and `remaining` are read with a dry run of one request: `remaining` is what is left
/// now against `effective`; `used` is the quota consumed, read against whichever of `base`
/// and `effective` is larger (so a limit scaled down to below the usage still shows the usage).
#[utoipa::path(
    get, path = "/v1/admin/subjects/{user}", tag = "admin",
    security(("bearer" = [])),
    params(
        ("user" = String, Path, description = "The user id (as sent to /v1/check), or its hash with hashed=true"),
        SubjectParams,
    ),
    responses(
        (status = 200, description = "The subject's view", body = SubjectView),
        (status = 400, description = "An invalid user, endpoint or ip, or a body (the route takes none)", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or wrong token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The admin API is disabled", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The store is unavailable", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn subject(
    _: Admin,
    State(state): State<AppState>,
    Path(user): Path<String>,
    query: Result<Query<SubjectParams>, QueryRejection>,
    _: NoBody,
) -> Result<Json<SubjectView>, Problem> {
    let Query(query) = query.map_err(query_problem)?;
    let subject = named_subject(&state, &user, query.hashed)?;
    if let Some(endpoint) = &query.endpoint {
        if endpoint.is_empty() || endpoint.len() > MAX_ENDPOINT_BYTES {
            return Err(Problem::bad_request(format!(
                "query parameter `endpoint` must be 1 to {MAX_ENDPOINT_BYTES} bytes (it has {})",
                endpoint.len()
            )));
        }
        endpoint_path(endpoint, "query parameter `endpoint`: ")?;
    }
    let ip = query
        .ip
        .as_deref()
        .map(|s| {
            s.parse::<IpAddr>()
                .map(|ip| ip.to_canonical())
                .map_err(|_| {
                    Problem::bad_request(format!(
                        "query parameter `ip` is not an IP address: {s:?}"
                    ))
                })
        })
        .transpose()?;

    let inspection = state
        .engine
        .inspect_subject(SubjectQuery {
            subject,
            endpoint: query.endpoint.as_deref().map(path_of),
            ip,
            tier: query.tier.as_deref(),
        })
        .await
        .map_err(|e| match e {
            InspectError::Undecidable(e) => Problem::bad_request(e.to_string()),
            InspectError::Store(e) => store_problem(e),
        })?;
    let observed = inspection.observed;
    let model = state.reloader.as_ref().and_then(|r| r.model().get());
    let mut view = SubjectView::from(inspection);
    if model.is_none() {
        // Nothing scores without a model: "scored from 20" would say otherwise.
        view.scoring.progress = progress(view.scoring.requests, view.scoring.min_requests, false);
    }
    if let Some(model) = &model {
        view.model_version = Some(model.version().to_owned());
        // Only for features the control loop scores: a flag held past the subject's last
        // scored cycle keeps that cycle's score, which fewer requests would not explain.
        view.explanation = match (observed, view.abuse_score) {
            (Some(observed), Some(_)) if observed.requests >= view.scoring.min_requests => {
                Some(model.explain(&observed))
            }
            _ => None,
        };
    }
    Ok(Json(view))
}

impl From<SubjectInspection> for SubjectView {
    fn from(i: SubjectInspection) -> Self {
        Self {
            subject: i.subject.to_string(),
            tier: i.tier,
            tier_source: match i.tier_source {
                TierSource::Stored => "stored",
                TierSource::Default => "default",
                TierSource::Query => "query",
            },
            stored_tier: i.stored_tier,
            endpoint_rule: i.endpoint_rule,
            abuse_score: i.abuse_score,
            flagged: i.flagged,
            load_factor: i.load_factor,
            rule_load_factor: i.rule_load_factor,
            scale: i.scale,
            features: features_json(i.observed),
            scoring: {
                let requests = i.observed.map_or(0, |o| o.requests);
                ScoringView {
                    requests,
                    min_requests: i.min_requests,
                    progress: progress(requests, i.min_requests, true),
                }
            },
            threshold: i.threshold,
            flag_start: i.flag_start.and_then(rfc3339),
            hold_until: i.held_until.filter(|h| *h > 0).and_then(rfc3339),
            allowlisted_until: i.allowlisted_until.and_then(rfc3339),
            model_version: None,
            explanation: None,
            limits: i.limits.into_iter().map(LimitView::from).collect(),
        }
    }
}

impl From<LimitUsage> for LimitView {
    fn from(l: LimitUsage) -> Self {
        Self {
            scope: if l.in_tier { "tier" } else { "endpoint" },
            name: l.name,
            algorithm: l.algorithm.name(),
            base: l.base,
            effective: l.effective,
            used: l.used,
            remaining: l.remaining,
            window_ms: u64::try_from(l.window.as_millis()).unwrap_or(u64::MAX),
            key: match l.key {
                KeyScope::Ip => "ip",
                KeyScope::User => "user",
            },
            shadow: l.shadow,
            load_factor: l.load_factor,
        }
    }
}

fn features_json(observed: Option<SubjectFeatures>) -> Map<String, Value> {
    let Some(observed) = observed else {
        return Map::new();
    };
    let mut map = Map::new();
    map.insert("requests".into(), Value::from(observed.requests));
    for (name, value) in FEATURE_NAMES.iter().zip(observed.features.to_array()) {
        map.insert((*name).into(), Value::from(value));
    }
    map
}

#[cfg(test)]
mod tests {
    use super::progress;

    #[test]
    fn progress_counts_up_to_the_minimum_then_says_the_subject_is_scored() {
        assert_eq!(progress(0, 20, true), "0 of 20 requests");
        assert_eq!(progress(19, 20, true), "19 of 20 requests");
        assert_eq!(progress(20, 20, true), "20 requests, scored from 20");
        assert_eq!(progress(1006, 20, true), "1006 requests, scored from 20");
        assert_eq!(progress(8, 20, false), "8 of 20 requests");
        assert_eq!(
            progress(30, 20, false),
            "30 requests, not scored: no model is in force"
        );
    }
}
