//! Three daemons (engines, each with its own Redis connection) x 64 concurrent clients on one
//! subject, on one real redis-server with time from its clock: exactly the limit is admitted
//! in total, for every algorithm, and a request with two limits is all-or-nothing across
//! daemons. And a pipelined batch counts each request once while the server forgets the
//! script (its function library, or its EVALSHA cache) under it.

mod common;

use common::redis::RedisServer;
use ratewarden::engine::{CheckRequest, Engine, SubjectHasher};
use ratewarden::limit::Algorithm;
use ratewarden::policy::Policy;
use ratewarden::store::RedisStore;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

const ENGINES: usize = 3;
const CLIENTS_PER_ENGINE: usize = 64;
const CHECKS_PER_CLIENT: usize = 6;
const LIMIT: u64 = 200;
// Far more attempts than the limit.
const _: () = assert!((ENGINES * CLIENTS_PER_ENGINE * CHECKS_PER_CLIENT) as u64 > 5 * LIMIT);
/// Generous: a call that times out after Redis ran it would be a degraded decision, not a bug.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The tier limit of the two-limit test: larger than the endpoint's.
const TIER_LIMIT: u64 = 5 * LIMIT;

/// A tier limit of `tier` a day (a day: nothing refills while the clients race), and an
/// endpoint rule `/two`, keyed by user, whose limit is `LIMIT` a day.
fn policy(algorithm: Algorithm, tier: u64) -> String {
    format!(
        "default_tier: t\n\
         tiers:\n  t:\n    limits:\n      - {{ name: l, algorithm: {algorithm}, requests: {tier}, window: 1d }}\n\
         endpoints:\n  - path: /two\n    limits: [ {{ name: e, algorithm: {algorithm}, requests: {LIMIT}, window: 1d }} ]\n"
    )
}

/// `ENGINES` engines on `server`, each with its own connection, sharing the subject hasher's
/// secret (so they count the same subjects under the same keys).
fn engines(server: &RedisServer, yaml: &str, prefix: &str) -> Vec<Arc<Engine<RedisStore>>> {
    (0..ENGINES)
        .map(|_| {
            let policy = Policy::from_yaml(yaml, Path::new(".")).expect("test policy is valid");
            let store = RedisStore::connect(&server.url(), prefix, TIMEOUT).expect("redis url");
            Arc::new(Engine::new(
                policy,
                store,
                SubjectHasher::from_secret("test secret"),
            ))
        })
        .collect()
}

/// Every client of every engine sends `CHECKS_PER_CLIENT` requests at once; the number admitted.
async fn race(engines: &[Arc<Engine<RedisStore>>], endpoint: &'static str) -> u64 {
    let admitted = Arc::new(AtomicU64::new(0));
    let degraded = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for engine in engines {
        for _ in 0..CLIENTS_PER_ENGINE {
            let (engine, admitted, degraded) = (engine.clone(), admitted.clone(), degraded.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..CHECKS_PER_CLIENT {
                    let d = engine
                        .check(&CheckRequest::new("one subject", endpoint))
                        .await
                        .unwrap();
                    if d.degraded {
                        degraded.fetch_add(1, Ordering::Relaxed);
                    } else if d.allowed {
                        admitted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(
        degraded.load(Ordering::Relaxed),
        0,
        "no decision may come from a failed store call"
    );
    admitted.load(Ordering::Relaxed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_daemons_admit_exactly_the_limit() {
    let server = RedisServer::start();
    for algorithm in Algorithm::ALL {
        // Only the tier limit applies to an endpoint that matches no rule.
        let engines = engines(
            &server,
            &policy(algorithm, LIMIT),
            &format!("one-{algorithm}"),
        );
        let admitted = race(&engines, "/other").await;
        assert_eq!(
            admitted, LIMIT,
            "{algorithm}: admitted across {ENGINES} daemons"
        );
        // And nothing more passes afterwards, from any daemon.
        for engine in &engines {
            let d = engine
                .check(&CheckRequest::new("one subject", "/other"))
                .await
                .unwrap();
            assert!(
                !d.allowed && !d.degraded,
                "{algorithm}: a request after the race"
            );
            assert_eq!(d.remaining, Some(0), "{algorithm}");
        }
    }
    assert!(!server.keys().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_limits_are_all_or_nothing_across_daemons() {
    let server = RedisServer::start();
    let tier = TIER_LIMIT;
    for algorithm in Algorithm::ALL {
        let engines = engines(
            &server,
            &policy(algorithm, tier),
            &format!("two-{algorithm}"),
        );
        let admitted = race(&engines, "/two").await;
        assert_eq!(
            admitted, LIMIT,
            "{algorithm}: the endpoint limit (the smaller) decides"
        );

        // The tier limit was consumed by exactly the admitted requests, not by the denied ones:
        // a dry run of /two (tier, then endpoint) sees the tier with `tier - LIMIT` left before
        // this request, and the endpoint spent.
        let engine = &engines[1];
        let plan = engine
            .plan_check(&CheckRequest::new("one subject", "/two"), None)
            .unwrap();
        let view = engine.dry_run(&plan).await.unwrap();
        assert!(!view.admitted, "{algorithm}");
        assert_eq!(view.checks.len(), 2);
        let (tier_check, endpoint_check) = (view.checks[0].outcome, view.checks[1].outcome);
        assert!(tier_check.allowed, "{algorithm}: {tier_check:?}");
        assert_eq!(tier_check.limit, tier, "{algorithm}");
        assert_eq!(
            tier_check.remaining,
            tier - LIMIT - 1,
            "{algorithm}: the tier after one more"
        );
        assert!(!endpoint_check.allowed, "{algorithm}: {endpoint_check:?}");
        assert_eq!(endpoint_check.remaining, 0, "{algorithm}");

        // A real request on an endpoint with only the tier limit agrees, from another daemon.
        let d = engines[2]
            .check(&CheckRequest::new("one subject", "/other"))
            .await
            .unwrap();
        assert!(d.allowed && !d.degraded, "{algorithm}");
        assert_eq!(d.remaining, Some(tier - LIMIT - 1), "{algorithm}");
    }
}

/// A batch is one pipeline of FCALL, and the library can vanish (FUNCTION FLUSH, a new node)
/// or come back (another daemon's load) midway through it: each request still counts once,
/// whether the server ran its call or refused it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_counts_each_request_once_while_the_library_changes() {
    let server = RedisServer::start();
    batches_count_once_while_flushed(&server, "FUNCTION", "fcall").await;
}

/// The same with EVALSHA (a server that refuses functions) and its script cache emptied
/// (SCRIPT FLUSH, a restart, a failover) or filled (another daemon's EVAL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_counts_each_request_once_while_the_script_cache_changes() {
    let server = RedisServer::start_with(&["--rename-command", "FUNCTION", ""]);
    batches_count_once_while_flushed(&server, "SCRIPT", "evalsha").await;
}

/// Batches from two daemons while a thread runs `<flushed> FLUSH` every 10 ms; `call` is the
/// command the store sends (`fcall` or `evalsha`).
async fn batches_count_once_while_flushed(server: &RedisServer, flushed: &str, call: &str) {
    const USERS: usize = 2_000;
    let engines = engines(server, &policy(Algorithm::FixedWindow, 2), "batch");
    let stop = Arc::new(AtomicBool::new(false));
    let flusher = {
        let (stop, port, flushed) = (stop.clone(), server.port.to_string(), flushed.to_owned());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let flush = Command::new("redis-cli")
                    .args(["-p", &port, &flushed, "FLUSH"])
                    .output()
                    .expect("redis-cli runs");
                assert!(flush.status.success());
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    for round in 0..8 {
        let users: Vec<String> = (0..USERS).map(|i| format!("r{round}-{i}")).collect();
        // The tier named: no tier lookups, the pipeline goes at once.
        let requests: Vec<_> = users
            .iter()
            .map(|u| CheckRequest {
                tier: Some("t"),
                ..CheckRequest::new(u, "/x")
            })
            .collect();
        // The script is known when the pipeline starts, mostly.
        engines[0]
            .check(&CheckRequest::new("warm", "/x"))
            .await
            .unwrap();
        let first = engines[0].check_batch(&requests).await.unwrap();
        let second = engines[1].check_batch(&requests).await.unwrap();
        for (i, (a, b)) in first.iter().zip(&second).enumerate() {
            assert!(!a.degraded && !b.degraded, "round {round}, {i}");
            assert!(a.allowed && b.allowed, "round {round}, {i}: counted twice");
            assert_eq!(
                (a.remaining, b.remaining),
                (Some(1), Some(0)),
                "round {round}, {i}"
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    flusher.join().unwrap();
    // The script vanished under the batches, and each refused call ran once more by EVAL (on a
    // server that refuses functions, each daemon's first calls were FCALLs refused too).
    let stats = server.cli(&["INFO", "commandstats"]);
    let stat = |command: &str, field: &str| -> u64 {
        stats
            .lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:")))
            .and_then(|line| {
                line.split(',')
                    .find_map(|kv| kv.strip_prefix(&format!("{field}=")))
            })
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    let (calls, refused) = (stat(call, "calls"), stat(call, "failed_calls"));
    assert!(
        0 < refused && refused < calls,
        "{refused} of {calls} {call} refused"
    );
    let all_refused = stat("fcall", "failed_calls") + stat("evalsha", "failed_calls");
    assert_eq!(stat("eval", "calls"), all_refused, "{stats}");
}
