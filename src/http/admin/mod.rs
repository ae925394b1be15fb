//! The admin API under `/v1/admin/`: its routes, its bearer-token gate and what its handlers
//! share.
//!
//! It answers 404 unless `RATEWARDEN_ADMIN_TOKEN` is set, and then only to
//! `Authorization: Bearer <token>`, compared in constant time ([`Admin`]). Subjects are named by
//! their raw id in the path, or by its keyed hash with `?hashed=true`, but answers only ever
//! carry the keyed hash. The handlers live
//! one concern a file: live thresholds, the view of one subject, flags and the allowlist, stored
//! tiers and policy reload.

mod flags;
mod reload;
mod subject_name;
mod subjects;
mod thresholds;
mod tier;

use super::AppState;
use super::body::{MAX_BODY_BYTES, unreadable};
use super::check::MAX_USER_BYTES;
use super::problem::Problem;
use crate::store::StoreError;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequest, FromRequestParts, MatchedPath, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Deserializer};
use subtle::ConstantTimeEq;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

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
        .routes(routes!(
            thresholds::get_thresholds,
            thresholds::put_thresholds
        ))
        .routes(routes!(subjects::subject))
        .routes(routes!(flags::flagged))
        .routes(routes!(flags::clear_flag))
        .routes(routes!(flags::put_allowlist, flags::delete_allowlist))
        .routes(routes!(tier::put_tier))
        .routes(routes!(reload::reload))
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
        let mut copies = parts.headers.get_all(header::AUTHORIZATION).iter();
        let presented = match (copies.next(), copies.next()) {
            (None, _) => {
                refused(parts, "no Authorization header");
                return Err(unauthorized(None));
            }
            // Which copy a server reads is its own choice: accept none rather than the first.
            (Some(_), Some(_)) => Err("the Authorization header is sent more than once: send one"),
            (Some(value), None) => Ok(bearer_token(value.as_bytes())),
        };
        let problem = match presented {
            Err(problem) => problem,
            Ok(presented) => match presented {
                Some(presented) if token_matches(presented, token.as_bytes()) => return Ok(Admin),
                None => "the Authorization header must be `Bearer <token>`",
                Some(_) => "wrong admin token",
            },
        };
        refused(parts, problem);
        Err(unauthorized(Some(problem)))
    }
}

/// Logs a refused admin request on the `audit` target, so that someone guessing the token
/// shows in the log (a token presented is logged at `warn`, a request without one at `info`).
/// The route is logged, not the path: `/v1/admin/subjects/{user}` holds a raw user id, and a
/// path can be 64 KiB long.
fn refused(parts: &Parts, problem: &str) {
    let method = &parts.method;
    let path = parts
        .extensions
        .get::<MatchedPath>()
        .map_or("(no route)", MatchedPath::as_str);
    match parts.headers.contains_key(header::AUTHORIZATION) {
        true => tracing::warn!(target: "audit", %method, path, "admin request refused: {problem}"),
        false => tracing::info!(target: "audit", %method, path, "admin request refused: {problem}"),
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
// Shared by the handlers

/// A field that is present: `Some` of its value (which for an `Option` may itself be `None`,
/// an explicit `null`). With `#[serde(default)]`, an absent field stays `None`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
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

/// The query of a route that takes none: `Ok` without parameters, else a 400, so that an
/// operator who adds one (`/v1/admin/reload?dry_run=true`) learns that it does nothing before
/// the route acts.
fn no_params(query: Option<&str>) -> Result<(), Problem> {
    let Some(query) = query.filter(|q| q.split('&').any(|part| !part.is_empty())) else {
        return Ok(());
    };
    let shown: String = query.chars().take(100).collect();
    let more = if shown.len() < query.len() { "..." } else { "" };
    Err(Problem::bad_request(format!(
        "query string: this route takes no parameters (the request has `{shown}{more}`)"
    )))
}

/// The body of a route that takes none: nothing, or an empty JSON object (`{}`, which many
/// HTTP clients send by default), else a 400 that names what would have been ignored, for the
/// reason of [`no_params`] (`{"dry_run": true}` posted to the reload route must not reload).
/// Last among a handler's extractors, so a missing token is still a 401.
pub(super) struct NoBody;

impl<S: Send + Sync> FromRequest<S> for NoBody {
    type Rejection = Problem;

    async fn from_request(request: Request, _: &S) -> Result<Self, Problem> {
        let body = axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES)
            .await
            .map_err(|error| unreadable(&error, MAX_BODY_BYTES))?;
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(NoBody);
        }
        match serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&body) {
            Ok(object) if object.is_empty() => Ok(NoBody),
            Ok(object) => Err(Problem::bad_request(format!(
                "this route takes no request body, so `{}` would do nothing: send none, or {{}}",
                object.keys().next().map_or("", String::as_str)
            ))),
            Err(_) => Err(Problem::bad_request(format!(
                "this route takes no request body (the request has {} bytes): send none, or {{}}",
                body.len()
            ))),
        }
    }
}

/// A query string the route cannot read, as a 400 in our words (axum's start with "Failed to
/// deserialize query string").
fn query_problem(rejection: QueryRejection) -> Problem {
    let text = rejection.body_text();
    let reason = text
        .strip_prefix("Failed to deserialize query string: ")
        .unwrap_or(&text);
    Problem::bad_request(format!("query string: {reason}"))
}

fn store_problem(error: StoreError) -> Problem {
    Problem::new(StatusCode::SERVICE_UNAVAILABLE, error.to_string())
}
