//! Against a real redis-server: concurrency (64 clients, one descriptor, exactly L admitted),
//! keys that reveal no value, health, and store failure per `on_error` (redis-server killed).

use crate::common::redis::RedisServer;
use crate::harness::*;
use ratewarden::clock::{Clock, SystemClock};
use ratewarden::engine::{Engine, SubjectHasher};
use ratewarden::store::{self, MemoryStore};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

const LIMIT: usize = 50;

fn envoy_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("edge.yaml"),
        format!(
            "domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: {{ unit: hour, requests_per_unit: {LIMIT} }}\n"
        ),
    )
    .unwrap();
    dir
}

/// A daemon-like server on Redis, with the per-instance fallback limiter.
async fn on_redis(redis: &RedisServer, on_error: &str, envoy: &std::path::Path) -> Server {
    let yaml = format!(
        "store: {{ url: \"{}\", on_error: {on_error}, timeout: 200ms }}\n{NATIVE_POLICY}",
        redis.url()
    );
    let policy = policy_with(&yaml, Some(envoy));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let backend = store::open(&policy.policy.store, clock.clone())
        .await
        .unwrap();
    let engine = Engine::new(
        policy,
        backend,
        SubjectHasher::from_secret("grpc redis secret"),
    )
    .with_fallback(MemoryStore::new(clock, 1_000));
    serve(engine).await
}

/// 64 clients, each on its own connection, all on one descriptor: exactly LIMIT pass.
async fn admitted_by_64_clients(s: &Server, value: &str) -> usize {
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let mut client = s.client().await;
        let req = one("edge", &[("remote_address", value)]);
        tasks.push(tokio::spawn(async move {
            let mut ok = 0;
            for _ in 0..4 {
                let r = client
                    .should_rate_limit(req.clone())
                    .await
                    .unwrap()
                    .into_inner();
                ok += usize::from(r.overall_code == OK);
            }
            ok
        }));
    }
    let mut admitted = 0;
    for t in tasks {
        admitted += t.await.unwrap();
    }
    admitted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_concurrent_clients_admit_exactly_the_limit() {
    let envoy = envoy_dir();
    let memory = start(policy_with(NATIVE_POLICY, Some(envoy.path()))).await;
    assert_eq!(admitted_by_64_clients(&memory, "198.51.100.1").await, LIMIT);
    let redis = RedisServer::start();
    let s = on_redis(&redis, "deny", envoy.path()).await;
    assert_eq!(admitted_by_64_clients(&s, "198.51.100.1").await, LIMIT);
    // No descriptor value in any key.
    let keys = redis.keys();
    assert!(!keys.is_empty());
    for key in keys {
        assert!(
            !key.contains("198.51.100.1") && !key.contains("remote_address"),
            "{key}"
        );
    }
}

async fn health(s: &Server, service: &str) -> i32 {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", s.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = HealthClient::new(channel);
    client
        .check(HealthCheckRequest {
            service: service.to_owned(),
        })
        .await
        .unwrap()
        .into_inner()
        .status
}

async fn wait_health(s: &Server, want: ServingStatus) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while health(s, "").await != want as i32 {
        assert!(Instant::now() < deadline, "health never became {want:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        health(s, "envoy.service.ratelimit.v3.RateLimitService").await,
        want as i32
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_failure_follows_on_error_and_health_follows_readiness() {
    let envoy = envoy_dir();
    let mut redis = RedisServer::start();
    let deny = on_redis(&redis, "deny", envoy.path()).await;
    let allow = on_redis(&redis, "allow", envoy.path()).await;
    let local = on_redis(&redis, "local", envoy.path()).await;
    wait_health(&deny, ServingStatus::Serving).await;
    let req = || one("edge", &[("remote_address", "192.0.2.44")]);
    assert_eq!(deny.ask(req()).await.overall_code, OK);

    redis.kill();
    wait_health(&deny, ServingStatus::NotServing).await;
    // deny: OVER_LIMIT, never UNAVAILABLE.
    let r = deny.ask(req()).await;
    assert_eq!(r.overall_code, OVER_LIMIT);
    assert_eq!(r.statuses[0].code, OVER_LIMIT);
    assert!(header(&r, "retry-after").is_none());
    // allow: OK with no limit.
    let r = allow.ask(req()).await;
    assert_eq!(r.overall_code, OK);
    assert_eq!(r.statuses[0].current_limit, None);
    // local: the per-instance limiter, with the full limit.
    for i in 1..=LIMIT {
        let r = local.ask(req()).await;
        assert_eq!(r.overall_code, OK, "request {i}");
        assert_eq!(r.statuses[0].limit_remaining as usize, LIMIT - i);
    }
    assert_eq!(local.ask(req()).await.overall_code, OVER_LIMIT);
    // Native descriptors too.
    let native = || one("web", &[("user", "zed"), ("path", "/api/search")]);
    assert_eq!(deny.ask(native()).await.overall_code, OVER_LIMIT);
    assert_eq!(allow.ask(native()).await.overall_code, OK);
    let metrics = deny.metrics_text();
    assert!(
        metrics.contains("ratewarden_store_errors_total{action=\"denied\",store=\"redis\"} 2"),
        "{metrics}"
    );

    redis.restart();
    wait_health(&deny, ServingStatus::Serving).await;
}

/// A `Health/Watch` stream on the whole server, past its first message (`SERVING`).
async fn watch_serving(
    addr: std::net::SocketAddr,
) -> tonic::Streaming<tonic_health::pb::HealthCheckResponse> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut stream = HealthClient::new(channel)
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let first = stream.message().await.unwrap().expect("the current status");
    assert_eq!(first.status, ServingStatus::Serving as i32);
    stream
}

/// The health protocol sends a `Watch` message only when the status changes; the daemon once
/// sent its unchanged status every second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_watch_sends_only_changes() {
    let envoy = envoy_dir();
    let redis = RedisServer::start();
    let s = on_redis(&redis, "deny", envoy.path()).await;
    wait_health(&s, ServingStatus::Serving).await;
    let mut stream = watch_serving(s.addr).await;
    let next = tokio::time::timeout(Duration::from_millis(2500), stream.message()).await;
    assert!(
        next.is_err(),
        "an unchanged status was sent again: {next:?}"
    );
}

/// When the server drains, a watcher hears `NOT_SERVING` and its stream ends: an open watch
/// once held the daemon's stop up for its whole 15 s bound.
#[tokio::test]
async fn a_watch_hears_the_stop_and_ends() {
    let s = start(policy_with(crate::common::EXAMPLE_POLICY, None)).await;
    let mut stream = watch_serving(s.addr).await;
    drop(s);
    let within = Duration::from_secs(2);
    let last = tokio::time::timeout(within, stream.message())
        .await
        .expect("no word of the stop");
    assert_eq!(
        last.unwrap().map(|m| m.status),
        Some(ServingStatus::NotServing as i32)
    );
    let end = tokio::time::timeout(within, stream.message())
        .await
        .expect("the stream stayed open");
    assert!(matches!(end, Ok(None)), "{end:?}");
}
