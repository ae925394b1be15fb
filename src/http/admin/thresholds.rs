//! `GET` and `PUT /v1/admin/thresholds`: the live anomaly and load tuning values.
//!
//! A `PUT` is a patch validated as a whole against the merged result, so a request that moves
//! `load_low` and `load_high` together is judged on where both end up, and a refused one
//! changes nothing.

use super::{Admin, NoBody, no_params, present};
use crate::engine::Thresholds;
use crate::http::AppState;
use crate::http::body::JsonBody;
use crate::http::problem::Problem;
use crate::policy::inverted_load_factors;
use axum::Json;
use axum::extract::{RawQuery, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The largest value `load_factor_override`, `load_high_factor` and `load_low_factor` take
/// (the policy file's bound for the factors).
pub const MAX_FACTOR: f64 = 10.0;

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
    /// Load factor above `load_high`: greater than 0, at most 10 (above 1 grows limits under load).
    #[schema(example = 0.5)]
    pub load_high_factor: f64,
    /// Load factor below `load_low`: greater than 0, at most 10 (below 1 shrinks idle limits).
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

impl ThresholdsPatch {
    /// `current` with this patch applied, or a 400 naming the first field out of range.
    pub fn apply_to(&self, current: Thresholds) -> Result<Thresholds, Problem> {
        let mut t = Thresholds {
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
        // As the policy file bounds them.
        for (field, x) in [
            ("load_high_factor", t.load_high_factor),
            ("load_low_factor", t.load_low_factor),
        ] {
            check(
                x > 0.0 && x <= MAX_FACTOR,
                format!(
                    "field `{field}` must be greater than 0 and at most {MAX_FACTOR} (it is {x})"
                ),
            )?;
        }
        if let Some(x) = t.load_factor_override {
            check(
                (0.0..=MAX_FACTOR).contains(&x),
                format!(
                    "field `load_factor_override` must be null or between 0 and {MAX_FACTOR} (it is {x})"
                ),
            )?;
        }
        // `-0.0` passes every range check; echoed (and logged at the next reload) as `-0`.
        for x in [
            &mut t.anomaly_threshold,
            &mut t.anomaly_factor,
            &mut t.load_low,
        ] {
            *x += 0.0;
        }
        if let Some(x) = &mut t.load_factor_override {
            *x += 0.0;
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
        (status = 400, description = "A query string or a body: the route takes neither", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or wrong token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The admin API is disabled", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_thresholds(
    _: Admin,
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    _: NoBody,
) -> Result<Json<ThresholdsBody>, Problem> {
    no_params(query.as_deref())?;
    Ok(Json(state.engine.scale_factors().thresholds().into()))
}

/// Changes any subset of the thresholds; they apply from the next decision until the next
/// reload, which resets them to the policy file's values.
#[utoipa::path(
    put, path = "/v1/admin/thresholds", tag = "admin",
    security(("bearer" = [])),
    request_body = ThresholdsPatch,
    responses(
        (status = 200, description = "The new values", body = ThresholdsBody),
        (status = 400, description = "A value out of range, an unknown field or a query string; nothing changed", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 64 KiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON, a charset other than utf-8, or a Content-Encoding", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or wrong token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The admin API is disabled", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn put_thresholds(
    _: Admin,
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    JsonBody(patch): JsonBody<ThresholdsPatch>,
) -> Result<Json<ThresholdsBody>, Problem> {
    no_params(query.as_deref())?;
    let scale = state.engine.scale_factors();
    // Every reload takes this lock too (Engine::reload): a reset is never undone by a PUT
    // that read the thresholds before it.
    let _writes = scale.lock_writes();
    let before = scale.thresholds();
    let next = patch.apply_to(before)?;
    scale.set_thresholds(next);
    // Still an audit line (someone used the admin token), but not one that reads as a change.
    let what = if next == before {
        "admin set the thresholds to the values they had: nothing changed"
    } else {
        "admin changed the thresholds"
    };
    let factor_override = next
        .load_factor_override
        .map_or("none".to_owned(), |f| f.to_string());
    tracing::info!(
        target: "audit",
        action = "set_thresholds",
        anomaly_threshold = next.anomaly_threshold,
        anomaly_factor = next.anomaly_factor,
        anomaly_shadow = next.anomaly_shadow,
        load_high = next.load_high,
        load_low = next.load_low,
        load_high_factor = next.load_high_factor,
        load_low_factor = next.load_low_factor,
        load_factor_override = %factor_override,
        "{what}"
    );
    // As at start-up and at a reload: allowed, but rarely meant.
    let set = |field: Option<f64>, x: f64| if field.is_some() { x } else { 1.0 };
    for warning in inverted_load_factors(
        (
            "load_high_factor",
            set(patch.load_high_factor, next.load_high_factor),
        ),
        (
            "load_low_factor",
            set(patch.load_low_factor, next.load_low_factor),
        ),
    ) {
        tracing::warn!("admin thresholds: {warning}");
    }
    Ok(Json(next.into()))
}
