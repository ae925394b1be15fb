//! The real binary under load: SIGTERM lets the requests already accepted finish and the
//! process exits promptly; a storm of SIGHUPs drops no request and loses no usage.

mod common;

use common::daemon::{Connection, Daemon, Reply};
use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The documented bound (docs/testing.md): SIGTERM to exit, when every request in flight is done within it.
const EXIT_BOUND: Duration = Duration::from_secs(5);
/// How long the requests in flight still take after SIGTERM.
const IN_FLIGHT_FOR: Duration = Duration::from_secs(1);

const POLICY: &str = "\
default_tier: t
tiers:
  t:
    adaptive: false
    limits:
      - { name: hourly, algorithm: sliding_log, requests: 2000, window: 1h }
";

fn check(user: &str) -> Vec<u8> {
    let body = format!(r#"{{"user":"{user}","endpoint":"/x"}}"#);
    format!(
        "POST /v1/check HTTP/1.1\r\nHost: ratewarden\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn start() -> (Daemon, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    (Daemon::start(&policy, &[]), dir)
}

/// What a load client saw: statuses by count, and transport failures by kind.
#[derive(Default, Debug)]
struct Seen {
    statuses: BTreeMap<u16, u64>,
    failures: BTreeMap<String, u64>,
}

/// Checks on keep-alive connections until `until` is set or the server is gone; a connection
/// the server closes is replaced.
fn load(addr: SocketAddr, user: &str, until: &AtomicBool) -> Seen {
    let mut seen = Seen::default();
    let mut connection: Option<Connection> = None;
    let mut n = 0u64;
    while !until.load(Ordering::Relaxed) {
        let mut open = match connection.take() {
            Some(open) => open,
            None => match Connection::open(addr) {
                Ok(open) => open,
                // The listener is closed: the daemon is stopping.
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => break,
                Err(e) => panic!("connect: {e}"),
            },
        };
        n += 1;
        match open.exchange(&check(&format!("{user}-{}", n % 50)), false) {
            Ok(reply) => {
                *seen.statuses.entry(reply.status).or_default() += 1;
                if !reply.closes() {
                    connection = Some(open);
                }
            }
            Err(e) => *seen.failures.entry(format!("{:?}", e.kind())).or_default() += 1,
        }
    }
    seen
}

#[test]
fn sigterm_under_load_finishes_the_requests_in_flight_and_exits_within_the_bound() {
    let (mut daemon, _dir) = start();
    let addr = daemon.addr;
    let stop_load = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let loads: Vec<_> = (0..4)
            .map(|i| {
                let stop_load = &stop_load;
                scope.spawn(move || load(addr, &format!("load{i}"), stop_load))
            })
            .collect();
        // Requests in flight at SIGTERM: head and half the body sent, the rest after it.
        let mut in_flight: Vec<(Connection, Vec<u8>)> = (0..8)
            .map(|i| {
                let mut request = check(&format!("in-flight-{i}"));
                let rest = request.split_off(request.len() - 10);
                let mut connection = Connection::open(addr).expect("connects");
                connection.write(&request).expect("writes");
                (connection, rest)
            })
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        daemon.signal("TERM");
        let signalled = Instant::now();
        std::thread::sleep(IN_FLIGHT_FOR);
        for (connection, rest) in &mut in_flight {
            connection
                .write(rest)
                .expect("the connection is still open");
        }
        for (i, (connection, _)) in in_flight.iter_mut().enumerate() {
            let reply: Reply = connection
                .read_reply(false)
                .unwrap_or_else(|e| panic!("in-flight request {i} got no answer: {e}"));
            assert_eq!(reply.status, 200, "{}", reply.text());
            assert!(
                reply.text().contains(r#""allowed":true"#),
                "{}",
                reply.text()
            );
            assert!(reply.closes(), "a stopping server says it closes");
        }
        let (exited, status) = loop {
            if let Some(status) = daemon.exit_status() {
                break (signalled.elapsed(), status);
            }
            assert!(
                signalled.elapsed() < EXIT_BOUND,
                "still running {EXIT_BOUND:?} after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        stop_load.store(true, Ordering::Relaxed);
        assert!(status.success(), "{status}");
        println!(
            "exited {exited:.2?} after SIGTERM (in-flight requests done after {IN_FLIGHT_FOR:?})"
        );
        assert!(
            exited >= IN_FLIGHT_FOR,
            "exited before its requests were answered"
        );
        for load in loads {
            let seen = load.join().expect("load client");
            println!("load client: {seen:?}");
            // Every answer whole and decided; the only failures are a keep-alive request sent
            // as the server closed the idle connection (never read, so never accepted).
            assert!(
                seen.statuses.keys().all(|s| *s == 200 || *s == 429),
                "{seen:?}"
            );
            assert!(seen.statuses[&200] > 0, "{seen:?}");
            let unexpected: Vec<_> = seen
                .failures
                .keys()
                .filter(|k| !matches!(k.as_str(), "UnexpectedEof" | "ConnectionReset"))
                .collect();
            assert!(unexpected.is_empty(), "{seen:?}");
            assert!(seen.failures.values().sum::<u64>() <= 2, "{seen:?}");
        }
    });
}

#[test]
fn a_sighup_storm_under_load_drops_no_request_and_loses_no_usage() {
    let (mut daemon, _dir) = start();
    let addr = daemon.addr;
    let storm_over = AtomicBool::new(false);
    let limit_reached = AtomicBool::new(false);
    let (counted, others) = std::thread::scope(|scope| {
        // The counted subject, paced so its 2000 admissions span the storm.
        let counted: Vec<_> = (0..4)
            .map(|_| {
                let (storm_over, limit_reached) = (&storm_over, &limit_reached);
                scope.spawn(move || {
                    let mut connection = Connection::open(addr).expect("connects");
                    let mut statuses = BTreeMap::<u16, u64>::new();
                    while !storm_over.load(Ordering::Relaxed) {
                        let reply = connection
                            .exchange(&check("counted"), false)
                            .expect("answered during the storm");
                        *statuses.entry(reply.status).or_default() += 1;
                        if reply.status == 429 {
                            limit_reached.store(true, Ordering::Relaxed);
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    statuses
                })
            })
            .collect();
        let others: Vec<_> = (0..2)
            .map(|i| {
                let storm_over = &storm_over;
                scope.spawn(move || load(addr, &format!("other{i}"), storm_over))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        for _ in 0..50 {
            daemon.signal("HUP");
            std::thread::sleep(Duration::from_millis(100));
        }
        // Traffic goes on a little past the last reload, and until the limit is reached (on a
        // slow machine the 2000 admissions can outlast the storm).
        std::thread::sleep(Duration::from_millis(2_000));
        let deadline = Instant::now() + Duration::from_secs(60);
        while !limit_reached.load(Ordering::Relaxed) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        storm_over.store(true, Ordering::Relaxed);
        let counted: Vec<_> = counted.into_iter().map(|c| c.join().unwrap()).collect();
        let others: Vec<_> = others.into_iter().map(|c| c.join().unwrap()).collect();
        (counted, others)
    });
    let mut total = BTreeMap::<u16, u64>::new();
    for statuses in &counted {
        for (status, n) in statuses {
            *total.entry(*status).or_default() += n;
        }
    }
    let reloads = daemon
        .drain_log()
        .iter()
        .filter(|l| l.contains("policy reloaded"))
        .count();
    println!("counted subject: {total:?}; others: {others:?}; {reloads} reloads");
    for seen in &others {
        assert!(seen.failures.is_empty(), "{seen:?}");
        assert!(
            seen.statuses.keys().all(|s| *s == 200 || *s == 429),
            "{seen:?}"
        );
    }
    assert!(total.keys().all(|s| *s == 200 || *s == 429), "{total:?}");
    assert!(
        total.get(&429).copied().unwrap_or(0) > 0,
        "the limit was reached: {total:?}"
    );
    assert_eq!(
        total[&200], 2000,
        "admitted exactly the limit across the reloads"
    );
    assert!(reloads >= 10, "only {reloads} reloads");
    assert!(daemon.stop(Duration::from_secs(10)).success());
}
