//! `PUT /v1/admin/subjects/{user}/tier`: stores or removes a subject's tier.
//!
//! Operators need to move a subject between tiers without the client sending `tier` itself;
//! the tier store is where checks without one look.

use super::subject_name::{SubjectName, named_subject};
use super::{Admin, present, query_problem, store_problem};
use crate::engine::SetTierError;
use crate::http::AppState;
use crate::http::body::JsonBody;
use crate::http::problem::Problem;
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

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
    params(("user" = String, Path, description = "The user id (as sent to /v1/check), or its hash with hashed=true"), SubjectName),
    request_body = TierBody,
    responses(
        (status = 200, description = "Stored (or removed)", body = TierView),
        (status = 400, description = "An unknown tier, a missing field or an invalid user", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 64 KiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON, a charset other than utf-8, or a Content-Encoding", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or wrong token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The admin API is disabled", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The store is unavailable", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn put_tier(
    _: Admin,
    State(state): State<AppState>,
    Path(user): Path<String>,
    query: Result<Query<SubjectName>, QueryRejection>,
    JsonBody(body): JsonBody<TierBody>,
) -> Result<Json<TierView>, Problem> {
    let Query(query) = query.map_err(query_problem)?;
    let subject = named_subject(&state, &user, query.hashed)?;
    let tier = body.tier.ok_or_else(|| {
        Problem::bad_request(
            "field `tier` is required (a tier name, or null to remove the stored tier)",
        )
    })?;
    state
        .engine
        .set_stored_tier_by_hash(subject, tier.as_deref())
        .await
        .map_err(|e| match e {
            SetTierError::UnknownTier(_) => Problem::bad_request(format!("field `tier`: {e}")),
            SetTierError::Store(error) => store_problem(error),
        })?;
    match tier.as_deref() {
        Some(tier) => tracing::info!(
            target: "audit",
            action = "set_tier",
            %subject,
            tier,
            "admin set the stored tier of subject {subject}"
        ),
        None => tracing::info!(
            target: "audit",
            action = "set_tier",
            %subject,
            cleared = true,
            "admin cleared the stored tier of subject {subject}"
        ),
    }
    Ok(Json(TierView {
        subject: subject.to_string(),
        tier,
    }))
}
