//! A real `prometheus` server for tests: started on a free loopback port with its own
//! configuration and a temporary storage folder, queried through its HTTP API, stopped by PID.
//!
//! A system Prometheus that Debian's package may have started on :9090 is left alone.

use super::daemon::send;
use super::redis::free_port;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Prometheus {
    child: Child,
    pub addr: SocketAddr,
    _storage: tempfile::TempDir,
}

/// One series of a query answer: its labels and its samples (time in seconds, value).
#[derive(Debug, Clone)]
pub struct Series {
    pub labels: serde_json::Map<String, Value>,
    pub samples: Vec<(f64, f64)>,
}

impl Series {
    /// `{a="x", b="y"}`, for messages and legends.
    pub fn label_text(&self) -> String {
        let pairs: Vec<String> = self
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("?")))
            .collect();
        format!("{{{}}}", pairs.join(", "))
    }

    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).and_then(Value::as_str).unwrap_or("")
    }
}

impl Prometheus {
    /// Starts `prometheus --config.file CONFIG` and waits until `/-/ready` answers 200.
    pub fn start(config: &Path) -> Prometheus {
        let storage = tempfile::tempdir().expect("temp dir");
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", storage.path().display()))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("prometheus runs (scripts/test installs Debian's prometheus package)");
        let prometheus = Prometheus {
            child,
            addr,
            _storage: storage,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(mut connection) = super::daemon::Connection::open(addr) {
                let request =
                    format!("GET /-/ready HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
                if connection
                    .exchange(request.as_bytes(), false)
                    .is_ok_and(|reply| reply.status == 200)
                {
                    return prometheus;
                }
            }
            assert!(
                Instant::now() < deadline,
                "prometheus on {addr} was not ready within 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// GET `path?params` on the HTTP API; the `data` member of a successful answer.
    pub fn api(&self, path: &str, params: &[(&str, &str)]) -> Value {
        let query = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(params)
            .finish();
        let request = format!(
            "GET {path}?{query} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        );
        let reply = send(self.addr, request.as_bytes());
        let body: Value = serde_json::from_slice(&reply.body)
            .unwrap_or_else(|e| panic!("{path} {params:?}: not JSON ({e}): {}", reply.text()));
        assert_eq!(
            body["status"], "success",
            "{path} {params:?} answered {}: {body}",
            reply.status
        );
        body["data"].clone()
    }

    /// A range query (`/api/v1/query_range`) from `start` to `end` (seconds), one sample per
    /// `step` seconds.
    pub fn query_range(&self, expr: &str, start: f64, end: f64, step: f64) -> Vec<Series> {
        let data = self.api(
            "/api/v1/query_range",
            &[
                ("query", expr),
                ("start", &format!("{start:.3}")),
                ("end", &format!("{end:.3}")),
                ("step", &format!("{step}")),
            ],
        );
        series(&data, "values")
    }

    /// An instant query (`/api/v1/query`) at `time` (seconds).
    pub fn query(&self, expr: &str, time: f64) -> Vec<Series> {
        let data = self.api(
            "/api/v1/query",
            &[("query", expr), ("time", &format!("{time:.3}"))],
        );
        series(&data, "value")
    }

    /// The scrape targets' health (`up`, last error), from `/api/v1/targets`.
    pub fn targets(&self) -> Value {
        self.api("/api/v1/targets", &[])
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// Series of a `matrix` (`values`) or `vector` (`value`) answer.
fn series(data: &Value, member: &str) -> Vec<Series> {
    let parse = |pair: &Value| -> (f64, f64) {
        let time = pair[0].as_f64().unwrap_or(f64::NAN);
        let value = pair[1]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or(f64::NAN);
        (time, value)
    };
    data["result"]
        .as_array()
        .map(|all| {
            all.iter()
                .map(|one| Series {
                    labels: one["metric"].as_object().cloned().unwrap_or_default(),
                    samples: match member {
                        "value" => vec![parse(&one["value"])],
                        _ => one["values"]
                            .as_array()
                            .map(|v| v.iter().map(parse).collect())
                            .unwrap_or_default(),
                    },
                })
                .collect()
        })
        .unwrap_or_default()
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        // SIGTERM by PID, so the server shuts its storage cleanly; SIGKILL if it lingers.
        super::terminate(&mut self.child, Duration::from_secs(5));
    }
}
