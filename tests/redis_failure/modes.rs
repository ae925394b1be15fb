//! The three `store.on_error` modes, the policy that sets each on a Redis URL, and what each must
//! answer while the store is down and after it is back.

use crate::client::{Answer, POLL, batch, check, get};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// The limit of /api/export. A one-day fixed window: a test never straddles its edge (UTC midnight)
/// unless it runs across midnight.
pub const LIMIT: u64 = 5;
/// How soon after Redis is back the daemon must decide from it again.
const RECOVERY: Duration = Duration::from_secs(2);

pub use crate::common::on_error::{ALLOW, DENY, LOCAL, MODES, Mode};

pub fn write_policy(dir: &Path, url: &str, mode: Mode) -> PathBuf {
    let path = dir.join(format!("policy-{}.yaml", mode.name));
    let yaml = format!(
        "store: {{ url: \"{url}\", on_error: {on_error}, timeout: 300ms }}
default_tier: free
tiers:
  free:
    adaptive: false
    limits: [ {{ name: daily, algorithm: sliding_window, requests: 1000000, window: 1d }} ]
endpoints:
  - path: /api/export
    adaptive: false
    limits: [ {{ name: export, algorithm: fixed_window, requests: {LIMIT}, window: 1d }} ]
default_endpoint:
  adaptive: false
  limits: [ {{ name: endpoint, algorithm: sliding_window, requests: 1000000, window: 1d }} ]
",
        on_error = mode.name
    );
    std::fs::write(&path, yaml).unwrap();
    path
}

/// A decision from Redis (not degraded) on /api/export when `left` requests were left.
pub fn assert_normal(answer: &Answer, left: u64) {
    let body = answer.json();
    assert_eq!(body["degraded"], json!(false), "{}", answer.text);
    if left > 0 {
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(body["remaining"], json!(left - 1), "{}", answer.text);
    } else {
        assert_eq!(answer.status, 429, "{}", answer.text);
        assert_eq!(body["reason"], json!("quota"), "{}", answer.text);
    }
}

/// The `i`-th decision (from 0) on /api/export for a subject while the store is down, as a
/// batch item or a /v1/check body.
pub fn assert_outage_item(mode: Mode, i: u64, item: &Value) {
    let at = format!("{} #{i}: {item}", mode.name);
    assert_eq!(item["degraded"], json!(true), "{at}");
    match mode {
        ALLOW => {
            assert_eq!(item["allowed"], json!(true), "{at}");
            assert_eq!(item["remaining"], Value::Null, "{at}");
        }
        DENY => {
            assert_eq!(item["allowed"], json!(false), "{at}");
            assert_eq!(item["reason"], json!("store_unavailable"), "{at}");
        }
        // The per-instance limiter with the full limit, whatever Redis had counted.
        _ => {
            assert_eq!(item["allowed"], json!(i < LIMIT), "{at}");
            assert_eq!(item["limit"], json!(LIMIT), "{at}");
            assert_eq!(
                item["remaining"],
                json!(LIMIT.saturating_sub(i + 1)),
                "{at}"
            );
            if i >= LIMIT {
                assert_eq!(item["reason"], json!("quota"), "{at}");
            }
        }
    }
}

/// The `i`-th /v1/check on /api/export for a subject while the store is down.
pub fn assert_outage_check(mode: Mode, i: u64, answer: &Answer) {
    let body = answer.json();
    assert_outage_item(mode, i, &body);
    let status = match mode {
        DENY => 503,
        LOCAL if i >= LIMIT => 429,
        _ => 200,
    };
    assert_eq!(answer.status, status, "{} #{i}: {}", mode.name, answer.text);
    if mode == DENY {
        assert_eq!(answer.content_type, "application/problem+json");
        let kind = body["type"].as_str().unwrap_or("");
        assert!(
            kind.ends_with("temporary-reduced-capacity"),
            "{}",
            answer.text
        );
        assert_eq!(body["status"], json!(503), "{}", answer.text);
    }
}

/// While the store is down: /readyz 503 with a problem body, /healthz 200.
pub fn assert_store_down_health(addr: SocketAddr) {
    let ready = get(addr, "/readyz");
    assert_eq!(ready.status, 503, "{}", ready.text);
    assert_eq!(ready.content_type, "application/problem+json");
    let body = ready.json();
    assert_eq!(body["status"], json!(503));
    assert!(
        body["detail"].as_str().unwrap_or("").contains("store"),
        "{}",
        ready.text
    );
    assert_eq!(get(addr, "/healthz").status, 200);
}

/// Polls every daemon until its decisions are not degraded and /readyz is 200: the times
/// (decisions, readyz) since the call.
pub fn recovery(addrs: &[SocketAddr], use_batch: bool) -> Vec<(Duration, Duration)> {
    let from = Instant::now();
    let mut times = vec![(None, None); addrs.len()];
    let pending = |t: &[(Option<_>, Option<_>)]| t.iter().any(|(d, r)| d.is_none() || r.is_none());
    while pending(&times) && from.elapsed() < Duration::from_secs(10) {
        for (&addr, (decided, ready)) in addrs.iter().zip(&mut times) {
            if decided.is_none() {
                let healthy = if use_batch {
                    batch(addr, "probe", "/misc", 2)
                        .iter()
                        .all(|item| item["degraded"] == json!(false))
                } else {
                    let answer = check(addr, "probe", "/misc");
                    answer.status == 200 && answer.json()["degraded"] == json!(false)
                };
                if healthy {
                    *decided = Some(from.elapsed());
                }
            }
            if ready.is_none() && get(addr, "/readyz").status == 200 {
                *ready = Some(from.elapsed());
            }
        }
        sleep(POLL);
    }
    times
        .into_iter()
        .map(|(d, r)| (d.expect("degraded for 10 s"), r.expect("unready for 10 s")))
        .collect()
}

pub fn assert_recovered(label: &str, (decided, ready): (Duration, Duration)) {
    println!(
        "{label}: decisions not degraded after {} ms, /readyz 200 after {} ms",
        decided.as_millis(),
        ready.as_millis()
    );
    assert!(decided <= RECOVERY, "{label}: degraded for {decided:?}");
    assert!(ready <= RECOVERY, "{label}: /readyz 503 for {ready:?}");
}
