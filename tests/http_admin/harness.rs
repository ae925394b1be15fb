//! The admin tests' harness: a router over an engine on the embedded store with a manual
//! clock, the policy it serves, and requests with and without the admin token.
//!
//! Requests go through the router in process (`oneshot`), not a socket: the admin API's
//! behaviour is what is tested, and this keeps each test's state its own.

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use ratewarden::clock::ManualClock;
use ratewarden::engine::{Engine, SubjectHasher};
use ratewarden::http::{AppState, router};
use ratewarden::metrics::Metrics;
use ratewarden::policy::Policy;
use ratewarden::reload::Reloader;
use ratewarden::store::{Backend, MemoryStore};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use tower::ServiceExt;

pub const TOKEN: &str = "s3cret-admin-token";
/// 2023-11-14T22:13:20Z, a whole hour, so windows start together.
pub const START: u64 = 1_700_000_000_000_000;

/// free: hourly 100 (sliding log), burst 20 (token bucket); pro: hourly 1000; the default
/// endpoint's limit is large so that the tier's limits head the decisions.
pub const POLICY: &str = r#"
default_tier: free
tiers:
  free:
    limits:
      - { name: hourly, algorithm: sliding_log, requests: 100, window: 1h }
      - { name: burst, algorithm: token_bucket, requests: 20, window: 1m, burst: 20 }
  pro:
    limits:
      - { name: hourly, algorithm: fixed_window, requests: 1000, window: 1h }
endpoints:
  - path: /api/search
    limits: [ { name: search, algorithm: gcra, requests: 10, window: 1m, burst: 5 } ]
  - path: /login
    key: ip
    limits: [ { name: login, algorithm: fixed_window, requests: 20, window: 5m } ]
default_endpoint:
  limits: [ { name: endpoint, algorithm: sliding_window, requests: 5000, window: 1m } ]
"#;

pub const DEFAULT_THRESHOLDS: &str = r#"{"anomaly_threshold": 0.8, "anomaly_factor": 0.1,
    "anomaly_shadow": false, "load_high": 0.8, "load_low": 0.3, "load_high_factor": 0.5,
    "load_low_factor": 1.5, "load_factor_override": null}"#;

pub struct Harness {
    pub app: Router,
    pub engine: Arc<Engine>,
    _clock: ManualClock,
}

pub fn engine(yaml: &str) -> (Arc<Engine>, ManualClock) {
    let policy = Policy::from_yaml(yaml, Path::new(".")).expect("test policy is valid");
    let clock = ManualClock::starting_at(START);
    let store = MemoryStore::new(Arc::new(clock.clone()), 1_000_000);
    let engine = Engine::new(
        policy,
        Backend::Memory(store),
        SubjectHasher::from_secret("admin test secret"),
    )
    .with_clock(Arc::new(clock.clone()));
    (Arc::new(engine), clock)
}

pub fn app(engine: &Arc<Engine>, token: Option<&str>, reloader: Option<Reloader>) -> Router {
    router(AppState {
        engine: engine.clone(),
        metrics: Arc::new(Metrics::new()),
        admin_token: token.map(Into::into),
        reloader: reloader.map(Arc::new),
    })
}

pub fn harness(token: Option<&str>) -> Harness {
    let (engine, clock) = engine(POLICY);
    Harness {
        app: app(&engine, token, None),
        engine,
        _clock: clock,
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub text: String,
    pub json: Value,
}

impl Reply {
    pub fn content_type(&self) -> &str {
        self.headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    pub fn detail(&self) -> &str {
        self.json["detail"].as_str().unwrap_or("(no detail)")
    }

    /// A problem+json answer with this status and detail.
    #[track_caller]
    pub fn assert_problem(&self, status: StatusCode, detail: &str) {
        assert_eq!(self.status, status, "{}", self.text);
        assert_eq!(self.content_type(), "application/problem+json");
        assert_eq!(self.json["status"], status.as_u16());
        assert_eq!(self.detail(), detail);
    }
}

pub async fn send(
    app: &Router,
    method: Method,
    uri: &str,
    auth: Option<&str>,
    body: Option<&str>,
) -> Reply {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(auth) = auth {
        request = request.header(header::AUTHORIZATION, auth);
    }
    let body = match body {
        Some(text) => {
            request = request.header(header::CONTENT_TYPE, "application/json");
            Body::from(text.to_owned())
        }
        None => Body::empty(),
    };
    let response = app
        .clone()
        .oneshot(request.body(body).unwrap())
        .await
        .expect("the router answers");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8(bytes.to_vec()).expect("UTF-8 body");
    let json = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::Null)
    };
    Reply {
        status,
        headers,
        text,
        json,
    }
}

pub fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

pub async fn admin(app: &Router, method: Method, uri: &str, body: Option<&str>) -> Reply {
    send(app, method, uri, Some(&bearer()), body).await
}

/// `POST /v1/check` for `user` on `endpoint`; the decision JSON.
pub async fn check(app: &Router, user: &str, endpoint: &str) -> Value {
    check_with(app, json!({"user": user, "endpoint": endpoint})).await
}

pub async fn check_with(app: &Router, body: Value) -> Value {
    let reply = send(
        app,
        Method::POST,
        "/v1/check",
        None,
        Some(&body.to_string()),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.json
}
