//! Batches over Redis: one pipelined round trip, each request decided in order as if alone;
//! the script as a function library (FCALL), EVALSHA where the server refuses functions, and
//! recovery when the server has forgotten the script in either form, for single requests and
//! batches.

use crate::common::redis::RedisServer;
use crate::engine_level::{decide, engine_on};
use crate::support::*;
use ratewarden::clock::ManualClock;
use ratewarden::engine::{CheckRequest, Decision, Reason};
use ratewarden::store::{RedisStore, Request, Store};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A loopback proxy in front of Redis that counts turns: times the client sends after the
/// server has answered (or first). A pipelined batch is one turn; N single calls are N.
struct TurnCounter {
    port: u16,
    turns: Arc<AtomicUsize>,
}

impl TurnCounter {
    /// Runs on threads of its own, so it never waits on the test's runtime.
    fn start(upstream: u16) -> TurnCounter {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let turns = Arc::new(AtomicUsize::new(0));
        let counted = turns.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let (Ok(client), Ok(server)) =
                    (client, TcpStream::connect(("127.0.0.1", upstream)))
                else {
                    continue;
                };
                let answered = Arc::new(AtomicBool::new(true));
                let (turns, up) = (counted.clone(), answered.clone());
                let (client_read, server_write) = (
                    client.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                );
                std::thread::spawn(move || {
                    pump(client_read, server_write, |_| {
                        if up.swap(false, Ordering::SeqCst) {
                            turns.fetch_add(1, Ordering::SeqCst);
                        }
                    })
                });
                std::thread::spawn(move || {
                    pump(server, client, |_| answered.store(true, Ordering::SeqCst))
                });
            }
        });
        TurnCounter { port, turns }
    }

    fn take(&self) -> usize {
        self.turns.swap(0, Ordering::SeqCst)
    }
}

/// Copies `from` to `to`, calling `seen` before forwarding each chunk.
fn pump(mut from: TcpStream, mut to: TcpStream, seen: impl Fn(usize)) {
    let mut buffer = vec![0u8; 1 << 20];
    while let Ok(n @ 1..) = from.read(&mut buffer) {
        seen(n);
        if to.write_all(&buffer[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

fn allowed_of(decisions: &[Decision]) -> Vec<bool> {
    decisions.iter().map(|d| d.allowed).collect()
}

/// A batch is one pipelined round trip, decided in order as if each request were alone; the
/// script is a function the first decision loads; a flushed library is loaded again and the
/// refused calls run by EVAL, for single requests and batches.
pub async fn batch_and_flushed_library() {
    let server = RedisServer::start();
    let proxy = TurnCounter::start(server.port);
    let engine = engine_at(proxy.port);
    // Connects, loads the library, caches gina's (absent) tier.
    let warm = decide(&engine, &CheckRequest::new("gina", "/warm-up")).await;
    assert!(warm.allowed);
    assert_eq!(command_calls(&server, "function|load"), 1);
    proxy.take();
    // /api/export: 5 per minute (fixed_window).
    let requests: Vec<_> = (0..7)
        .map(|_| CheckRequest::new("gina", "/api/export"))
        .collect();
    let decisions = engine.check_batch(&requests).await.expect("decidable");
    assert_eq!(proxy.take(), 1, "one round trip for the batch");
    assert_eq!(
        allowed_of(&decisions),
        [true, true, true, true, true, false, false]
    );
    let remaining: Vec<_> = decisions.iter().map(|d| d.remaining).collect();
    assert_eq!(
        remaining,
        [
            Some(4),
            Some(3),
            Some(2),
            Some(1),
            Some(0),
            Some(0),
            Some(0)
        ]
    );
    assert_eq!(decisions[5].reason, Some(Reason::Burst));
    assert_eq!(decisions[5].retry_after, Some(40 * SECOND));
    // The same requests one by one: one round trip each (what the counter measures).
    for _ in 0..3 {
        decide(&engine, &CheckRequest::new("gina", "/warm-up")).await;
    }
    assert_eq!(proxy.take(), 3);
    // The batch consumed from every limit of each admitted request, and only those.
    let plan = engine
        .plan_check(&CheckRequest::new("gina", "/api/export"), None)
        .unwrap();
    let applied = engine.dry_run(&plan).await.unwrap();
    let remaining: Vec<u64> = applied.checks.iter().map(|c| c.outcome.remaining).collect();
    // hourly 100 - 1 - 5 - 3 - 1, burst 20 - 9 - 1, export 0.
    assert_eq!(remaining, [90, 10, 0]);

    assert_eq!(
        command_calls(&server, "evalsha"),
        0,
        "every decision an FCALL"
    );

    // A flushed library (FUNCTION FLUSH, a new cluster node) is loaded again.
    recovers_when_the_script_is_gone(&server, &engine, &["FUNCTION", "FLUSH"]).await;
    assert_eq!(
        command_calls(&server, "function|load"),
        3,
        "once, then after each flush"
    );
}

/// A server that will not load functions (Redis 6; here `FUNCTION` is renamed away) is sent
/// EVALSHA, and a flushed script cache (NOSCRIPT) falls back to EVAL.
pub async fn evalsha_where_functions_are_refused() {
    let server = RedisServer::start_with(&["--rename-command", "FUNCTION", ""]);
    let engine = engine_at(server.port);
    let warm = decide(&engine, &CheckRequest::new("gina", "/warm-up")).await;
    assert!(warm.allowed && !warm.degraded, "{warm:?}");
    assert_eq!(command_calls(&server, "fcall"), 1, "tried once, refused");
    let evalshas = command_calls(&server, "evalsha");
    decide(&engine, &CheckRequest::new("gina", "/warm-up")).await;
    assert_eq!(command_calls(&server, "evalsha"), evalshas + 1);
    assert_eq!(command_calls(&server, "fcall"), 1, "never tried again");

    recovers_when_the_script_is_gone(&server, &engine, &["SCRIPT", "FLUSH"]).await;
}

/// The engine of these tests on the Redis at `port`, its time from a manual clock.
fn engine_at(port: u16) -> ratewarden::engine::Engine<RedisStore> {
    let clock = ManualClock::starting_at(T0 + 20 * SECOND);
    let store = RedisStore::connect(&format!("redis://127.0.0.1:{port}/0"), "rw", STORE_TIMEOUT)
        .expect("a valid URL")
        .with_clock(Arc::new(clock.clone()));
    engine_on(store)
}

/// After `flush` the server no longer knows the script in the form the store calls it: the
/// refused call runs by EVAL, once, and the next calls take the usual form again; in a batch
/// only the refused calls run again, so nothing counts twice.
async fn recovers_when_the_script_is_gone(
    server: &RedisServer,
    engine: &ratewarden::engine::Engine<RedisStore>,
    flush: &[&str],
) {
    server.cli(flush);
    let evals = command_calls(server, "eval");
    let d = decide(engine, &CheckRequest::new("hank", "/api/export")).await;
    assert!(d.allowed && d.remaining == Some(4), "{d:?}");
    assert_eq!(
        command_calls(server, "eval"),
        evals + 1,
        "fell back to EVAL once"
    );
    let d = decide(engine, &CheckRequest::new("hank", "/api/export")).await;
    assert_eq!(d.remaining, Some(3));
    assert_eq!(
        command_calls(server, "eval"),
        evals + 1,
        "the usual call again once loaded"
    );

    server.cli(flush);
    let evals = command_calls(server, "eval");
    let requests: Vec<_> = (0..5)
        .map(|_| CheckRequest::new("hank", "/api/export"))
        .collect();
    let decisions = engine.check_batch(&requests).await.expect("decidable");
    assert!(decisions.iter().all(|d| !d.degraded), "{decisions:?}");
    assert_eq!(allowed_of(&decisions), [true, true, true, false, false]);
    assert_eq!(
        command_calls(server, "eval"),
        evals + 5,
        "the whole batch again by EVAL"
    );
    // Nothing was applied twice: the refused pipeline ran no script.
    let plan = engine
        .plan_check(&CheckRequest::new("hank", "/api/export"), None)
        .unwrap();
    let applied = engine.dry_run(&plan).await.unwrap();
    assert_eq!(applied.checks[2].outcome.remaining, 0);
    assert_eq!(
        applied.checks[1].outcome.remaining,
        20 - 5 - 1,
        "burst: 5 admitted"
    );
}

/// A request without limits (a tier with `limits: []` on a path no rule matches) is admitted,
/// alone and in a batch: the script reads no key.
pub async fn a_request_without_limits() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url(), "rw", STORE_TIMEOUT).expect("a valid URL");
    let nothing = || Request {
        checks: Default::default(),
        dry_run: false,
    };
    let applied = store.apply(&nothing()).await.expect("decidable");
    assert!(applied.admitted && applied.checks.is_empty(), "{applied:?}");
    for applied in store.apply_batch(&[nothing(), nothing()]).await {
        let applied = applied.expect("decidable");
        assert!(applied.admitted && applied.checks.is_empty(), "{applied:?}");
    }
}

/// Over `maxmemory` with `noeviction` Redis turns FCALL away before it runs; the call runs by
/// EVAL, as the script always has: a dry run (the admin view) is still answered.
pub async fn out_of_memory() {
    let server = RedisServer::start();
    let engine = engine_at(server.port);
    let warm = decide(&engine, &CheckRequest::new("gina", "/warm-up")).await;
    assert!(warm.allowed && !warm.degraded, "{warm:?}");
    server.cli(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    server.cli(&["CONFIG", "SET", "maxmemory", "1"]);
    let evals = command_calls(&server, "eval");
    let plan = engine
        .plan_check(&CheckRequest::new("gina", "/api/export"), None)
        .unwrap();
    let applied = engine.dry_run(&plan).await.expect("answered by EVAL");
    assert_eq!(
        applied.checks[2].outcome.remaining, 4,
        "as if this request were the first"
    );
    assert_eq!(command_calls(&server, "eval"), evals + 1);
    server.cli(&["CONFIG", "SET", "maxmemory", "0"]);
    let d = decide(&engine, &CheckRequest::new("gina", "/api/export")).await;
    assert!(d.allowed && !d.degraded, "{d:?}");
    assert_eq!(command_calls(&server, "eval"), evals + 1, "FCALL again");
}

/// Over `maxmemory` a batch is still decided item by item: a subject over its limit is denied
/// from the store (its script writes nothing), while the item whose script would write fails
/// alone. Once, one refused item failed the whole batch, and `on_error` let the first through.
pub async fn out_of_memory_batch() {
    let server = RedisServer::start();
    let engine = engine_at(server.port);
    let export = |user| CheckRequest::new(user, "/api/export");
    let mut over = decide(&engine, &export("otto")).await;
    while over.allowed {
        over = decide(&engine, &export("otto")).await;
    }
    assert!(!over.degraded, "{over:?}");
    server.cli(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    server.cli(&["CONFIG", "SET", "maxmemory", "1"]);
    for items in [
        [export("otto"), export("nina")],
        [export("nina"), export("otto")],
    ] {
        let decisions = engine.check_batch(&items).await.expect("valid items");
        let (otto, nina) = match items[0].user {
            "otto" => (&decisions[0], &decisions[1]),
            _ => (&decisions[1], &decisions[0]),
        };
        assert!(!otto.allowed && !otto.degraded, "{otto:?}");
        assert!(nina.degraded, "{nina:?}");
    }
    server.cli(&["CONFIG", "SET", "maxmemory", "0"]);
}
