//! The HTTP adapter: translates HTTP requests into engine calls and decisions back.
//!
//! Every route is registered through utoipa so `/openapi.json` describes exactly what is
//! served. Every 4xx and 5xx the router answers is `application/problem+json`, including those
//! produced outside the handlers (unknown route, wrong method, timeout, panic). Requests hyper
//! refuses before the router sees them (431 for oversized headers, 414, 400 for malformed HTTP)
//! get hyper's answer: an empty body and no content type.

mod admin;
mod auth;
pub mod body;
mod check;
mod decision;
mod health;
mod number;
pub mod problem;
mod report;

use crate::engine::Engine;
use crate::metrics::Metrics;
use crate::reload::Reloader;
use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use problem::Problem;
use std::sync::Arc;
use std::time::Duration;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use check::{BatchBody, CheckBody};
pub use decision::DecisionBody;

/// The longest a request may take, body included, before it gets a 408.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub engine: Arc<Engine>,
    pub metrics: Arc<Metrics>,
    /// `RATEWARDEN_ADMIN_TOKEN`; the admin API answers 404 when unset.
    pub admin_token: Option<Arc<str>>,
    /// Behind an `Arc`: the state is cloned for every request, and a reloader holds paths.
    pub reloader: Option<Arc<Reloader>>,
}

#[derive(OpenApi)]
#[openapi(info(
    title = "ratewarden",
    description = "An adaptive, anomaly-aware rate limiter. See docs/reference/http-api.md in the repository."
))]
struct ApiDoc;

/// The router and the OpenAPI document that describes it.
pub fn router_and_openapi(state: AppState) -> (Router, utoipa::openapi::OpenApi) {
    let batch = OpenApiRouter::new()
        .routes(routes!(check::batch))
        .layer(RequestBodyLimitLayer::new(body::MAX_BATCH_BODY_BYTES));
    // Forward auth takes any method, PROPFIND and made-up ones included (a proxy may send the
    // client's): the document lists the standard ones, the router takes all.
    let (schemas, paths, _) = routes!(auth::auth);
    let (router, api) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(check::check))
        .routes((schemas, paths, axum::routing::any(auth::auth)))
        .routes(routes!(report::report))
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz))
        .routes(routes!(health::metrics))
        .merge(admin::routes())
        .layer(RequestBodyLimitLayer::new(body::MAX_BODY_BYTES))
        .merge(batch)
        .with_state(state)
        .split_for_parts();
    let document = api.clone();
    let router = router
        .route(
            "/openapi.json",
            axum::routing::get(move || async move { axum::Json(document) }),
        )
        .fallback(not_found)
        // Inside `problems_only`, so a timeout's 408 becomes problem+json too.
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ))
        .layer(middleware::from_fn(problems_only))
        .layer(CatchPanicLayer::custom(|_| {
            Problem::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error (a bug: please report it)",
            )
            .into_response()
        }));
    (router, api)
}

pub fn router(state: AppState) -> Router {
    router_and_openapi(state).0
}

async fn not_found(request: Request) -> Problem {
    // A CONNECT names a host and port, and has no path to show.
    let target = match request.uri().path() {
        "" => request.uri().to_string(),
        path => path.to_owned(),
    };
    Problem::new(
        StatusCode::NOT_FOUND,
        format!("no route for {} {target}", request.method()),
    )
}

/// Turns any 4xx/5xx that is not yet problem+json (wrong method, timeout) into one.
async fn problems_only(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    let status = response.status();
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(problem::CONTENT_TYPE.as_bytes()));
    if status.as_u16() < 400 || is_problem {
        return response;
    }
    let (parts, original) = response.into_parts();
    // axum's own rejections (a path or query that does not parse) say what is wrong in a short
    // text/plain body: keep that as the detail.
    let is_text = parts
        .headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/plain"));
    let text = match is_text {
        true => axum::body::to_bytes(original, 4096)
            .await
            .ok()
            .and_then(|b| String::from_utf8(b.to_vec()).ok())
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty()),
        false => None,
    };
    let detail = match status {
        StatusCode::METHOD_NOT_ALLOWED => format!("{path} does not accept {method}"),
        StatusCode::REQUEST_TIMEOUT => format!(
            "the request took longer than {} s",
            REQUEST_TIMEOUT.as_secs()
        ),
        StatusCode::PAYLOAD_TOO_LARGE => body::too_large(body::body_limit(&path)).detail,
        other => text.unwrap_or_else(|| other.canonical_reason().unwrap_or("error").to_owned()),
    };
    let mut problem = Problem::new(status, detail).into_response();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            problem.headers_mut().insert(name.clone(), value.clone());
        }
    }
    problem.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(problem::CONTENT_TYPE),
    );
    problem
}
