//! What the HTTP fuzz targets share: the real router on the embedded store with a manual clock
//! (as tests/common/http.rs builds it), and a check that an answer is never a server error.

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, header};
use http_body_util::BodyExt;
use ratewarden::clock::ManualClock;
use ratewarden::engine::{Engine, SubjectHasher};
use ratewarden::http::{AppState, router};
use ratewarden::metrics::Metrics;
use ratewarden::policy::Policy;
use ratewarden::store::{Backend, MemoryStore};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use tower::ServiceExt;

/// The admin token every fuzzed request carries, so admin routes get past their gate.
pub const ADMIN_TOKEN: &str = "fuzz-admin-token";

/// The example policy the daemon ships.
pub const EXAMPLE_POLICY: &str = include_str!("../../ratewarden.yaml");

/// 2026-01-01, on a whole minute.
const START: u64 = 1_767_225_600_000_000;

/// A policy compiled once per process.
pub fn compiled(slot: &'static OnceLock<Policy>, yaml: &str) -> Policy {
    slot.get_or_init(|| {
        Policy::from_yaml(yaml, Path::new("/nonexistent/ratewarden-fuzz"))
            .expect("the fuzz policy is valid")
    })
    .clone()
}

/// A fresh router over `policy`, admin API enabled: fresh for each input so that a crash
/// reproduces from that input alone.
pub fn app(policy: Policy) -> Router {
    let clock = ManualClock::starting_at(START);
    let store = MemoryStore::new(Arc::new(clock), 100_000);
    let metrics = Arc::new(Metrics::new());
    let engine = Engine::new(
        policy,
        Backend::Memory(store),
        SubjectHasher::from_secret("fuzz secret"),
    )
    .with_metrics(metrics.clone());
    router(AppState {
        engine: Arc::new(engine),
        metrics,
        admin_token: Some(Arc::from(ADMIN_TOKEN)),
        reloader: None,
    })
}

/// A single-threaded runtime, made once per process.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a tokio runtime")
    })
}

/// Sends `request` and asserts the answer: never a 5xx, every error is problem+json.
pub fn send_and_check(router: Router, request: Request<Body>) {
    let what = format!("{} {}", request.method(), request.uri());
    runtime().block_on(async move {
        let response: Response<Body> = router.oneshot(request).await.expect("infallible");
        let status = response.status();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| v.as_bytes().to_vec());
        let body = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        assert!(
            !status.is_server_error(),
            "{what} answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
        if status.is_client_error() {
            assert_eq!(
                content_type.as_deref(),
                Some(&b"application/problem+json"[..]),
                "{what} answered {status} without problem+json"
            );
        }
    });
}
