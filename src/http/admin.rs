//! The admin API under `/v1/admin/`: live thresholds, the view of one subject, stored tiers
//! and policy reload.
//!
//! It answers 404 unless `RATEWARDEN_ADMIN_TOKEN` is set, and then only to
//! `Authorization: Bearer <token>`, compared in constant time ([`Admin`]). Subjects are named by
//! their raw id in the path, but answers only ever carry the keyed hash of it.

use super::AppState;
use super::body::JsonBody;
use super::check::{MAX_ENDPOINT_BYTES, MAX_USER_BYTES};
use super::problem::Problem;
use crate::engine::{CheckError, CheckRequest, Plan, SetTierError, Thresholds};
use crate::policy::KeyScope;
use crate::store::{Applied, StoreError};
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::net::{IpAddr, Ipv4Addr};
use subtle::ConstantTimeEq;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{IntoParams, Modify, OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The largest value `load_factor_override`, `load_high_factor` and `load_low_factor` take
/// (the policy file's bound for the factors).
pub const MAX_FACTOR: f64 = 10.0;

/// Serialises the admin writes of the thresholds (read, merge, validate, store; and reload,
/// which resets them), so two concurrent `PUT`s of different fields do not lose one.
static THRESHOLD_WRITES: Mutex<()> = Mutex::new(());

#[derive(OpenApi)]
#[openapi(modifiers(&BearerScheme))]
struct AdminDoc;

/// Declares the `bearer` security scheme the admin paths require.
struct BearerScheme;

impl Modify for BearerScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        openapi
            .components
            .get_or_insert_with(Default::default)
            .add_security_scheme(
                "bearer",
                SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
            );
    }
}

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(AdminDoc::openapi())
        .routes(routes!(get_thresholds, put_thresholds))
        .routes(routes!(subject))
        .routes(routes!(put_tier))
        .routes(routes!(reload))
}

// ---------------------------------------------------------------------------------------------
// Authentication

/// Proof that a request may use the admin API: the API is enabled and the request carries its
/// token. Handlers take it first, so a disabled API is a 404 and a bad token a 401 before any
/// other part of the request is looked at.
pub struct Admin;

impl FromRequestParts<AppState> for Admin {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let Some(token) = state.admin_token.as_deref() else {
            return Err(Problem::new(
                StatusCode::NOT_FOUND,
                "the admin API is disabled: set RATEWARDEN_ADMIN_TOKEN",
            )
            .into_response());
        };
        let presented = match parts.headers.get(header::AUTHORIZATION) {
            None => return Err(unauthorized(None)),
            Some(value) => bearer_token(value.as_bytes()),
        };
        match presented {
            None => Err(unauthorized(Some(
                "the Authorization header must be `Bearer <token>`",
            ))),
            Some(presented) if token_matches(presented, token.as_bytes()) => Ok(Admin),
            Some(_) => Err(unauthorized(Some("wrong admin token"))),
        }
    }
}

/// The token of an `Authorization: Bearer <token>` value (the scheme is case-insensitive).
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    const SCHEME: &[u8] = b"bearer ";
    if value.len() <= SCHEME.len() || !value[..SCHEME.len()].eq_ignore_ascii_case(SCHEME) {
        return None;
    }
    let token = value[SCHEME.len()..].trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// Compares in constant time. Both sides are hashed first: comparing the fixed-size digests
/// takes the same time whatever the lengths, where comparing the tokens themselves would stop
/// early on a length mismatch and so reveal the token's length.
fn token_matches(presented: &[u8], expected: &[u8]) -> bool {
    let presented = blake3::hash(presented);
    let expected = blake3::hash(expected);
    presented.as_bytes().ct_eq(expected.as_bytes()).into()
}

/// A 401 with `WWW-Authenticate: Bearer` (RFC 6750: `error="invalid_token"` when a token was
/// presented but is not the right one, no error code when none was presented).
fn unauthorized(problem: Option<&str>) -> Response {
    let (detail, challenge) = match problem {
        None => (
            "missing Authorization header: the admin API needs `Authorization: Bearer <token>`",
            "Bearer",
        ),
        Some(detail) => (detail, "Bearer error=\"invalid_token\""),
    };
    let mut response = Problem::new(StatusCode::UNAUTHORIZED, detail).into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    response
}

// ---------------------------------------------------------------------------------------------
// Thresholds

/// The live tuning values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, ToSchema)]
pub struct ThresholdsBody {
    /// Abuse score at or above which a subject is flagged, 0 to 1.
    #[schema(example = 0.8)]
    pub anomaly_threshold: f64,
    /// Scale of a flagged subject's limits, 0 to 1 (0 blocks it).
    #[schema(example = 0.1)]
    pub anomaly_factor: f64,
    /// Flag and count, but do not scale.
    pub anomaly_shadow: bool,
    /// Smoothed CPU share above which limits shrink, 0 to 1, above `load_low`.
    #[schema(example = 0.8)]
    pub load_high: f64,
    /// Smoothed CPU share below which limits grow, 0 to 1, below `load_high`.
    #[schema(example = 0.3)]
    pub load_low: f64,
    /// Load factor above `load_high`: greater than 0, at most 10.
    #[schema(example = 0.5)]
    pub load_high_factor: f64,
    /// Load factor below `load_low`: greater than 0, at most 10.
    #[schema(example = 1.5)]
    pub load_low_factor: f64,
    /// A load factor pinned by an operator (0 to 10), or null to follow the measured load.
    pub load_factor_override: Option<f64>,
}

impl From<Thresholds> for ThresholdsBody {
    fn from(t: Thresholds) -> Self {
        Self {
            anomaly_threshold: t.anomaly_threshold,
            anomaly_factor: t.anomaly_factor,
            anomaly_shadow: t.anomaly_shadow,
            load_high: t.load_high,
            load_low: t.load_low,
            load_high_factor: t.load_high_factor,
            load_low_factor: t.load_low_factor,
            load_factor_override: t.load_factor_override,
        }
    }
}

/// Any subset of the thresholds. An absent field keeps its value; `null` is accepted only for
/// `load_factor_override`, where it releases the override.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ThresholdsPatch {
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<f64>)]
    pub anomaly_threshold: Option<f64>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<f64>)]
    pub anomaly_factor: Option<f64>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<bool>)]
    pub anomaly_shadow: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<f64>)]
    pub load_high: Option<f64>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<f64>)]
    pub load_low: Option<f64>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<f64>)]
    pub load_high_factor: Option<f64>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<f64>)]
    pub load_low_factor: Option<f64>,
    /// A number pins the load factor; `null` releases it; absent leaves it as it is.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<f64>, nullable)]
    pub load_factor_override: Option<Option<f64>>,
}

/// A field that is present: `Some` of its value (which for an `Option` may itself be `None`,
/// an explicit `null`). With `#[serde(default)]`, an absent field stays `None`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

impl ThresholdsPatch {
    /// `current` with this patch applied, or a 400 naming the first field out of range.
    pub fn apply_to(&self, current: Thresholds) -> Result<Thresholds, Problem> {
        let t = Thresholds {
            anomaly_threshold: self.anomaly_threshold.unwrap_or(current.anomaly_threshold),
            anomaly_factor: self.anomaly_factor.unwrap_or(current.anomaly_factor),
            anomaly_shadow: self.anomaly_shadow.unwrap_or(current.anomaly_shadow),
            load_high: self.load_high.unwrap_or(current.load_high),
            load_low: self.load_low.unwrap_or(current.load_low),
            load_high_factor: self.load_high_factor.unwrap_or(current.load_high_factor),
            load_low_factor: self.load_low_factor.unwrap_or(current.load_low_factor),
            load_factor_override: self
                .load_factor_override
                .unwrap_or(current.load_factor_override),
        };
        let unit = |field: &str, x: f64| {
            check(
                (0.0..=1.0).contains(&x),
                format!("field `{field}` must be between 0 and 1 (it is {x})"),
            )
        };
        let factor = |field: &str, x: f64| {
            check(
                x > 0.0 && x <= MAX_FACTOR,
                format!(
                    "field `{field}` must be greater than 0 and at most {MAX_FACTOR} (it is {x})"
                ),
            )
        };
        unit("anomaly_threshold", t.anomaly_threshold)?;
        unit("anomaly_factor", t.anomaly_factor)?;
        unit("load_high", t.load_high)?;
        unit("load_low", t.load_low)?;
        if t.load_low >= t.load_high {
            // Name the field the request changed (both when it changed both).
            return Err(Problem::bad_request(if self.load_low.is_some() {
                format!(
                    "field `load_low` must be below `load_high` ({} is not below {})",
                    t.load_low, t.load_high
                )
            } else {
                format!(
                    "field `load_high` must be above `load_low` ({} is not above {})",
                    t.load_high, t.load_low
                )
            }));
        }
        factor("load_high_factor", t.load_high_factor)?;
        factor("load_low_factor", t.load_low_factor)?;
        if let Some(x) = t.load_factor_override {
            check(
                (0.0..=MAX_FACTOR).contains(&x),
                format!(
                    "field `load_factor_override` must be null or between 0 and {MAX_FACTOR} (it is {x})"
                ),
            )?;
        }
        Ok(t)
    }
}

fn check(ok: bool, detail: String) -> Result<(), Problem> {
    if ok {
        Ok(())
    } else {
        Err(Problem::bad_request(detail))
    }
}

/// The live thresholds.
#[utoipa::path(
    get, path = "/v1/admin/thresholds", tag = "admin",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The live tuning values", body = ThresholdsBody),
        (status = 401, description = "Missing or wrong token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The admin API is disabled", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_thresholds(_: Admin, State(state): State<AppState>) -> Json<ThresholdsBody> {
    Json(state.engine.scale_factors().thresholds().into())
}

/// Changes any subset of the thresholds; they apply from the next decision until the next
/// reload, which resets them to the policy file's values.
#[utoipa::path(
    put, path = "/v1/admin/thresholds", tag = "admin",
    security(("bearer" = [])),
    request_body = ThresholdsPatch,
    responses(
        (status = 200, description = "The new values", body = ThresholdsBody),
        (status = 400, description = "A value out of range or an unknown field; nothing changed", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or wrong token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The admin API is disabled", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn put_thresholds(
    _: Admin,
    State(state): State<AppState>,
    JsonBody(patch): JsonBody<ThresholdsPatch>,
) -> Result<Json<ThresholdsBody>, Problem> {
    let scale = state.engine.scale_factors();
    let _writes = THRESHOLD_WRITES.lock();
    let next = patch.apply_to(scale.thresholds())?;
    scale.set_thresholds(next);
    tracing::info!(?next, "thresholds changed through the admin API");
    Ok(Json(next.into()))
}

// ---------------------------------------------------------------------------------------------
// Subjects

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
    /// The subject's anomaly features (empty until the control loop computes them).
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

    let standing = engine.scale_factors().standing(plan.user);
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
        flagged: standing.is_some_and(|s| s.flagged),
        load_factor: plan.load_factor,
        scale: plan.reported_scale(),
        features: Map::new(),
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

fn check_user(user: &str) -> Result<(), Problem> {
    if user.is_empty() || user.len() > MAX_USER_BYTES {
        return Err(Problem::bad_request(format!(
            "the user in the path must be 1 to {MAX_USER_BYTES} bytes (it has {})",
            user.len()
        )));
    }
    Ok(())
}

fn store_problem(error: StoreError) -> Problem {
    Problem::new(StatusCode::SERVICE_UNAVAILABLE, error.to_string())
}

/// The tier to store for a subject.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TierBody {
    /// A tier of the policy, or null to remove the stored tier (the default tier applies then).
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, nullable, example = "pro")]
    pub tier: Option<Option<String>>,
}

/// A subject's stored tier.
#[derive(Debug, Serialize, ToSchema)]
pub struct TierView {
    /// The keyed hash of the user id (32 hex digits).
    pub subject: String,
    /// The stored tier; null when none is stored.
    pub tier: Option<String>,
}

/// Stores or removes a subject's tier in the tier store; checks without a `tier` use it from
/// the next request.
#[utoipa::path(
    put, path = "/v1/admin/subjects/{user}/tier", tag = "admin",
    security(("bearer" = [])),
    params(("user" = String, Path, description = "The user id (as sent to /v1/check)")),
    request_body = TierBody,
    responses(
        (status = 200, description = "Stored (or removed)", body = TierView),
        (status = 400, description = "An unknown tier, a missing field or an invalid user", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or wrong token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The admin API is disabled", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The store is unavailable", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn put_tier(
    _: Admin,
    State(state): State<AppState>,
    Path(user): Path<String>,
    JsonBody(body): JsonBody<TierBody>,
) -> Result<Json<TierView>, Problem> {
    check_user(&user)?;
    let tier = body.tier.ok_or_else(|| {
        Problem::bad_request(
            "field `tier` is required (a tier name, or null to remove the stored tier)",
        )
    })?;
    let subject = state
        .engine
        .set_stored_tier(&user, tier.as_deref())
        .await
        .map_err(|e| match e {
            SetTierError::UnknownTier(_) => Problem::bad_request(format!("field `tier`: {e}")),
            SetTierError::Store(error) => store_problem(error),
        })?;
    tracing::info!(%subject, ?tier, "stored tier changed through the admin API");
    Ok(Json(TierView {
        subject: subject.to_string(),
        tier,
    }))
}

// ---------------------------------------------------------------------------------------------
// Reload

#[derive(Debug, Serialize, ToSchema)]
pub struct Reloaded {
    pub reloaded: bool,
}

/// Reloads the policy file. A file that fails validation is refused with every error (`errors`)
/// and the policy in force stays. A reload resets the thresholds to the file's values.
#[utoipa::path(
    post, path = "/v1/admin/reload", tag = "admin",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Reloaded", body = Reloaded),
        (status = 401, description = "Missing or wrong token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The admin API is disabled, or there is no policy file", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The file was refused; `errors` lists every error", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn reload(_: Admin, State(state): State<AppState>) -> Result<Json<Reloaded>, Problem> {
    let Some(reloader) = state.reloader.clone() else {
        return Err(Problem::new(
            StatusCode::NOT_FOUND,
            "no policy file to reload (the daemon was not started from one)",
        ));
    };
    // Reading the file blocks: off the async workers.
    let outcome = tokio::task::spawn_blocking(move || {
        let _writes = THRESHOLD_WRITES.lock();
        reloader
            .reload("admin API")
            .map_err(|errors| (reloader.path().display().to_string(), errors))
    })
    .await
    .map_err(|_| {
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the reload failed unexpectedly (a bug: please report it)",
        )
    })?;
    match outcome {
        Ok(()) => Ok(Json(Reloaded { reloaded: true })),
        Err((path, errors)) => {
            let lines = errors.lines();
            Err(Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!(
                    "policy {path} refused ({} error{}); the policy in force stays",
                    lines.len(),
                    if lines.len() == 1 { "" } else { "s" }
                ),
            )
            .with("errors", lines))
        }
    }
}
