//! Traffic for the dashboards test: a steady stream from many subjects through every HTTP API,
//! and the scripted events that the panels and alerts are about (bursts, quota, shadow-mode
//! denials, reloads, a store outage, a flagged subject).

use crate::common::daemon;
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

pub const ADMIN_TOKEN: &str = "dashboards-test-token";

/// One request; returns (status, body).
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let reply = daemon::request(addr, method, path, headers, body);
    (reply.status, reply.text())
}

pub fn check(addr: SocketAddr, body: &Value) -> (u16, Value) {
    let (status, text) = request(
        addr,
        "POST",
        "/v1/check",
        &[("Content-Type", "application/json")],
        &body.to_string(),
    );
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    (status, json)
}

pub fn admin(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    request(
        addr,
        method,
        path,
        &[
            ("Authorization", bearer.as_str()),
            ("Content-Type", "application/json"),
        ],
        body,
    )
}

/// The steady stream: about 60 requests a second from 50 subjects in every tier, through
/// /v1/check, /v1/check/batch and /v1/auth, until stopped. Each subject calls about once a
/// second, within its limits: people browsing, not the abuse the model is there to flag.
pub struct Steady {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<u16>>,
}

const SUBJECTS: usize = 50;

/// What one subject calls, round after round: mostly the default rule's 50 a minute, search
/// and export under their 10 and 5 a minute, a login now and then and one SMS in a run
/// (10 an hour).
const ROUNDS: [&str; 20] = [
    "/api/items",
    "/api/orders",
    "/api/items",
    "/api/search",
    "/api/items",
    "/api/orders",
    "/api/items",
    "/api/export",
    "/api/items",
    "/api/orders",
    "/api/items",
    "/login",
    "/api/items",
    "/api/orders",
    "/api/items",
    "/api/search",
    "/api/items",
    "/api/orders",
    "/api/items",
    "/sms/send",
];

/// The endpoint of request `n`: its subject's next round. Subjects start their rotation at
/// one of seven places, so each reaches its SMS round once, at its 13th to 19th request.
fn steady_endpoint(n: usize) -> &'static str {
    let round = n / SUBJECTS + n % SUBJECTS % 7;
    ROUNDS[round % ROUNDS.len()]
}

/// A check request of the steady stream, number `n`.
fn steady_request(n: usize) -> Value {
    let user = format!("user-{}", n % SUBJECTS);
    let endpoint = steady_endpoint(n);
    // One address per subject (a subject rotating over addresses looks like abuse to the model).
    let ip = format!("198.51.100.{}", n % SUBJECTS % 7);
    // Most subjects leave their tier to the tier store (so the tier cache is used).
    match n % 6 {
        0 => serde_json::json!({"user": user, "endpoint": endpoint, "ip": ip, "tier": "pro"}),
        1 => {
            serde_json::json!({"user": user, "endpoint": endpoint, "ip": ip, "tier": "enterprise"})
        }
        _ => serde_json::json!({"user": user, "endpoint": endpoint, "ip": ip}),
    }
}

/// The export backend's outcome of request `n` (the `upstream` load source of its rule):
/// 50 to 290 ms, one in four a 503.
fn report_export(addr: SocketAddr, n: usize) {
    let status = if (n / 10) % 4 == 0 { 503 } else { 200 };
    let report = serde_json::json!({
        "user": format!("user-{}", n % SUBJECTS),
        "endpoint": "/api/export",
        "status": status,
        "latency_ms": 50 + (n / 10) % 7 * 40,
    });
    let headers = [("Content-Type", "application/json")];
    request(addr, "POST", "/v1/report", &headers, &report.to_string());
}

impl Steady {
    pub fn start(addr: SocketAddr) -> Steady {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut statuses = Vec::new();
            let mut n = 0usize;
            let mut next = 0usize;
            while !flag.load(Ordering::Relaxed) {
                // Each request (a batch item too) is the next of the stream, so every subject
                // takes its turn once per SUBJECTS requests.
                let status = match n % 10 {
                    0..=5 => {
                        let request = steady_request(next);
                        let status = check(addr, &request).0;
                        if request["endpoint"] == "/api/export" && status == 200 {
                            report_export(addr, next);
                        }
                        next += 1;
                        status
                    }
                    6 | 7 => {
                        let items: Vec<Value> = (next..next + 4).map(steady_request).collect();
                        next += 4;
                        let body = serde_json::json!({ "requests": items }).to_string();
                        let headers = [("Content-Type", "application/json")];
                        request(addr, "POST", "/v1/check/batch", &headers, &body).0
                    }
                    _ => {
                        let user = format!("user-{}", next % SUBJECTS);
                        let uri = steady_endpoint(next);
                        next += 1;
                        let headers = [("X-Api-Key", user.as_str()), ("X-Original-URI", uri)];
                        request(addr, "GET", "/v1/auth", &headers, "").0
                    }
                };
                statuses.push(status);
                n += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            statuses
        });
        Steady { stop, handle }
    }

    /// Stops the stream; the status of every request it sent.
    pub fn stop(self) -> Vec<u16> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .join()
            .expect("the steady stream does not panic")
    }
}

/// `count` checks of `body`; the `reason` of every denial.
pub fn repeat(addr: SocketAddr, body: &Value, count: usize) -> Vec<String> {
    let mut reasons = Vec::new();
    for _ in 0..count {
        let (status, decision) = check(addr, body);
        assert!(
            status == 200 || status == 429,
            "{body} answered {status}: {decision}"
        );
        if status == 429 {
            reasons.push(decision["reason"].as_str().unwrap_or("?").to_owned());
        }
    }
    reasons
}

/// A free subject sends 30 requests at once: its 20-a-minute token bucket (`burst`) denies
/// while its hourly limit has room.
pub fn burst(addr: SocketAddr) {
    let body = serde_json::json!({"user": "burster", "endpoint": "/api/items"});
    let reasons = repeat(addr, &body, 30);
    assert!(reasons.iter().any(|r| r == "burst"), "{reasons:?}");
}

/// Twelve SMS in a row against a limit of 10 an hour (the longest limit of the request, so a
/// `quota` denial; a short limit that denies is a `burst`).
pub fn quota(addr: SocketAddr) {
    let body = serde_json::json!({"user": "texter", "endpoint": "/sms/send"});
    let reasons = repeat(addr, &body, 12);
    assert!(reasons.iter().any(|r| r == "quota"), "{reasons:?}");
}

/// 25 logins from one address against the shadow limit of 20 per 5 minutes: all allowed, the
/// last ones `shadow: true`.
pub fn shadow(addr: SocketAddr) {
    let mut shadowed = 0;
    for n in 0..25 {
        let body = serde_json::json!({"user": format!("login-{n}"), "endpoint": "/login", "ip": "203.0.113.9"});
        let (status, decision) = check(addr, &body);
        assert_eq!(status, 200, "{decision}");
        shadowed += usize::from(decision["shadow"] == true);
    }
    assert!(shadowed >= 5, "{shadowed} shadow denials");
}

/// A reload of the unchanged policy through the admin API.
pub fn reload_ok(addr: SocketAddr) {
    let (status, body) = admin(addr, "POST", "/v1/admin/reload", "");
    assert_eq!(status, 200, "{body}");
}

/// A policy file the daemon refuses (an unknown algorithm), then a reload request: 422, the old
/// policy stays. The bad file stays too, so no later reload resets the thresholds.
pub fn failed_reload(addr: SocketAddr, policy: &std::path::Path) {
    let good = std::fs::read_to_string(policy).expect("the policy is readable");
    let bad = good.replacen("algorithm: gcra", "algorithm: leaky_faucet", 1);
    assert_ne!(good, bad, "the policy has a gcra limit to break");
    std::fs::write(policy, bad).expect("the policy is writable");
    let (status, body) = admin(addr, "POST", "/v1/admin/reload", "");
    assert_eq!(status, 422, "{body}");
}

/// An operator's brake: the load factor pinned at 0.5, and a subject denied with reason `load`
/// (the load panels and the load-factor alert need it).
pub fn pin_load(addr: SocketAddr) {
    let (status, body) = admin(
        addr,
        "PUT",
        "/v1/admin/thresholds",
        r#"{"load_factor_override": 0.5}"#,
    );
    assert_eq!(status, 200, "{body}");
    let body = serde_json::json!({"user": "heavy", "endpoint": "/api/export"});
    let reasons = repeat(addr, &body, 8);
    assert!(reasons.iter().any(|r| r == "load"), "{reasons:?}");
}

/// A credential stuffer on a thread: `/login` twice a second, each try from another address,
/// its failures reported (401) through /v1/report, until the shipped model flags it and its
/// requests are denied with reason `anomaly`.
pub struct Stuffer {
    thread: std::thread::JoinHandle<Vec<String>>,
}

impl Stuffer {
    pub fn start(addr: SocketAddr) -> Stuffer {
        let thread = std::thread::spawn(move || {
            let mut reasons = Vec::new();
            for attempt in 0..120u64 {
                let ip = format!("10.9.{}.{}", attempt % 250, attempt * 7 % 250 + 1);
                let body = serde_json::json!({"user": "stuffer", "endpoint": "/login", "ip": ip});
                let (status, decision) = check(addr, &body);
                if status == 200 {
                    let report =
                        serde_json::json!({"user": "stuffer", "endpoint": "/login", "status": 401});
                    let (code, _) = request(
                        addr,
                        "POST",
                        "/v1/report",
                        &[("Content-Type", "application/json")],
                        &report.to_string(),
                    );
                    assert_eq!(code, 202);
                }
                if let Some(reason) = decision["reason"].as_str() {
                    reasons.push(reason.to_owned());
                }
                if reasons.iter().filter(|r| *r == "anomaly").count() >= 5 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(500));
            }
            reasons
        });
        Stuffer { thread }
    }

    pub fn wait_flagged_and_shrunk(self) {
        let reasons = self.thread.join().expect("the stuffer's thread");
        assert!(reasons.iter().any(|r| r == "anomaly"), "{reasons:?}");
    }
}
