//! The HTTP adapter: translates HTTP requests into engine calls and decisions back.

use crate::engine::Engine;
use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use std::sync::Arc;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub engine: Arc<Engine>,
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .with_state(state)
}

async fn healthz() -> StatusCode {
    StatusCode::OK
}
