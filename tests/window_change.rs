//! A reload that lengthens a limit's `window` keeps the usage counted under it, on either
//! store and for every algorithm: the requests counted lie inside the new, longer window.

mod common;

use common::redis::RedisServer;
use ratewarden::clock::ManualClock;
use ratewarden::limit::{Algorithm, KeyHash, LimitId, Rate};
use ratewarden::store::{Check, MemoryStore, RedisStore, Request, Store};
use std::sync::Arc;
use std::time::Duration;

/// A whole two minutes since the epoch: a one-minute window starts a minute after it, inside
/// the two-minute window that starts at it.
const TWO_MINUTE_EDGE: u64 = 1_700_000_040_000_000;

fn request(algorithm: Algorithm, window_secs: u64) -> Request<'static> {
    let check = Check {
        subject: KeyHash(42),
        limit: LimitId {
            name: "e:/k:l",
            hash: 7,
        },
        rate: Rate {
            algorithm,
            window: window_secs * 1_000_000,
            requests: 3,
            burst: 3,
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
