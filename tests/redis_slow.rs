//! A slow Redis: `DEBUG SLEEP` stalls the whole server. Store calls past `store.timeout` count as
//! failed, so each daemon (on_error allow, deny, local) answers per `on_error` within the
//! timeout, not after the stall, and /readyz says the store is down; as soon as Redis answers
//! again, decisions come from it again. The scripts sent during the stall still run when it
//! ends: Redis counts those requests too, whatever the daemon answered (docs/guides/redis.md).

mod common;

use common::daemon::Daemon;
use common::on_error::{
    MODES, assert_degraded, assert_normal, check, counted, get, metric, write_policy,
};
use common::redis::RedisServer;
use std::net::SocketAddr;
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long Redis sleeps: long enough for every stalled check below on a loaded machine.
const STALL_SECONDS: &str = "4";
/// Stalled checks per daemon.
const STALLED: u64 = 3;
/// How soon after the stall every daemon must decide from Redis again.
const RECOVERY: Duration = Duration::from_secs(1);

fn wait_ready(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while get(addr, "/readyz").status != 200 {
        assert!(Instant::now() < deadline, "/readyz not 200 within 10 s");
        sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_stalled_redis_trips_store_timeout_and_decisions_recover_when_it_answers() {
    let redis = RedisServer::start_with(&["--enable-debug-command", "local"]);
    let dir = tempfile::tempdir().unwrap();
    let daemons: Vec<Daemon> = MODES
        .iter()
        .map(|&m| Daemon::start(&write_policy(dir.path(), &redis.url(), m, "100ms"), &[]))
        .collect();
    let addrs: Vec<SocketAddr> = daemons.iter().map(|d| d.addr).collect();
    let users: Vec<String> = MODES.iter().map(|m| format!("slow-{}", m.name)).collect();
    let mut sent = [0u64; 3];
    for ((&addr, user), sent) in addrs.iter().zip(&users).zip(&mut sent) {
        wait_ready(addr);
        for _ in 0..3 {
            assert_normal(&check(addr, user));
            *sent += 1;
        }
    }

    let port = redis.port.to_string();
    let stall = std::thread::spawn(move || {
        let out = Command::new("redis-cli")
            .args(["-p", &port, "DEBUG", "SLEEP", STALL_SECONDS])
            .output()
            .expect("redis-cli runs");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "OK");
        Instant::now()
    });
    // The stall has begun once a ping takes longer than the timeout.
    let deadline = Instant::now() + Duration::from_secs(3);
    while get(addrs[0], "/readyz").status == 200 {
        assert!(Instant::now() < deadline, "DEBUG SLEEP did not stall Redis");
        sleep(Duration::from_millis(10));
    }

    let mut slowest = Duration::ZERO;
    for (((&addr, user), sent), mode) in addrs.iter().zip(&users).zip(&mut sent).zip(MODES) {
        for _ in 0..STALLED {
            let started = Instant::now();
            let answer = check(addr, user);
            *sent += 1;
            assert_degraded(mode, &answer);
            slowest = slowest.max(started.elapsed());
            // Within the deadlines of its store calls (100 ms each), not after the stall.
            assert!(
                started.elapsed() < Duration::from_millis(900),
                "{}: answered in {:?}",
                mode.name,
                started.elapsed()
            );
        }
        let ready = get(addr, "/readyz");
        assert_eq!(ready.status, 503, "{}: {}", mode.name, ready.text);
        assert_eq!(ready.content_type, "application/problem+json");
    }
    assert!(!stall.is_finished(), "the stall ended before the checks");
    println!(
        "stalled checks answered within {} ms (store.timeout 100 ms)",
        slowest.as_millis()
    );

    let woke = stall.join().expect("DEBUG SLEEP answered");
    for (((&addr, user), sent), mode) in addrs.iter().zip(&users).zip(&mut sent).zip(MODES) {
        loop {
            let answer = check(addr, user);
            *sent += 1;
            if !answer.degraded() {
                assert_normal(&answer);
                break;
            }
            assert_degraded(mode, &answer);
            assert!(
                woke.elapsed() < RECOVERY,
                "{}: degraded {:?} after the stall",
                mode.name,
                woke.elapsed()
            );
        }
        println!(
            "on_error {}: normal again {} ms after Redis woke",
            mode.name,
            woke.elapsed().as_millis()
        );
        assert_eq!(get(addr, "/readyz").status, 200);
        let errors = metric(
            addr,
            "ratewarden_store_errors_total",
            &["store=\"redis\"", &format!("action=\"{}\"", mode.action)],
        );
        assert!(errors >= STALLED as f64, "{}: {errors}", mode.name);

        // A timed-out call is not withdrawn: Redis ran each stalled script when it woke.
        let total = counted(addr, user);
        *sent += 1;
        println!(
            "on_error {}: {} checks, Redis counted {total} ({STALLED} answered per on_error \
             during the stall included)",
            mode.name, *sent
        );
        assert_eq!(total, *sent, "{}", mode.name);
    }
    for daemon in daemons {
        assert!(daemon.stop(Duration::from_secs(10)).success());
    }
}

/// A call slower than the Redis client's own default response timeout (500 ms) but within
/// `store.timeout` is waited for: the store's deadline is `store.timeout` alone. (The client's
/// default cut such calls, and every batch, at 500 ms whatever `store.timeout` said.)
#[test]
fn a_call_within_store_timeout_is_waited_for_past_half_a_second() {
    let redis = RedisServer::start_with(&["--enable-debug-command", "local"]);
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&write_policy(dir.path(), &redis.url(), MODES[1], "5s"), &[]);
    wait_ready(daemon.addr);
    assert_normal(&check(daemon.addr, "patient"));
    let port = redis.port.to_string();
    let stall = std::thread::spawn(move || {
        Command::new("redis-cli")
            .args(["-p", &port, "DEBUG", "SLEEP", "1.5"])
            .output()
            .expect("redis-cli runs")
    });
    sleep(Duration::from_millis(200));
    let started = Instant::now();
    let answer = check(daemon.addr, "patient");
    let waited = started.elapsed();
    assert_normal(&answer);
    assert!(
        waited >= Duration::from_millis(600),
        "the check waited for Redis ({} ms)",
        waited.as_millis()
    );
    stall.join().expect("DEBUG SLEEP answered");
}
