//! HTTP to the daemon under test: one request per connection, its answer, /metrics samples, and
//! polling until a condition holds.

use crate::common::daemon::send;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::thread::sleep;
use std::time::{Duration, Instant};

pub const POLL: Duration = Duration::from_millis(5);

pub use crate::common::on_error::{Answer, metric};

fn request(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> Answer {
    let body = body.map(Value::to_string).unwrap_or_default();
    let raw = format!(
        "{method} {path} HTTP/1.1\r\nHost: ratewarden\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let reply = send(addr, raw.as_bytes());
    Answer {
        status: reply.status,
        content_type: reply.header("content-type").unwrap_or("").to_owned(),
        text: reply.text(),
    }
}

pub fn get(addr: SocketAddr, path: &str) -> Answer {
    request(addr, "GET", path, None)
}

/// POST /v1/check for `user` on `endpoint` (no tier: it is looked up in the store too).
pub fn check(addr: SocketAddr, user: &str, endpoint: &str) -> Answer {
    let body = json!({"user": user, "endpoint": endpoint});
    request(addr, "POST", "/v1/check", Some(&body))
}

/// POST /v1/check/batch of `n` checks of `user` on `endpoint`; the `results`.
pub fn batch(addr: SocketAddr, user: &str, endpoint: &str, n: usize) -> Vec<Value> {
    let body = json!({"requests": vec![json!({"user": user, "endpoint": endpoint}); n]});
    let answer = request(addr, "POST", "/v1/check/batch", Some(&body));
    assert_eq!(answer.status, 200, "{}", answer.text);
    let results = answer.json()["results"]
        .as_array()
        .cloned()
        .expect("results");
    assert_eq!(results.len(), n, "{}", answer.text);
    results
}

pub fn store_errors(addr: SocketAddr, action: &str) -> f64 {
    let labels = ["store=\"redis\"", &format!("action=\"{action}\"")];
    metric(addr, "ratewarden_store_errors_total", &labels)
}

pub fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        sleep(POLL);
    }
}

pub fn wait_ready(addr: SocketAddr) {
    wait_until("/readyz is 200", Duration::from_secs(5), || {
        get(addr, "/readyz").status == 200
    });
}
