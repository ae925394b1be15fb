//! A gRPC server in the test's runtime, on a free loopback port, over an engine with a manual
//! clock; a tonic client; request builders.

use crate::common::START;
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::rate_limit_descriptor::{
    Entry, RateLimitOverride,
};
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::DescriptorStatus;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_client::RateLimitServiceClient;
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};
use ratewarden::clock::ManualClock;
use ratewarden::daemon::accept::Acceptor;
use ratewarden::engine::{Engine, SubjectHasher};
use ratewarden::metrics::Metrics;
use ratewarden::policy::Policy;
use ratewarden::rules::Rules;
use ratewarden::store::{Backend, MemoryStore};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::oneshot;
use tonic::transport::Channel;

pub const OK: i32 = 1;
pub const OVER_LIMIT: i32 = 2;

/// The envoy configuration fixtures.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/envoy")
}

/// A small native policy: tier limits, an endpoint rule, a default endpoint.
pub const NATIVE_POLICY: &str = r#"
default_tier: free
tiers:
  free:
    limits: [ { name: hourly, algorithm: fixed_window, requests: 100, window: 1h } ]
  pro:
    limits: [ { name: hourly, algorithm: fixed_window, requests: 1000, window: 1h } ]
endpoints:
  - path: /api/search
    limits: [ { name: search, algorithm: fixed_window, requests: 3, window: 1m } ]
  - path: /login
    key: ip
    limits: [ { name: login, algorithm: sliding_window, requests: 2, window: 5m } ]
default_endpoint:
  limits: [ { name: endpoint, algorithm: fixed_window, requests: 5, window: 1m } ]
"#;

pub struct Server {
    pub addr: SocketAddr,
    pub clock: ManualClock,
    pub engine: Arc<Engine>,
    pub metrics: Arc<Metrics>,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// `policy` YAML with `envoy_config` set to `envoy_dir` (and that folder loaded) when given.
pub fn policy_with(policy: &str, envoy_dir: Option<&Path>) -> Rules {
    let text = match envoy_dir {
        Some(dir) => format!("{policy}\nenvoy_config: {}\n", dir.display()),
        None => policy.to_owned(),
    };
    let policy = Policy::from_yaml(&text, Path::new(".")).expect("test policy is valid");
    Rules {
        policy: Arc::new(policy),
        envoy: envoy_dir.map(|dir| {
            Arc::new(ratewarden::rules::load_envoy_folder(dir).expect("test folder is valid"))
        }),
    }
}

/// Serves an engine on the embedded store.
pub async fn start(policy: Rules) -> Server {
    let clock = ManualClock::starting_at(START);
    let store = Backend::Memory(MemoryStore::new(Arc::new(clock.clone()), 1_000_000));
    let engine = Engine::new(
        policy,
        store,
        SubjectHasher::from_secret("grpc test secret"),
    );
    let mut server = serve(engine).await;
    server.clock = clock;
    server
}

/// Serves `engine` (whatever its store) until the returned server is dropped.
pub async fn serve(engine: Engine) -> Server {
    let metrics = Arc::new(Metrics::new());
    let engine = Arc::new(engine.with_metrics(metrics.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(ratewarden::grpc::serve(
        Acceptor::new(listener, "gRPC").into_stream(),
        engine.clone(),
        async move {
            let _ = stopped.await;
        },
    ));
    Server {
        addr,
        clock: ManualClock::starting_at(START),
        engine,
        metrics,
        stop: Some(stop),
    }
}

impl Server {
    pub async fn client(&self) -> RateLimitServiceClient<Channel> {
        RateLimitServiceClient::connect(format!("http://{}", self.addr))
            .await
            .expect("the gRPC server accepts connections")
    }

    /// Sends and expects an answer.
    pub async fn ask(&self, request: RateLimitRequest) -> RateLimitResponse {
        self.client()
            .await
            .should_rate_limit(request)
            .await
            .expect("an answer, not an error")
            .into_inner()
    }

    /// Sends and expects an error status.
    pub async fn refused(&self, request: RateLimitRequest) -> tonic::Status {
        self.client()
            .await
            .should_rate_limit(request)
            .await
            .expect_err("a refusal")
    }

    pub fn metrics_text(&self) -> String {
        self.metrics.render()
    }
}

pub fn descriptor(entries: &[(&str, &str)]) -> RateLimitDescriptor {
    RateLimitDescriptor {
        entries: entries
            .iter()
            .map(|(k, v)| Entry {
                key: (*k).to_owned(),
                value: (*v).to_owned(),
            })
            .collect(),
        ..Default::default()
    }
}

/// A descriptor with a `limit` override (unit as in `type.v3.RateLimitUnit`).
pub fn with_override(mut d: RateLimitDescriptor, requests: u32, unit: i32) -> RateLimitDescriptor {
    d.limit = Some(RateLimitOverride {
        requests_per_unit: requests,
        unit,
    });
    d
}

pub fn request(domain: &str, descriptors: Vec<RateLimitDescriptor>) -> RateLimitRequest {
    RateLimitRequest {
        domain: domain.to_owned(),
        descriptors,
        hits_addend: 0,
    }
}

/// A request of one descriptor.
pub fn one(domain: &str, entries: &[(&str, &str)]) -> RateLimitRequest {
    request(domain, vec![descriptor(entries)])
}

/// (requests_per_unit, unit, name) of a status's current limit.
pub fn current(status: &DescriptorStatus) -> Option<(u32, i32, String)> {
    status
        .current_limit
        .as_ref()
        .map(|l| (l.requests_per_unit, l.unit, l.name.clone()))
}

/// Whole seconds of a status's duration until reset.
pub fn reset_secs(status: &DescriptorStatus) -> Option<i64> {
    status.duration_until_reset.as_ref().map(|d| d.seconds)
}

pub fn header<'a>(response: &'a RateLimitResponse, name: &str) -> Option<&'a str> {
    response
        .response_headers_to_add
        .iter()
        .find(|h| h.key.eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str())
}

/// Response unit codes (`RateLimitResponse.RateLimit.Unit`).
pub mod unit {
    pub const UNKNOWN: i32 = 0;
    pub const SECOND: i32 = 1;
    pub const MINUTE: i32 = 2;
    pub const HOUR: i32 = 3;
    pub const DAY: i32 = 4;
    pub const MONTH: i32 = 5;
    pub const YEAR: i32 = 6;
    pub const WEEK: i32 = 7;
}
