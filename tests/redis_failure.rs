//! The real binary on a real redis-server that crashes (SIGKILL) and comes back empty on the same
//! port: the daemon stays up, answers per `store.on_error` (allow, deny, local) with
//! `degraded: true`, reports the store down on /readyz and in the metrics, and follows Redis
//! again within 2 s of its return. Also when it starts while Redis is down.

mod common;

use common::daemon::{Daemon, send};
use common::redis::RedisServer;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{JoinHandle, sleep};
use std::time::{Duration, Instant};

/// The limit of /api/export. A one-day fixed window: a test never straddles its edge (UTC midnight)
/// unless it runs across midnight.
const LIMIT: u64 = 5;
/// How soon after Redis is back the daemon must decide from it again.
const RECOVERY: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(5);

/// A `store.on_error` value, and the `action` label of `ratewarden_store_errors_total` it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mode {
    name: &'static str,
    action: &'static str,
}

const ALLOW: Mode = Mode {
    name: "allow",
    action: "allowed",
};
const DENY: Mode = Mode {
    name: "deny",
    action: "denied",
};
const LOCAL: Mode = Mode {
    name: "local",
    action: "local",
};
const MODES: [Mode; 3] = [ALLOW, DENY, LOCAL];

fn write_policy(dir: &Path, url: &str, mode: Mode) -> PathBuf {
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

/// A response: status, Content-Type, body as text.
struct Answer {
    status: u16,
    content_type: String,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.text))
    }
}

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

fn get(addr: SocketAddr, path: &str) -> Answer {
    request(addr, "GET", path, None)
}

/// POST /v1/check for `user` on `endpoint` (no tier: it is looked up in the store too).
fn check(addr: SocketAddr, user: &str, endpoint: &str) -> Answer {
    let body = json!({"user": user, "endpoint": endpoint});
    request(addr, "POST", "/v1/check", Some(&body))
}

/// POST /v1/check/batch of `n` checks of `user` on `endpoint`; the `results`.
fn batch(addr: SocketAddr, user: &str, endpoint: &str, n: usize) -> Vec<Value> {
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

/// The sum of the samples of `name` whose labels include every one of `labels`.
fn metric(addr: SocketAddr, name: &str, labels: &[&str]) -> f64 {
    let answer = get(addr, "/metrics");
    assert_eq!(answer.status, 200);
    answer
        .text
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter(|l| labels.iter().all(|label| l.contains(label)))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

fn store_errors(addr: SocketAddr, action: &str) -> f64 {
    let labels = ["store=\"redis\"", &format!("action=\"{action}\"")];
    metric(addr, "ratewarden_store_errors_total", &labels)
}

fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        sleep(POLL);
    }
}

fn wait_ready(addr: SocketAddr) {
    wait_until("/readyz is 200", Duration::from_secs(5), || {
        get(addr, "/readyz").status == 200
    });
}

/// A decision from Redis (not degraded) on /api/export when `left` requests were left.
fn assert_normal(answer: &Answer, left: u64) {
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
fn assert_outage_item(mode: Mode, i: u64, item: &Value) {
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
fn assert_outage_check(mode: Mode, i: u64, answer: &Answer) {
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
fn assert_store_down_health(addr: SocketAddr) {
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
fn recovery(addrs: &[SocketAddr], use_batch: bool) -> Vec<(Duration, Duration)> {
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

fn assert_recovered(label: &str, (decided, ready): (Duration, Duration)) {
    println!(
        "{label}: decisions not degraded after {} ms, /readyz 200 after {} ms",
        decided.as_millis(),
        ready.as_millis()
    );
    assert!(decided <= RECOVERY, "{label}: degraded for {decided:?}");
    assert!(ready <= RECOVERY, "{label}: /readyz 503 for {ready:?}");
}

/// Checks in a loop on another endpoint, counting healthy and degraded answers; every answer
/// must be a decision in the mode's shape (a transport error or a 5xx other than deny's 503
/// panics the thread).
struct Traffic {
    stop: Arc<AtomicBool>,
    healthy: Arc<AtomicUsize>,
    degraded: Arc<AtomicUsize>,
    thread: JoinHandle<()>,
}

impl Traffic {
    fn start(addr: SocketAddr, mode: Mode) -> Traffic {
        let stop = Arc::new(AtomicBool::new(false));
        let healthy = Arc::new(AtomicUsize::new(0));
        let degraded = Arc::new(AtomicUsize::new(0));
        let (s, h, d) = (stop.clone(), healthy.clone(), degraded.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let answer = check(addr, "traffic", "/misc");
                let body = answer.json();
                let is_degraded = body["degraded"] == json!(true);
                let status = if is_degraded && mode == DENY {
                    503
                } else {
                    200
                };
                assert_eq!(answer.status, status, "{}: {}", mode.name, answer.text);
                let counter = if is_degraded { &d } else { &h };
                counter.fetch_add(1, Ordering::Relaxed);
                sleep(Duration::from_millis(2));
            }
        });
        Traffic {
            stop,
            healthy,
            degraded,
            thread,
        }
    }

    fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .expect("the traffic thread saw only well-formed decisions");
    }
}

/// Two checks through Redis, SIGKILL mid-traffic, answers per mode, Redis back empty: the
/// daemon follows it within 2 s and the shared (fresh) counts apply again.
fn outage_and_recovery(mode: Mode) {
    let mut redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), &redis.url(), mode);
    let mut daemon = Daemon::start(&policy, &[]);
    let addr = daemon.addr;
    wait_ready(addr);

    for used in 0..2 {
        assert_normal(&check(addr, "alice", "/api/export"), LIMIT - used);
    }
    assert!(!redis.keys().is_empty(), "the counts live in Redis");

    let traffic = Traffic::start(addr, mode);
    let healthy = traffic.healthy.clone();
    wait_until("healthy traffic", Duration::from_secs(5), || {
        healthy.load(Ordering::Relaxed) >= 10
    });
    redis.kill();
    let degraded = traffic.degraded.clone();
    wait_until("degraded traffic", Duration::from_secs(5), || {
        degraded.load(Ordering::Relaxed) >= 5
    });
    traffic.finish();
    assert!(daemon.is_running(), "the daemon survives the store's crash");

    // alice had 2 counted in Redis; the mode decides now (local: the full limit again), each
    // answer within the deadlines of its store calls (tier lookup and apply, 300 ms each).
    let before: Vec<f64> = MODES.iter().map(|m| store_errors(addr, m.action)).collect();
    for i in 0..LIMIT + 2 {
        let started = Instant::now();
        assert_outage_check(mode, i, &check(addr, "alice", "/api/export"));
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
    for (m, before) in MODES.iter().zip(before) {
        let counted = store_errors(addr, m.action) - before;
        let expected = if *m == mode { (LIMIT + 2) as f64 } else { 0.0 };
        assert_eq!(counted, expected, "store_errors_total action={}", m.action);
    }
    let timed = ["store=\"redis\""];
    assert!(metric(addr, "ratewarden_store_duration_seconds_count", &timed) > 0.0);
    assert_store_down_health(addr);

    redis.restart();
    let times = recovery(&[addr], false);
    assert_recovered(&format!("on_error {}", mode.name), times[0]);

    // Shared limits again, counted from the empty server, across two daemons on it.
    let other = Daemon::start(&policy, &[]);
    for used in 0..LIMIT {
        let on = if used % 2 == 0 { addr } else { other.addr };
        assert_normal(&check(on, "alice", "/api/export"), LIMIT - used);
    }
    assert_normal(&check(addr, "alice", "/api/export"), 0);
    assert_normal(&check(other.addr, "alice", "/api/export"), 0);
    assert!(!redis.keys().is_empty());
    assert!(other.stop(Duration::from_secs(10)).success());
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

#[test]
fn on_error_allow_fails_open_and_recovers() {
    outage_and_recovery(ALLOW);
}

#[test]
fn on_error_deny_answers_503_and_recovers() {
    outage_and_recovery(DENY);
}

#[test]
fn on_error_local_limits_per_instance_and_recovers() {
    outage_and_recovery(LOCAL);
}

/// Three daemons (one per mode) on one Redis; batches during the outage, recovery measured with
/// batches.
#[test]
fn batch_items_are_answered_per_mode_during_an_outage() {
    let mut redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let daemons: Vec<Daemon> = MODES
        .iter()
        .map(|&m| Daemon::start(&write_policy(dir.path(), &redis.url(), m), &[]))
        .collect();
    let addrs: Vec<SocketAddr> = daemons.iter().map(|d| d.addr).collect();
    for (&addr, mode) in addrs.iter().zip(MODES) {
        wait_ready(addr);
        let user = format!("carol-{}", mode.name);
        for item in batch(addr, &user, "/api/export", 2) {
            assert_eq!(item["degraded"], json!(false), "{item}");
        }
    }

    redis.kill();
    for (&addr, mode) in addrs.iter().zip(MODES) {
        let user = format!("carol-{}", mode.name);
        let before = store_errors(addr, mode.action);
        let results = batch(addr, &user, "/api/export", LIMIT as usize + 2);
        for (i, item) in (0..).zip(&results) {
            assert_outage_item(mode, i, item);
        }
        let counted = store_errors(addr, mode.action) - before;
        assert_eq!(counted, (LIMIT + 2) as f64, "{}", mode.name);
        assert_store_down_health(addr);
    }

    redis.restart();
    for (mode, times) in MODES.iter().zip(recovery(&addrs, true)) {
        assert_recovered(&format!("batch, on_error {}", mode.name), times);
    }
    for (&addr, mode) in addrs.iter().zip(MODES) {
        let user = format!("carol-{}", mode.name);
        let results = batch(addr, &user, "/api/export", LIMIT as usize + 1);
        for (i, item) in (0..).zip(&results) {
            assert_eq!(item["degraded"], json!(false), "{item}");
            assert_eq!(
                item["allowed"],
                json!(i < LIMIT),
                "{} #{i}: {item}",
                mode.name
            );
        }
    }
}

/// A daemon started while Redis is down serves (lazy connection), answers per mode, and
/// follows Redis when it comes up.
#[test]
fn starts_while_redis_is_down_and_follows_it_up() {
    let mut redis = RedisServer::start();
    redis.kill();
    let dir = tempfile::tempdir().unwrap();
    let mut daemons: Vec<Daemon> = MODES
        .iter()
        .map(|&m| Daemon::start(&write_policy(dir.path(), &redis.url(), m), &[]))
        .collect();
    let addrs: Vec<SocketAddr> = daemons.iter().map(|d| d.addr).collect();
    for (&addr, mode) in addrs.iter().zip(MODES) {
        assert_store_down_health(addr);
        for i in 0..LIMIT + 2 {
            assert_outage_check(mode, i, &check(addr, "dave", "/api/export"));
        }
        assert_eq!(
            store_errors(addr, mode.action),
            (LIMIT + 2) as f64,
            "{}",
            mode.name
        );
    }
    for daemon in &mut daemons {
        assert!(daemon.is_running());
    }

    redis.restart();
    for (mode, times) in MODES.iter().zip(recovery(&addrs, false)) {
        assert_recovered(&format!("cold start, on_error {}", mode.name), times);
    }
    // The three share dave's count in Redis, from zero.
    for used in 0..LIMIT {
        let addr = addrs[used as usize % addrs.len()];
        assert_normal(&check(addr, "dave", "/api/export"), LIMIT - used);
    }
    for &addr in &addrs {
        assert_normal(&check(addr, "dave", "/api/export"), 0);
    }
}

/// A policy on `url` with `on_error: allow`, the shipped model (so that the control loop keeps
/// fleet state in Redis too) and a 200 ms control cycle.
fn write_fleet_policy(dir: &Path, url: &str) -> PathBuf {
    let path = dir.join("policy-fleet.yaml");
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/models/abuse.json");
    let yaml = format!(
        "store: {{ url: \"{url}\", on_error: allow, timeout: 100ms }}
default_tier: free
tiers:
  free:
    adaptive: false
    limits: [ {{ name: daily, algorithm: sliding_window, requests: 1000000, window: 1d }} ]
adaptive:
  interval: 200ms
  anomaly: {{ model: \"{model}\" }}
"
    );
    std::fs::write(&path, yaml).unwrap();
    path
}

/// The lines of `log` that contain `needle`.
fn lines_with<'a>(log: &'a [String], needle: &str) -> Vec<&'a String> {
    log.iter().filter(|l| l.contains(needle)).collect()
}

/// The start-up line names the store by scheme and host (never its password), `on_error`, the
/// model and its version, where the load factor comes from, and whether the admin API is on.
#[test]
fn the_start_up_line_tells_what_the_daemon_runs_with() {
    let port = common::redis::free_port();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redis://:s3cret@127.0.0.1:{port}/3");
    let mut daemon = Daemon::start(
        &write_fleet_policy(dir.path(), &url),
        &[("RATEWARDEN_ADMIN_TOKEN", "admin")],
    );
    let line = daemon.wait_for(" starting ", Duration::from_secs(5));
    let model: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/models/abuse.json"))
            .unwrap(),
    )
    .unwrap();
    let version = model["version"].as_str().unwrap();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/models/abuse.json");
    for field in [
        format!("store=redis://127.0.0.1:{port} "),
        "on_error=allow ".to_owned(),
        format!("model={path} "),
        format!("model_version={version} "),
        "load_source=pinned by --pin-load-factor load_factor=1 ".to_owned(),
        "load_high=0.8 load_high_factor=0.5 load_low=0.3 load_low_factor=1.5 ".to_owned(),
        "admin_api=on".to_owned(),
    ] {
        assert!(line.contains(&field), "{field:?} is not in {line}");
    }
    assert!(line.contains(" INFO "), "{line}");
    // Decisions while the store is down: the password shows in no line about them either.
    let _ = check(daemon.addr, "alice", "/misc");
    sleep(Duration::from_millis(500));
    let log = daemon.drain_log().to_vec();
    assert!(lines_with(&log, "s3cret").is_empty(), "{log:#?}");
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

/// An outage is told once when it begins (whichever of the request path and the control loop
/// sees it first) and once when it ends, with its length and how decisions were answered; the
/// control loop's failing cycles in between log nothing.
#[test]
fn a_store_outage_is_logged_once_when_it_begins_and_once_when_it_ends() {
    let mut redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = Daemon::start(&write_fleet_policy(dir.path(), &redis.url()), &[]);
    let addr = daemon.addr;
    wait_ready(addr);
    daemon.wait_for("model loaded", Duration::from_secs(5));
    let answer = check(addr, "alice", "/misc");
    assert_eq!(answer.json()["degraded"], json!(false), "{}", answer.text);
    sleep(Duration::from_millis(500));
    let before = daemon.drain_log().len();

    redis.kill();
    let down = Instant::now();
    for _ in 0..8 {
        let answer = check(addr, "alice", "/misc");
        assert_eq!(answer.json()["degraded"], json!(true), "{}", answer.text);
    }
    // Some ten failing control cycles.
    sleep(Duration::from_millis(2000));
    let log = daemon.drain_log()[before..].to_vec();
    let began = lines_with(&log, "store outage began");
    assert_eq!(began.len(), 1, "{log:#?}");
    assert!(began[0].contains(" WARN "), "{}", began[0]);
    assert!(
        began[0].contains("decisions follow store.on_error (allow) until the store answers again"),
        "{}",
        began[0]
    );
    let warnings = lines_with(&log, " WARN ");
    assert_eq!(
        warnings.len(),
        1,
        "one warning for the whole outage: {log:#?}"
    );

    redis.restart();
    let ended = daemon.wait_for("store outage ended", Duration::from_secs(5));
    let lasted = down.elapsed().as_secs_f64();
    assert!(ended.contains(" INFO "), "{ended}");
    assert!(
        ended.contains(
            "; meanwhile 8 decisions were allowed without the store, 0 denied and 0 decided by \
             the local limiter"
        ),
        "{ended}"
    );
    let logged: f64 = ended
        .split("store outage ended after ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|secs| secs.parse().ok())
        .unwrap_or_else(|| panic!("no length in {ended}"));
    assert!(
        (2.0..=lasted + 0.1).contains(&logged),
        "{logged} s of {lasted} s: {ended}"
    );
    let answer = check(addr, "alice", "/misc");
    assert_eq!(answer.json()["degraded"], json!(false), "{}", answer.text);
    sleep(Duration::from_millis(500));
    let log = daemon.drain_log()[before..].to_vec();
    assert_eq!(lines_with(&log, "store outage").len(), 2, "{log:#?}");
    assert!(daemon.stop(Duration::from_secs(10)).success());
}
