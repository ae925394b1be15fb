//! `POST /v1/admin/reload`: reloads the policy file and the model it names, on request.
//!
//! Signals and file watching cover an operator on the host; this covers one who only has the
//! API, and answers with every error of a refused file instead of only logging them.

use super::{Admin, NoBody, no_params};
use crate::http::AppState;
use crate::http::problem::Problem;
use crate::reload::ReloadError;
use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

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
        (status = 400, description = "A query string or a body: the route takes neither", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or wrong token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The admin API is disabled, or there is no policy file", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The policy file was refused (`errors` lists every error; the policy in force stays), or the policy was reloaded and its model refused (`policy_reloaded: true`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn reload(
    _: Admin,
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    _: NoBody,
) -> Result<Json<Reloaded>, Problem> {
    no_params(query.as_deref())?;
    let Some(reloader) = state.reloader.clone() else {
        return Err(Problem::new(
            StatusCode::NOT_FOUND,
            "no policy file to reload (the daemon was not started from one)",
        ));
    };
    tracing::info!(target: "audit", action = "reload", "admin asked for a reload");
    let model = reloader.model().clone();
    // Reading the file blocks: off the async workers.
    let outcome = tokio::task::spawn_blocking(move || {
        reloader
            .reload("admin API")
            // Boxed: the error is large (clippy's result_large_err).
            .map_err(|error| Box::new((reloader.path().display().to_string(), error)))
    })
    .await
    .map_err(|_| {
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the reload failed unexpectedly (a bug: please report it)",
        )
    })?;
    match outcome.map_err(|boxed| *boxed) {
        Ok(()) => Ok(Json(Reloaded { reloaded: true })),
        // The policy went in before its model was read: say so, or an operator takes the 422
        // for "nothing changed" while the thresholds were reset.
        Err((policy, ReloadError::Model { path, error })) => Err(Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "policy {policy} reloaded (thresholds set through the admin API are reset to \
                 the file's), but model {path} refused; {}",
                model.in_force()
            ),
        )
        .with("policy_reloaded", true)
        .with("errors", vec![error.to_string()])),
        Err((path, ReloadError::Policy(errors))) => {
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
