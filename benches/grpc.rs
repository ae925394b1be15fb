//! Decisions per second and p99 latency over gRPC (`ShouldRateLimit`, one native descriptor)
//! at 64 concurrent streams, next to HTTP `POST /v1/check` at 64 concurrent keep-alive
//! connections, in the same run, against one engine on the embedded store.
//!
//! `cargo bench --bench grpc` (add `-- SECONDS` to change the 5 s per API). Both servers and
//! the clients share the machine, as a sidecar would. README, "Envoy", quotes the figures.

use envoy_types::pb::envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::rate_limit_descriptor::Entry;
use envoy_types::pb::envoy::service::ratelimit::v3::RateLimitRequest;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_client::RateLimitServiceClient;
use ratewarden::daemon::accept::Acceptor;
use ratewarden::engine::{Engine, SubjectHasher};
use ratewarden::http::{AppState, router};
use ratewarden::metrics::Metrics;
use ratewarden::policy::Policy;
use ratewarden::store::{Backend, MemoryStore};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const POLICY: &str = "
default_tier: t
tiers:
  t:
    limits:
      - { name: l, algorithm: gcra, requests: 1000000000, window: 1s }
";
const STREAMS: usize = 64;
/// gRPC streams share a few HTTP/2 connections, as Envoy's do.
const CONNECTIONS: usize = 8;
const USERS: usize = 10_000;

fn main() {
    let secs: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5);
    let run = Duration::from_secs(secs);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let (http, grpc) = serve().await;
        // Warm both up, then measure each alone.
        measure_grpc(grpc, Duration::from_millis(500)).await;
        measure_http(http, Duration::from_millis(500)).await;
        let g = measure_grpc(grpc, run).await;
        let h = measure_http(http, run).await;
        println!("{STREAMS} concurrent, {secs} s each, one engine on the embedded store");
        report("gRPC ShouldRateLimit", &g, run);
        report("HTTP POST /v1/check", &h, run);
    });
}

async fn serve() -> (SocketAddr, SocketAddr) {
    let policy = Policy::from_yaml(POLICY, Path::new(".")).expect("bench policy");
    let clock = Arc::new(ratewarden::clock::SystemClock::new());
    let store = Backend::Memory(MemoryStore::new(clock, 4_000_000));
    let metrics = Arc::new(Metrics::new());
    let engine = Arc::new(
        Engine::new(policy, store, SubjectHasher::from_secret("bench"))
            .with_metrics(metrics.clone()),
    );
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let grpc = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addrs = (http.local_addr().unwrap(), grpc.local_addr().unwrap());
    let app = router(AppState {
        engine: engine.clone(),
        metrics: metrics.clone(),
        admin_token: None,
        reloader: None,
    });
    tokio::spawn(async move {
        axum::serve(
            http,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
    });
    tokio::spawn(ratewarden::grpc::serve(
        Acceptor::new(grpc, "gRPC").into_stream(),
        engine,
        std::future::pending(),
    ));
    addrs
}

fn grpc_request(user: usize) -> RateLimitRequest {
    let entry = |k: &str, v: String| Entry {
        key: k.to_owned(),
        value: v,
    };
    RateLimitRequest {
        domain: "bench".to_owned(),
        descriptors: vec![RateLimitDescriptor {
            entries: vec![
                entry("user", format!("user-{user}")),
                entry("path", "/api/search".to_owned()),
            ],
            ..Default::default()
        }],
        hits_addend: 1,
    }
}

/// Every call's latency in microseconds.
async fn measure_grpc(addr: SocketAddr, run: Duration) -> Vec<u32> {
    let mut channels = Vec::new();
    for _ in 0..CONNECTIONS {
        channels.push(
            tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
                .unwrap()
                .connect()
                .await
                .expect("gRPC connects"),
        );
    }
    let deadline = Instant::now() + run;
    let mut tasks = Vec::new();
    for i in 0..STREAMS {
        let mut client = RateLimitServiceClient::new(channels[i % CONNECTIONS].clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut n = i;
            while Instant::now() < deadline {
                n = (n + STREAMS) % USERS;
                let started = Instant::now();
                let answer = client.should_rate_limit(grpc_request(n)).await;
                latencies.push(micros(started));
                assert_eq!(answer.expect("an answer").into_inner().overall_code, 1);
            }
            latencies
        }));
    }
    collect(tasks).await
}

async fn measure_http(addr: SocketAddr, run: Duration) -> Vec<u32> {
    let deadline = Instant::now() + run;
    let mut tasks = Vec::new();
    for i in 0..STREAMS {
        tasks.push(tokio::spawn(async move {
            let mut stream = TcpStream::connect(addr).await.expect("HTTP connects");
            stream.set_nodelay(true).unwrap();
            let mut latencies = Vec::new();
            let mut buffer = vec![0u8; 8192];
            let mut n = i;
            while Instant::now() < deadline {
                n = (n + STREAMS) % USERS;
                let body = format!(r#"{{"user":"user-{n}","endpoint":"/api/search"}}"#);
                let request = format!(
                    "POST /v1/check HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let started = Instant::now();
                stream.write_all(request.as_bytes()).await.unwrap();
                let status = read_response(&mut stream, &mut buffer).await;
                latencies.push(micros(started));
                assert_eq!(status, 200);
            }
            latencies
        }));
    }
    collect(tasks).await
}

/// Reads one HTTP/1.1 response (headers and a Content-Length body); returns its status.
async fn read_response(stream: &mut TcpStream, buffer: &mut [u8]) -> u16 {
    let mut filled = 0;
    loop {
        let n = stream.read(&mut buffer[filled..]).await.unwrap();
        assert!(n > 0, "the server closed the connection");
        filled += n;
        let text = &buffer[..filled];
        let Some(end) = text.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = std::str::from_utf8(&text[..end]).unwrap();
        let length: usize = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().ok())?
            })
            .unwrap_or(0);
        if filled >= end + 4 + length {
            return head[9..12].parse().unwrap();
        }
    }
}

fn micros(started: Instant) -> u32 {
    u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX)
}

async fn collect(tasks: Vec<tokio::task::JoinHandle<Vec<u32>>>) -> Vec<u32> {
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all
}

fn report(name: &str, latencies: &[u32], run: Duration) {
    let mut sorted = latencies.to_vec();
    sorted.sort_unstable();
    let at = |q: f64| sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)];
    println!(
        "{name:22} {:>8.0} decisions/s   p50 {:>6} µs   p99 {:>6} µs",
        sorted.len() as f64 / run.as_secs_f64(),
        at(0.50),
        at(0.99)
    );
}
