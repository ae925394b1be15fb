//! A reload that lengthens a limit's `window` keeps the usage counted under it, on either
//! store and for every algorithm: the requests counted lie inside the new, longer window.

mod common;

use common::redis::RedisServer;
use ratewarden::clock::{Clock, ManualClock};
use ratewarden::limit::{Algorithm, KeyHash, LimitId, Rate};
use ratewarden::store::{Check, MemoryStore, RedisStore, Request, Store};
use std::sync::Arc;
use std::time::Duration;

/// A whole two minutes since the epoch: a one-minute window starts a minute after it, inside
/// the two-minute window that starts at it.
const TWO_MINUTE_EDGE: u64 = 1_700_000_040_000_000;

fn request(algorithm: Algorithm, window_secs: u64) -> Request<'static> {
    limited(algorithm, window_secs, 3)
}

fn limited(algorithm: Algorithm, window_secs: u64, requests: u64) -> Request<'static> {
    let check = Check {
        subject: KeyHash(42),
        limit: LimitId {
            name: "e:/k:l",
            hash: 7,
        },
        rate: Rate {
            algorithm,
            window: window_secs * 1_000_000,
            requests,
            burst: requests,
        },
        cost: 1,
        enforce: true,
        probes: [None, None],
        written: None,
        slowest: 3,
    };
    Request {
        checks: [check].into_iter().collect(),
        dry_run: false,
    }
}

/// Two requests under a one-minute window, then the window becomes two minutes: the third
/// request sees both, and a fourth is denied.
async fn keeps_usage<S: Store>(store: &S, algorithm: Algorithm) {
    for _ in 0..2 {
        let decision = store.apply(&request(algorithm, 60)).await.unwrap();
        assert!(decision.admitted, "{algorithm}");
    }
    let third = store.apply(&request(algorithm, 120)).await.unwrap();
    assert!(third.admitted, "{algorithm}");
    assert_eq!(
        third.checks[0].outcome.remaining, 0,
        "{algorithm}: the two requests counted under one minute still count under two"
    );
    let fourth = store.apply(&request(algorithm, 120)).await.unwrap();
    assert!(!fourth.admitted, "{algorithm}: the limit holds");
}

#[tokio::test]
async fn a_longer_window_keeps_the_usage_counted_under_the_shorter_one() {
    assert_eq!(TWO_MINUTE_EDGE % 120_000_000, 0);
    let redis = RedisServer::start();
    let at = TWO_MINUTE_EDGE + 65_000_000;
    for algorithm in [
        Algorithm::FixedWindow,
        Algorithm::SlidingWindow,
        Algorithm::SlidingLog,
        Algorithm::TokenBucket,
        Algorithm::Gcra,
    ] {
        let clock = ManualClock::starting_at(at);
        let memory = MemoryStore::new(Arc::new(clock), 1_000);
        keeps_usage(&memory, algorithm).await;

        redis.cli(&["FLUSHALL"]);
        let store = RedisStore::connect(&redis.url(), "rw", Duration::from_secs(2))
            .unwrap()
            .with_clock(Arc::new(ManualClock::starting_at(at)));
        keeps_usage(&store, algorithm).await;
    }
}

/// A sliding window's two counts after its window goes from 10 s to a minute: each goes where
/// the stored window's start lies, its previous count with it (counted in full, so the change
/// frees no quota).
async fn both_counts_move<S: Store>(store: &S, clock: &ManualClock, start: u64) {
    let at = |s: u64| start + s * 1_000_000;
    let send = |window, n| async move {
        for _ in 0..n {
            let decision = store
                .apply(&limited(Algorithm::SlidingWindow, window, 10))
                .await;
            assert!(decision.unwrap().admitted);
        }
    };
    // Stored window [30 s, 40 s) with 5 in it and 5 in the one before, inside the new minute
    // [0, 60 s).
    clock.set(at(25));
    send(10, 5).await;
    clock.set(at(35));
    send(10, 5).await;
    clock.set(at(36));
    let next = store
        .apply(&limited(Algorithm::SlidingWindow, 60, 10))
        .await
        .unwrap();
    assert!(!next.admitted, "all ten lie in the new window: {next:?}");
    // Stored window [170 s, 180 s) with 5 in it and 5 in the one before, inside the previous
    // minute [120 s, 180 s) of [180 s, 240 s): both counts are that minute's.
    clock.set(at(165));
    send(10, 5).await;
    clock.set(at(175));
    send(10, 5).await;
    clock.set(at(181));
    let next = store
        .apply(&limited(Algorithm::SlidingWindow, 60, 10))
        .await
        .unwrap();
    assert!(
        !next.admitted,
        "ten in the previous minute weigh 59/60 of it: {next:?}"
    );
    assert!(clock.now() > start);
}

#[tokio::test]
async fn a_sliding_window_lengthened_keeps_both_its_counts() {
    let redis = RedisServer::start();
    let clock = ManualClock::starting_at(TWO_MINUTE_EDGE);
    let memory = MemoryStore::new(Arc::new(clock.clone()), 1_000);
    both_counts_move(&memory, &clock, TWO_MINUTE_EDGE).await;
    let clock = ManualClock::starting_at(TWO_MINUTE_EDGE);
    let store = RedisStore::connect(&redis.url(), "rw", Duration::from_secs(2))
        .unwrap()
        .with_clock(Arc::new(clock.clone()));
    both_counts_move(&store, &clock, TWO_MINUTE_EDGE).await;
}
