//! `GET /v1/admin/subjects/{user}`: why a subject gets what it gets.
//!
//! It reads usage with dry runs of the engine's own plan, so what it shows is exactly what the
//! next check would be judged against, and consumes nothing.

use super::{Admin, check_user, store_problem};
use crate::engine::{CheckError, CheckRequest, Plan};
use crate::http::AppState;
use crate::http::check::MAX_ENDPOINT_BYTES;
use crate::http::problem::Problem;
use crate::policy::KeyScope;
use crate::store::Applied;
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::net::{IpAddr, Ipv4Addr};
use utoipa::{IntoParams, ToSchema};

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SubjectQuery {
    /// The endpoint whose rule's limits are listed with the tier's; default: `default_endpoint`.
    #[param(example = "/api/search")]
    pub endpoint: Option<String>,
    /// A client address, for the usage of `key: ip` rules (without it they show no usage).
    #[param(example = "203.0.113.7")]
    pub ip: Option<String>,
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
    /// `stored` (from the tier store) or `default` (the policy's default tier).
    #[schema(example = "default")]
    pub tier_source: &'static str,
    /// The endpoint rule whose limits are listed, as written in the policy (`default` for
    /// `default_endpoint`).
    #[schema(example = "/api/search")]
    pub endpoint_rule: String,
    /// The score of the last control cycle; null before the subject is first scored.
    pub abuse_score: Option<f64>,
    pub flagged: bool,
    /// The load factor in force (the override when one is set).
    pub load_factor: f64,
    /// The load factor for this tier times the applied anomaly factor.
    pub scale: f64,
    /// The subject's features from the last control cycle (`requests` in the window, then the
    /// model's inputs); empty when it had no activity in the anomaly window.
    #[schema(value_type = Object)]
    pub features: Map<String, Value>,
    /// The tier's limits, then the endpoint rule's.
    pub limits: Vec<LimitView>,
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
        ("user" = String, Path, description = "The user id (as sent to /v1/check)"),
        SubjectQuery,
    ),
    responses(
        (status = 200, description = "The subject's view", body = SubjectView),
        (status = 400, description = "An invalid user, endpoint or ip", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or wrong token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The admin API is disabled", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The store is unavailable", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn subject(
    _: Admin,
    State(state): State<AppState>,
    Path(user): Path<String>,
    query: Result<Query<SubjectQuery>, QueryRejection>,
) -> Result<Json<SubjectView>, Problem> {
    let Query(query) = query.map_err(|e| Problem::bad_request(e.body_text()))?;
    check_user(&user)?;
    if let Some(endpoint) = &query.endpoint {
        if endpoint.is_empty() || endpoint.len() > MAX_ENDPOINT_BYTES {
            return Err(Problem::bad_request(format!(
                "query parameter `endpoint` must be 1 to {MAX_ENDPOINT_BYTES} bytes (it has {})",
                endpoint.len()
            )));
        }
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

    let engine = &state.engine;
    let stored = engine.stored_tier(&user).await;
    // A `key: ip` rule needs an address to be planned. Without `?ip=` a placeholder address
    // stands in, and the usage of the rule's limits is left out (null) rather than shown for
    // the placeholder: their base and effective capacities do not depend on the address.
    let mut request = CheckRequest::new(&user, query.endpoint.as_deref().unwrap_or(""));
    request.ip = Some(ip.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
    let plan = match query.endpoint {
        Some(_) => engine.plan(&request, stored.as_deref()),
        None => engine.plan_default_endpoint(&request, stored.as_deref()),
    }
    .map_err(|e| match e {
        CheckError::UnknownTier(_) | CheckError::MissingIp { .. } => {
            Problem::bad_request(e.to_string())
        }
    })?;
    let ip_usage_known = ip.is_some();

    let applied = engine.inspect(&plan).await.map_err(store_problem)?;
    // Usage against the base capacities too, when scaling changed any of them: see `used`.
    let scaled = (0..applied.checks.len()).any(|i| plan.scales(i).enforced != 1.0);
    let at_base = if scaled {
        let mut unscaled = plan.clone();
        unscaled.load_factor = 1.0;
        unscaled.anomaly_factor = 1.0;
        Some(engine.inspect(&unscaled).await.map_err(store_problem)?)
    } else {
        None
    };

    let resolved = &plan.resolved;
    let tier = resolved.tier();
    let rule = resolved.rule();
    let tier_count = resolved.tier_limit_count();
    let limits = resolved
        .limits()
        .enumerate()
        .zip(&applied.checks)
        .map(|((i, limit), result)| {
            let in_tier = i < tier_count;
            let by_ip = !in_tier && rule.key == KeyScope::Ip;
            let base = limit.base_rate().capacity();
            let outcome = result.outcome;
            let effective = outcome.limit;
            let (used, remaining) = if by_ip && !ip_usage_known {
                (None, None)
            } else {
                let remaining = remaining_now(&plan, &applied, i);
                let mut used = effective.saturating_sub(remaining);
                if let Some(at_base) = &at_base {
                    used = used.max(base.saturating_sub(remaining_now(&plan, at_base, i)));
                }
                (Some(used), Some(remaining))
            };
            LimitView {
                scope: if in_tier { "tier" } else { "endpoint" },
                name: limit.name.clone(),
                algorithm: limit.algorithm.name(),
                base,
                effective,
                used,
                remaining,
                window_ms: u64::try_from(limit.window.as_millis()).unwrap_or(u64::MAX),
                key: if by_ip { "ip" } else { "user" },
                shadow: limit.shadow,
            }
        })
        .collect();

    let tier_source = match stored.as_deref() {
        Some(name) if name == tier.name => "stored",
        _ => "default",
    };
    Ok(Json(SubjectView {
        subject: plan.user.to_string(),
        tier: tier.name.clone(),
        tier_source,
        endpoint_rule: rule.pattern.display(),
        abuse_score: plan.abuse_score,
        flagged: plan.flagged,
        load_factor: plan.load_factor,
        scale: plan.reported_scale(),
        features: features_json(engine.scale_factors().observed(plan.user)),
        limits,
    }))
}

/// What is left of the `i`-th limit now. The dry run evaluates one more request of the plan's
/// cost, and an allowed outcome's `remaining` is what would be left after it: add the cost
/// back. A denied outcome's `remaining` is unchanged (a denial consumes nothing).
fn remaining_now(plan: &Plan, applied: &Applied, i: usize) -> u64 {
    let outcome = applied.checks[i].outcome;
    if outcome.allowed {
        outcome.remaining.saturating_add(plan.cost)
    } else {
        outcome.remaining
    }
}

fn features_json(observed: Option<crate::features::Observed>) -> Map<String, Value> {
    let Some(observed) = observed else {
        return Map::new();
    };
    let mut map = Map::new();
    map.insert("requests".into(), Value::from(observed.requests));
    for (name, value) in crate::features::FEATURE_NAMES
        .iter()
        .zip(observed.features.to_array())
    {
        map.insert((*name).into(), Value::from(value));
    }
    map
}
