//! Daemons on a Redis store that fails or stalls: a policy per `store.on_error`, `/v1/check` over
//! HTTP, what a decision must look like while the store fails and while it works, and traffic in
//! a thread that records every answer.

use super::daemon::{Connection, Reply, send};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The limit on the checked endpoint: never reached in a test, so `remaining` says how much
/// Redis has counted for the subject (a one-day fixed window: a test never straddles its edge,
/// UTC midnight, unless it runs across midnight).
pub const LIMIT: u64 = 1_000_000;
const ENDPOINT: &str = "/api/count";

/// A `store.on_error` value, and the `action` label of `ratewarden_store_errors_total` it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode {
    pub name: &'static str,
    pub action: &'static str,
}

pub const ALLOW: Mode = Mode {
    name: "allow",
    action: "allowed",
};
pub const DENY: Mode = Mode {
    name: "deny",
    action: "denied",
};
pub const LOCAL: Mode = Mode {
    name: "local",
    action: "local",
};
pub const MODES: [Mode; 3] = [ALLOW, DENY, LOCAL];

/// A policy on `url` with `on_error: mode` and `store.timeout: timeout`.
pub fn write_policy(dir: &Path, url: &str, mode: Mode, timeout: &str) -> PathBuf {
    let path = dir.join(format!("policy-{}.yaml", mode.name));
    let yaml = format!(
        "store: {{ url: \"{url}\", on_error: {on_error}, timeout: {timeout} }}
default_tier: free
tiers:
  free:
    adaptive: false
    limits: [ {{ name: daily, algorithm: sliding_window, requests: 1000000000, window: 1d }} ]
default_endpoint:
  adaptive: false
  limits: [ {{ name: count, algorithm: fixed_window, requests: {LIMIT}, window: 1d }} ]
",
        on_error = mode.name
    );
    std::fs::write(&path, yaml).unwrap();
    path
}

/// A response: status, Content-Type, body.
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub text: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.text))
    }

    pub fn degraded(&self) -> bool {
        self.json()["degraded"] == json!(true)
    }
}

pub fn get(addr: SocketAddr, path: &str) -> Answer {
    let raw = format!("GET {path} HTTP/1.1\r\nHost: ratewarden\r\nConnection: close\r\n\r\n");
    answer(send(addr, raw.as_bytes()))
}

/// POST /v1/check for `user` (no tier: the tier store is asked too), on a new connection.
pub fn check(addr: SocketAddr, user: &str) -> Answer {
    answer(send(addr, check_request(user, "close").as_bytes()))
}

fn check_request(user: &str, connection: &str) -> String {
    let body = json!({"user": user, "endpoint": ENDPOINT}).to_string();
    format!(
        "POST /v1/check HTTP/1.1\r\nHost: ratewarden\r\nConnection: {connection}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn answer(reply: Reply) -> Answer {
    Answer {
        status: reply.status,
        content_type: reply.header("content-type").unwrap_or("").to_owned(),
        text: reply.text(),
    }
}

/// A decision taken from Redis: allowed, not degraded. Its `remaining`.
pub fn assert_normal(answer: &Answer) -> u64 {
    let body = answer.json();
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(body["degraded"], json!(false), "{}", answer.text);
    assert_eq!(body["allowed"], json!(true), "{}", answer.text);
    assert_eq!(body["limit"], json!(LIMIT), "{}", answer.text);
    body["remaining"].as_u64().expect("remaining")
}

/// A decision taken while the store fails, in the mode's shape.
pub fn assert_degraded(mode: Mode, answer: &Answer) {
    let body = answer.json();
    let at = format!("{}: {} {}", mode.name, answer.status, answer.text);
    assert_eq!(body["degraded"], json!(true), "{at}");
    match mode {
        ALLOW => {
            assert_eq!(answer.status, 200, "{at}");
            assert_eq!(body["allowed"], json!(true), "{at}");
            assert_eq!(body["remaining"], Value::Null, "{at}");
        }
        DENY => {
            assert_eq!(answer.status, 503, "{at}");
            assert_eq!(answer.content_type, "application/problem+json", "{at}");
            let kind = body["type"].as_str().unwrap_or("");
            assert!(kind.ends_with("temporary-reduced-capacity"), "{at}");
            assert_eq!(body["allowed"], json!(false), "{at}");
            assert_eq!(body["reason"], json!("store_unavailable"), "{at}");
        }
        // The per-instance limiter with the policy's full limits: far from exhausted here.
        _ => {
            assert_eq!(answer.status, 200, "{at}");
            assert_eq!(body["allowed"], json!(true), "{at}");
            assert_eq!(body["limit"], json!(LIMIT), "{at}");
        }
    }
}

/// How much Redis has counted for `user`, this check included.
pub fn counted(addr: SocketAddr, user: &str) -> u64 {
    LIMIT - assert_normal(&check(addr, user))
}

/// One answer of [`Traffic`]: when it came, and whether it was degraded.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub at: Instant,
    pub degraded: bool,
}

/// Checks of one subject in a loop on one keep-alive connection (a new connection per check
/// would run out of ephemeral ports: degraded answers come fast); every answer must be a
/// decision in the mode's shape (anything else panics the thread, and [`Traffic::finish`]
/// with it).
pub struct Traffic {
    pub user: String,
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Sample>>>,
    thread: JoinHandle<()>,
}

impl Traffic {
    pub fn start(addr: SocketAddr, user: &str, mode: Mode) -> Traffic {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let (s, out, who) = (stop.clone(), samples.clone(), user.to_owned());
        let thread = std::thread::spawn(move || {
            let request = check_request(&who, "keep-alive");
            let mut conn = Connection::open(addr).expect("connects");
            while !s.load(Ordering::Relaxed) {
                let reply = conn
                    .exchange(request.as_bytes(), false)
                    .unwrap_or_else(|e| panic!("no HTTP response: {e}"));
                if reply.closes() {
                    conn = Connection::open(addr).expect("connects");
                }
                let answer = answer(reply);
                let degraded = answer.degraded();
                if degraded {
                    assert_degraded(mode, &answer);
                } else {
                    assert_normal(&answer);
                }
                let at = Instant::now();
                out.lock().unwrap().push(Sample { at, degraded });
                // A pace that leaves the machine's two cores to the daemons and Redis.
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        Traffic {
            user: user.to_owned(),
            stop,
            samples,
            thread,
        }
    }

    /// The answers so far.
    pub fn samples(&self) -> Vec<Sample> {
        self.samples.lock().unwrap().clone()
    }

    /// Waits (up to `within`) until `done` holds for the answers so far.
    pub fn wait(&self, what: &str, within: Duration, done: impl Fn(&[Sample]) -> bool) {
        let deadline = Instant::now() + within;
        while !done(&self.samples()) {
            assert!(
                Instant::now() < deadline,
                "{}: not within {within:?}: {what}",
                self.user
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops the loop; every answer, in order.
    pub fn finish(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .expect("the traffic saw only well-formed decisions");
        Arc::try_unwrap(self.samples)
            .map(|m| m.into_inner().unwrap())
            .unwrap_or_default()
    }
}

/// The sum of the samples of `name` whose labels include every one of `labels`.
pub fn metric(addr: SocketAddr, name: &str, labels: &[&str]) -> f64 {
    let answer = get(addr, "/metrics");
    assert_eq!(answer.status, 200);
    answer
        .text
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter(|l| labels.iter().all(|label| l.contains(label)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}
