//! Time that steps back (another daemon's clock, a Redis failover) never drops counted usage,
//! on either store.

mod common;

use common::redis::RedisServer;
use ratewarden::clock::{Clock, ManualClock};
use ratewarden::limit::{Algorithm, Rate};
use ratewarden::limit::{KeyHash, LimitId};
use ratewarden::store::{Check, MemoryStore, RedisStore, Request, Store};
use std::sync::Arc;
use std::time::Duration;

/// A whole minute since the epoch, so window edges are easy to place.
const MINUTE_EDGE: u64 = 1_700_000_040_000_000;

fn request(algorithm: Algorithm) -> Request<'static> {
    let check = Check {
        subject: KeyHash(42),
        limit: LimitId {
            name: "t:t:l",
            hash: 7,
        },
        rate: Rate {
            algorithm,
            window: 60_000_000,
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

/// Two requests just after a window edge, then the clock steps back before the edge: the
/// third request still sees both, and a fourth is denied.
async fn keeps_usage<S: Store>(store: &S, clock: &ManualClock, algorithm: Algorithm) {
    clock.set(MINUTE_EDGE + 1_000);
    for _ in 0..2 {
        assert!(
            store.apply(&request(algorithm)).await.unwrap().admitted,
            "{algorithm}"
        );
    }
    clock.set(MINUTE_EDGE - 500);
    let third = store.apply(&request(algorithm)).await.unwrap();
    assert!(third.admitted, "{algorithm}");
    assert_eq!(
        third.checks[0].outcome.remaining, 0,
        "{algorithm}: usage kept"
    );
    let fourth = store.apply(&request(algorithm)).await.unwrap();
    assert!(
        !fourth.admitted,
        "{algorithm}: the limit holds across the step back"
    );
}

#[tokio::test]
async fn windows_keep_usage_when_time_steps_back() {
    let redis = RedisServer::start();
    for algorithm in [
        Algorithm::FixedWindow,
        Algorithm::SlidingWindow,
        Algorithm::SlidingLog,
    ] {
        let clock = ManualClock::starting_at(MINUTE_EDGE);
        let memory = MemoryStore::new(Arc::new(clock.clone()), 1_000);
        keeps_usage(&memory, &clock, algorithm).await;

        redis.cli(&["FLUSHALL"]);
        let clock = ManualClock::starting_at(MINUTE_EDGE);
        let store = RedisStore::connect(&redis.url(), "rw", Duration::from_secs(2))
            .unwrap()
            .with_clock(Arc::new(clock.clone()));
        keeps_usage(&store, &clock, algorithm).await;
        assert!(clock.now() < MINUTE_EDGE);
    }
}
