//! The security workflow: `GET /v1/admin/flagged` (who is flagged, since when, until when at
//! least, and what stands out), `DELETE /v1/admin/subjects/{user}/flag` (clear a flag) and
//! `PUT`/`DELETE /v1/admin/subjects/{user}/allowlist` (never flag a subject for a stated time).
//!
//! The engine owns the flags and logs each action on the `audit` target; this adapter checks
//! the request and writes the JSON. A subject is named by its user id, as in the subject view,
//! or with `?hashed=true` by the keyed hash the list shows (the daemon knows no other name).

use super::subject_name::{SubjectName, named_subject};
use super::{Admin, NoBody, no_params, query_problem};
use crate::clock::Micros;
use crate::engine::FlaggedSubject;
use crate::http::AppState;
use crate::http::body::JsonBody;
use crate::http::number::{NotInRange, whole_in};
use crate::http::problem::Problem;
use crate::limit::KeyHash;
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, RawQuery, State};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use utoipa::ToSchema;

/// The longest allowlisting: 30 days.
const MAX_TTL_SECONDS: u64 = 30 * 86_400;
/// Features listed per flagged subject.
const TOP_FEATURES: usize = 3;

/// A time as RFC 3339 UTC with milliseconds.
pub(super) fn rfc3339(at: Micros) -> Option<String> {
    let at = chrono::DateTime::from_timestamp_micros(i64::try_from(at).ok()?)?;
    Some(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// The subject a path names (see [`named_subject`]).
fn subject(
    state: &AppState,
    user: &str,
    query: Result<Query<SubjectName>, QueryRejection>,
) -> Result<KeyHash, Problem> {
    let Query(query) = query.map_err(query_problem)?;
    named_subject(state, user, query.hashed)
}

/// One feature that stands out.
#[derive(Debug, Serialize, ToSchema)]
pub struct TopFeature {
    #[schema(example = "denied_ratio")]
    pub name: &'static str,
    /// Its contribution to the score's logit (see the subject view's `explanation`).
    #[schema(example = 4.2)]
    pub contribution: f64,
}

/// A subject flagged now.
#[derive(Debug, Serialize, ToSchema)]
pub struct FlaggedView {
    /// The keyed hash (32 hex digits); act on it with `?hashed=true`.
    pub subject: String,
    pub abuse_score: f64,
    /// When the flag began (RFC 3339); null until the control loop has said.
    pub since: Option<String>,
    /// The end of the flag's hold (RFC 3339); after it the flag ends at the first score below
    /// the threshold. Null when no hold is running.
    pub hold_until: Option<String>,
    /// Requests in the anomaly window at the last cycle (0 for a flag held after the subject
    /// went quiet).
    pub requests: u64,
    /// Up to three features that push the score up most, with their parts of the logit; empty
    /// without a model, for a `gmm` model, or when the last cycle saw no request of the subject.
    pub top_features: Vec<TopFeature>,
}

/// The subjects flagged now.
#[derive(Debug, Serialize, ToSchema)]
pub struct FlaggedList {
    pub threshold: f64,
    /// The model in force; null without one.
    pub model_version: Option<String>,
    /// Highest score first; allowlisted and cleared subjects are left out.
    pub subjects: Vec<FlaggedView>,
}

/// Every subject flagged now, highest score first, with since when, the end of its hold and
/// the features that stand out.
#[utoipa::path(
    get, path = "/v1/admin/flagged", tag = "admin",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The subjects flagged now", body = FlaggedList),
        (status = 400, description = "A query string or a body: the route takes neither", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or wrong token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The admin API is disabled", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn flagged(
    _: Admin,
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    _: NoBody,
) -> Result<Json<FlaggedList>, Problem> {
    no_params(query.as_deref())?;
    let model = state.reloader.as_ref().map(|r| r.model().clone());
    let view = |f: FlaggedSubject| FlaggedView {
        subject: f.subject.to_string(),
        abuse_score: f.abuse_score,
        since: f.since.and_then(rfc3339),
        hold_until: (f.held_until > 0).then(|| rfc3339(f.held_until)).flatten(),
        requests: f.observed.map_or(0, |o| o.requests),
        top_features: match (&model, f.observed) {
            (Some(model), Some(observed)) => model
                .top_features(&observed, TOP_FEATURES)
                .into_iter()
                .map(|(name, contribution)| TopFeature { name, contribution })
                .collect(),
            _ => Vec::new(),
        },
    };
    Ok(Json(FlaggedList {
        threshold: state.engine.scale_factors().thresholds().anomaly_threshold,
        model_version: model
            .as_ref()
            .and_then(|m| m.get())
            .map(|m| m.version().to_owned()),
        subjects: state
            .engine
            .flagged_subjects()
            .into_iter()
            .map(view)
            .collect(),
    }))
}

/// What a clear did.
#[derive(Debug, Serialize, ToSchema)]
pub struct Cleared {
    pub subject: String,
    /// Whether the subject was flagged (and is no longer).
    pub cleared: bool,
}

/// Clears a subject's flag and its hold now; the next control cycle judges it afresh, so a
/// score still at or over the threshold flags it again (allowlist it to prevent that).
#[utoipa::path(
    delete, path = "/v1/admin/subjects/{user}/flag", tag = "admin",
    security(("bearer" = [])),
    params(("user" = String, Path, description = "The user id, or its hash with hashed=true"), SubjectName),
    responses(
        (status = 200, description = "Cleared (or was not flagged)", body = Cleared),
        (status = 400, description = "An invalid user or hash, or a body (the route takes none)", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or wrong token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The admin API is disabled", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn clear_flag(
    _: Admin,
    State(state): State<AppState>,
    Path(user): Path<String>,
    query: Result<Query<SubjectName>, QueryRejection>,
    _: NoBody,
) -> Result<Json<Cleared>, Problem> {
    let subject = subject(&state, &user, query)?;
    let cleared = state.engine.clear_flag(subject);
    Ok(Json(Cleared {
        subject: subject.to_string(),
        cleared,
    }))
}

/// How long to allowlist a subject.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AllowlistBody {
    /// Seconds, 1 to 2592000 (30 days).
    #[schema(example = 3600)]
    #[schema(value_type = Option<u64>, minimum = 1, maximum = 2_592_000)]
    pub ttl_seconds: Option<serde_json::Number>,
}

/// A subject's allowlisting.
#[derive(Debug, Serialize, ToSchema)]
pub struct Allowlisted {
    pub subject: String,
    /// The end of the allowlisting (RFC 3339); null when it was removed.
    pub until: Option<String>,
    /// For a removal: whether the subject was allowlisted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed: Option<bool>,
}

/// Allowlists a subject for `ttl_seconds`: never flagged (so never scaled for anomaly) until
/// then, its flag cleared now.
#[utoipa::path(
    put, path = "/v1/admin/subjects/{user}/allowlist", tag = "admin",
    security(("bearer" = [])),
    params(("user" = String, Path, description = "The user id, or its hash with hashed=true"), SubjectName),
    request_body = AllowlistBody,
    responses(
        (status = 200, description = "Allowlisted", body = Allowlisted),
        (status = 400, description = "A missing or out of range ttl_seconds, an invalid user or hash", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or wrong token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The admin API is disabled", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 64 KiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON, a charset other than utf-8, or a Content-Encoding", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn put_allowlist(
    _: Admin,
    State(state): State<AppState>,
    Path(user): Path<String>,
    query: Result<Query<SubjectName>, QueryRejection>,
    JsonBody(body): JsonBody<AllowlistBody>,
) -> Result<Json<Allowlisted>, Problem> {
    let subject = subject(&state, &user, query)?;
    let ttl = match body
        .ttl_seconds
        .map(|n| (whole_in(&n, 1..=MAX_TTL_SECONDS), n))
    {
        Some((Ok(ttl), _)) => Duration::from_secs(ttl),
        Some((Err(NotInRange::OutOfRange), ttl)) => {
            return Err(Problem::bad_request(format!(
                "field `ttl_seconds` must be 1 to {MAX_TTL_SECONDS} (30 days), not {ttl}"
            )));
        }
        Some((Err(NotInRange::NotWhole), ttl)) => {
            return Err(Problem::bad_request(format!(
                "field `ttl_seconds` must be a whole number of seconds, 1 to {MAX_TTL_SECONDS} \
                 (30 days), not {ttl}"
            )));
        }
        None => {
            return Err(Problem::bad_request(
                "field `ttl_seconds` is required: how long the subject is allowlisted",
            ));
        }
    };
    let until = state.engine.allowlist(subject, ttl);
    Ok(Json(Allowlisted {
        subject: subject.to_string(),
        until: rfc3339(until),
        removed: None,
    }))
}

/// Ends a subject's allowlisting now.
#[utoipa::path(
    delete, path = "/v1/admin/subjects/{user}/allowlist", tag = "admin",
    security(("bearer" = [])),
    params(("user" = String, Path, description = "The user id, or its hash with hashed=true"), SubjectName),
    responses(
        (status = 200, description = "Removed (or was not allowlisted)", body = Allowlisted),
        (status = 400, description = "An invalid user or hash, or a body (the route takes none)", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or wrong token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The admin API is disabled", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_allowlist(
    _: Admin,
    State(state): State<AppState>,
    Path(user): Path<String>,
    query: Result<Query<SubjectName>, QueryRejection>,
    _: NoBody,
) -> Result<Json<Allowlisted>, Problem> {
    let subject = subject(&state, &user, query)?;
    let removed = state.engine.remove_from_allowlist(subject);
    Ok(Json(Allowlisted {
        subject: subject.to_string(),
        until: None,
        removed: Some(removed),
    }))
}
