//! Redis killed under traffic and while the daemon starts: answers per `store.on_error`, for
//! single checks and batches, and the daemon following Redis again within 2 s of its return.

use crate::client::{batch, check, metric, store_errors, wait_ready, wait_until};
use crate::common::daemon::Daemon;
use crate::common::redis::RedisServer;
use crate::modes::{
    ALLOW, DENY, LIMIT, LOCAL, MODES, Mode, assert_normal, assert_outage_check, assert_outage_item,
    assert_recovered, assert_store_down_health, recovery, write_policy,
};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{JoinHandle, sleep};
use std::time::{Duration, Instant};

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
