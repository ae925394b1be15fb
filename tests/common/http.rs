//! The HTTP router on the embedded store with a manual clock, driven with `oneshot`.

use super::START;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use ratewarden::clock::ManualClock;
use ratewarden::engine::{Engine, SubjectHasher};
use ratewarden::http::{AppState, router};
use ratewarden::metrics::Metrics;
use ratewarden::policy::Policy;
use ratewarden::store::{Backend, MemoryStore};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use tower::ServiceExt;

pub struct App {
    pub router: Router,
    pub clock: ManualClock,
    pub engine: Arc<Engine>,
    pub metrics: Arc<Metrics>,
}

/// The first whole minute at or after [`START`] (which is 22:13:20): fixed windows are aligned
/// to the epoch, so a window starts here and ends 60 s later.
pub const MINUTE: u64 = START.next_multiple_of(60_000_000);

/// The router over `yaml`, admin disabled, the clock at [`MINUTE`].
pub fn app(yaml: &str) -> App {
    app_with(yaml, None)
}

/// The router over `yaml`, with the admin API enabled when `admin_token` is set; the clock at
/// [`MINUTE`].
pub fn app_with(yaml: &str, admin_token: Option<&str>) -> App {
    let policy = Policy::from_yaml(yaml, Path::new(".")).expect("test policy is valid");
    let clock = ManualClock::starting_at(MINUTE);
    let store = MemoryStore::new(Arc::new(clock.clone()), 1_000_000);
    let metrics = Arc::new(Metrics::new());
    let engine = Arc::new(
        Engine::new(
            policy,
            Backend::Memory(store),
            SubjectHasher::from_secret("test secret"),
        )
        .with_metrics(metrics.clone()),
    );
    let router = router(AppState {
        engine: engine.clone(),
        metrics: metrics.clone(),
        admin_token: admin_token.map(Arc::from),
        reloader: None,
    });
    App {
        router,
        clock,
        engine,
        metrics,
    }
}

/// A response, its body read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.to_vec()).expect("body is UTF-8")
    }

    /// A header as text; panics when absent.
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("header {name} is missing: {:?}", self.headers))
            .to_str()
            .expect("header is text")
    }

    pub fn content_type(&self) -> &str {
        self.header(header::CONTENT_TYPE.as_str())
    }

    /// Asserts a problem+json error with this status and `detail`, and returns the body.
    #[track_caller]
    pub fn assert_problem(&self, status: StatusCode, detail: &str) -> Value {
        assert_eq!(self.status, status, "body: {}", self.text());
        assert_eq!(self.content_type(), "application/problem+json");
        let body = self.json();
        assert_eq!(body["detail"], detail, "body: {body}");
        assert_eq!(body["status"], status.as_u16());
        assert!(
            body["type"].is_string() && body["title"].is_string(),
            "{body}"
        );
        body
    }
}

pub async fn send(router: &Router, request: Request<Body>) -> Reply {
    let response = router
        .clone()
        .oneshot(request)
        .await
        .expect("the router is infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body reads")
        .to_bytes();
    Reply {
        status,
        headers,
        body,
    }
}

/// A request with any method, headers and body.
pub async fn call(
    router: &Router,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Body>,
) -> Reply {
    let mut request = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    send(router, request.body(body.into()).expect("valid request")).await
}

pub async fn post_json(router: &Router, path: &str, body: &Value) -> Reply {
    post_raw(router, path, Some("application/json"), body.to_string()).await
}

pub async fn post_raw(
    router: &Router,
    path: &str,
    content_type: Option<&str>,
    body: impl Into<Body>,
) -> Reply {
    let headers: Vec<_> = content_type
        .map(|ct| ("content-type", ct))
        .into_iter()
        .collect();
    call(router, Method::POST, path, &headers, body).await
}

pub async fn get(router: &Router, path: &str, headers: &[(&str, &str)]) -> Reply {
    call(router, Method::GET, path, headers, Body::empty()).await
}

/// One member of a structured-field list header: `"name";a=1;b=2`.
#[derive(Debug, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub params: Vec<(String, i64)>,
}

impl Member {
    pub fn param(&self, key: &str) -> i64 {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .unwrap_or_else(|| panic!("parameter {key} is missing in {self:?}"))
            .1
    }
}

/// Parses a `RateLimit` or `RateLimit-Policy` header: exactly one member, a string with
/// integer parameters.
pub fn structured(value: &str) -> Member {
    let list: sfv::List = sfv::Parser::new(value)
        .parse_list()
        .unwrap_or_else(|e| panic!("{value:?} is not a structured-field list: {e}"));
    assert_eq!(list.len(), 1, "one member in {value:?}");
    let sfv::ListEntry::Item(item) = &list[0] else {
        panic!("{value:?} holds an inner list");
    };
    let name = item
        .bare_item
        .as_string()
        .unwrap_or_else(|| panic!("{value:?}: the member is not a string"))
        .as_str()
        .to_owned();
    let params = item
        .params
        .iter()
        .map(|(k, v)| {
            let n = v
                .as_integer()
                .unwrap_or_else(|| panic!("{value:?}: {k} is not an integer"));
            (k.as_str().to_owned(), i64::from(n))
        })
        .collect();
    Member { name, params }
}
