//! Liveness, readiness, metrics and the OpenAPI document.

use super::AppState;
use super::problem::Problem;
use crate::store::Store;
use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// 200 while the process runs.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "Running")))]
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// 200 when the store answers and a policy is loaded; 503 saying what is missing otherwise.
#[utoipa::path(
    get, path = "/readyz", tag = "operations",
    responses(
        (status = 200, description = "Ready"),
        (status = 503, description = "Not ready", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Value>, Problem> {
    match state.engine.store().ping().await {
        Ok(()) => Ok(Json(json!({"status": "ready"}))),
        Err(error) => Err(Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("store unreachable: {error}"),
        )),
    }
}

/// Prometheus metrics in the text format.
#[utoipa::path(
    get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain"))
)]
pub async fn metrics(State(state): State<AppState>) -> Response {
    let scale = state.engine.scale_factors();
    state.metrics.load_factor.set(scale.load_factor());
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(),
    )
        .into_response()
}
