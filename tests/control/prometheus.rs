//! The `prometheus` load source against a real Prometheus (Debian's package) scraping a real
//! target every second: the query's value maps through `high`/`low` like the CPU share; a
//! Prometheus gone keeps the last factor for `keep_last` cycles, then 1.0, each failure
//! counted; bad queries, several series and a silent server fail with exact errors.

use super::cycle::engine;
use crate::common::prometheus::Prometheus;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use ratewarden::control::{ControlLoop, ModelSlot, NoLoad, QueryError, query_once};
use ratewarden::policy::PrometheusQuery;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A scrape target: `/metrics` answers `backend_cpu_ratio` with the value the test sets, on
/// two instances (`shard="a"` and `shard="b"`, the same value).
struct Target {
    addr: SocketAddr,
    value: Arc<AtomicU64>,
}

impl Target {
    fn start(value: f64) -> Target {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(AtomicU64::new(value.to_bits()));
        let value = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(&stream);
                let mut line = String::new();
                // The request head, up to its blank line.
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let v = f64::from_bits(shared.load(Ordering::Relaxed));
                let body = format!(
                    "# TYPE backend_cpu_ratio gauge\nbackend_cpu_ratio{{shard=\"a\"}} {v}\n\
                     backend_cpu_ratio{{shard=\"b\"}} {v}\n"
                );
                let mut stream = &stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Target { addr, value }
    }

    fn set(&self, value: f64) {
        self.value.store(value.to_bits(), Ordering::Relaxed);
    }
}

fn config(dir: &std::path::Path, target: SocketAddr) -> std::path::PathBuf {
    let path = dir.join("prometheus.yml");
    let text = format!(
        "global: {{ scrape_interval: 1s }}\nscrape_configs:\n  - job_name: backend\n    \
         static_configs: [{{ targets: ['{target}'] }}]\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Waits until Prometheus has scraped `value` for shard a.
fn wait_for(prometheus: &Prometheus, value: f64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let series = prometheus.query("backend_cpu_ratio{shard=\"a\"}", now());
        if series.first().is_some_and(|s| s.samples[0].1 == value) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "prometheus never scraped {value}: {}",
            prometheus.targets()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn policy(url: &str) -> String {
    format!(
        "
default_tier: free
tiers:
  free:
    limits:
      - {{ name: per_minute, algorithm: fixed_window, requests: 100, window: 1m }}
adaptive:
  interval: 1s
  load:
    source: prometheus
    high: 0.8
    low: 0.3
    smoothing: 1
    prometheus:
      url: {url}
      query: max(backend_cpu_ratio)
      timeout: 500ms
      keep_last: 2
"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_query_sets_the_factor_and_a_lost_prometheus_falls_back_after_keep_last() {
    let target = Target::start(0.9);
    let dir = tempfile::tempdir().unwrap();
    let prometheus = Prometheus::start(&config(dir.path(), target.addr));
    wait_for(&prometheus, 0.9);
    let (engine, _clock) = engine(&policy(&format!("http://{}/", prometheus.addr)));
    let model = Arc::new(ModelSlot::new(engine.metrics().clone()));
    let mut control = ControlLoop::new(engine.clone(), model, Box::new(NoLoad));

    // 0.9 is above high (0.8): high_factor.
    let cycle = control.cycle().await;
    assert_eq!((cycle.load_factor, cycle.load_signal), (0.5, Some(0.9)));
    // 0.1 is below low (0.3): low_factor.
    target.set(0.1);
    wait_for(&prometheus, 0.1);
    let cycle = control.cycle().await;
    assert_eq!((cycle.load_factor, cycle.load_signal), (1.5, Some(0.1)));
    let errors = || {
        engine
            .metrics()
            .load
            .query_errors
            .with_label_values(&["global"])
            .get()
    };
    assert_eq!(errors(), 0);

    // Prometheus gone: two cycles keep 1.5 (keep_last: 2), the third falls back to 1.0.
    drop(prometheus);
    let mut got = Vec::new();
    for _ in 0..4 {
        got.push(control.cycle().await.load_factor);
    }
    assert_eq!(got, [1.5, 1.5, 1.0, 1.0]);
    assert_eq!(errors(), 4);
    assert_eq!(engine.scale_factors().load_factor(), 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_queries_several_series_and_a_silent_server_are_errors() {
    let target = Target::start(0.5);
    let dir = tempfile::tempdir().unwrap();
    let prometheus = Prometheus::start(&config(dir.path(), target.addr));
    wait_for(&prometheus, 0.5);
    let client = Client::builder(TokioExecutor::new()).build_http();
    let query = |url: String, q: &str| PrometheusQuery {
        url,
        query: q.to_owned(),
        timeout: Duration::from_millis(500),
        keep_last: 0,
    };
    let url = format!("http://{}", prometheus.addr);

    assert_eq!(
        query_once(&client, &query(url.clone(), "max(backend_cpu_ratio)")).await,
        Ok(0.5)
    );
    assert_eq!(
        query_once(
            &client,
            &query(url.clone(), "scalar(max(backend_cpu_ratio))")
        )
        .await,
        Ok(0.5)
    );
    assert_eq!(
        query_once(&client, &query(url.clone(), "backend_cpu_ratio")).await,
        Err(QueryError::SeriesCount(2))
    );
    assert_eq!(
        query_once(&client, &query(url.clone(), "no_such_series")).await,
        Err(QueryError::SeriesCount(0))
    );
    let Err(QueryError::Refused { status, message }) =
        query_once(&client, &query(url.clone(), "max(backend_cpu_ratio")).await
    else {
        panic!("an unbalanced parenthesis is refused");
    };
    assert_eq!(status, 400);
    assert!(message.contains("parse error"), "{message}");
    assert_eq!(
        QueryError::SeriesCount(2).to_string(),
        "the query returned 2 series (it must return exactly one)"
    );
    assert_eq!(
        query_once(&client, &query(url.clone(), "backend_cpu_ratio[1m]")).await,
        Err(QueryError::RangeVector(2))
    );
    // Not a share: a percentage, or a negative value, would move limits without a word.
    assert_eq!(
        query_once(&client, &query(url.clone(), "max(backend_cpu_ratio) * 100")).await,
        Err(QueryError::OutOfRange(50.0))
    );
    assert_eq!(
        query_once(&client, &query(url.clone(), "-max(backend_cpu_ratio)")).await,
        Err(QueryError::OutOfRange(-0.5))
    );
    assert_eq!(
        QueryError::OutOfRange(50.0).to_string(),
        "the query's value 50 is outside 0 to 1 (by more than 0.25): it must be a share \
         (divide a count of cores, a percentage or a latency by what makes it one)"
    );
    // A saturated backend's rate() can read a little over 1: that is 1.
    assert_eq!(
        query_once(
            &client,
            &query(url.clone(), "max(backend_cpu_ratio) * 2.04")
        )
        .await,
        Ok(1.0)
    );

    // A proxy in front of Prometheus answering with its own error page: its status is the news.
    let gateway = TcpListener::bind("127.0.0.1:0").unwrap();
    let gateway_url = format!("http://{}", gateway.local_addr().unwrap());
    std::thread::spawn(move || {
        if let Ok((mut stream, _)) = gateway.accept() {
            use std::io::{Read, Write};
            let _ = stream.read(&mut [0; 4096]);
            let page = "<html>bad gateway</html>";
            let _ = write!(
                stream,
                "HTTP/1.1 502 Bad Gateway\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    assert_eq!(
        query_once(&client, &query(gateway_url, "max(backend_cpu_ratio)")).await,
        Err(QueryError::Refused {
            status: 502,
            message: "not a Prometheus API answer".to_owned()
        })
    );

    // A server that accepts the connection and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    let mut timeout = query(silent_url, "max(backend_cpu_ratio)");
    timeout.timeout = Duration::from_millis(200);
    let error = query_once(&client, &timeout).await.unwrap_err();
    assert_eq!(error, QueryError::Timeout(200));
    assert_eq!(error.to_string(), "no answer within 200 ms");
    drop(silent);
}
