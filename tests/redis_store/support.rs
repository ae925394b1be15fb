//! What every part of `redis_store` shares: time constants, a memory store and a Redis store
//! on one manual clock, the Redis key layout, and a plain Redis connection for looking inside.

use crate::common::redis::RedisServer;
use ratewarden::algorithm::Outcome;
use ratewarden::clock::ManualClock;
use ratewarden::limit::{Algorithm, Rate};
use ratewarden::limit::{KeyHash, LimitId};
use ratewarden::store::{Check, MemoryStore, RedisStore};
use redis::aio::MultiplexedConnection;
use std::sync::Arc;
use std::time::Duration;

pub const SECOND: u64 = 1_000_000;
pub const MINUTE: u64 = 60 * SECOND;
pub const HOUR: u64 = 60 * MINUTE;
pub const DAY: u64 = 24 * HOUR;
/// 2023-11-14T00:00:00Z: aligned to the day, so to every window of the scenarios.
pub const T0: u64 = 19_675 * DAY;

/// Generous: the machine may be busy building; a slow call must not look like a wrong answer.
pub const STORE_TIMEOUT: Duration = Duration::from_secs(5);

/// A memory store and a Redis store that read the same manual clock.
pub struct Pair {
    pub clock: ManualClock,
    pub memory: MemoryStore,
    pub redis: RedisStore,
}

impl Pair {
    pub fn new(server: &RedisServer, prefix: &str, start: u64) -> Pair {
        let clock = ManualClock::starting_at(start);
        Pair {
            memory: MemoryStore::new(Arc::new(clock.clone()), 1_000_000),
            redis: redis_store(server, prefix, &clock),
            clock,
        }
    }
}

/// A Redis store on `server` that takes its time from `clock`.
pub fn redis_store(server: &RedisServer, prefix: &str, clock: &ManualClock) -> RedisStore {
    RedisStore::connect(&server.url(), prefix, STORE_TIMEOUT)
        .expect("a valid Redis URL")
        .with_clock(Arc::new(clock.clone()))
}

/// A Redis store on `server` that uses the server's `TIME`.
pub fn redis_store_server_time(server: &RedisServer, prefix: &str) -> RedisStore {
    RedisStore::connect(&server.url(), prefix, STORE_TIMEOUT).expect("a valid Redis URL")
}

/// A direct connection, to look at what the store wrote.
pub async fn connection(server: &RedisServer) -> MultiplexedConnection {
    redis::Client::open(server.url())
        .expect("a valid Redis URL")
        .get_multiplexed_async_connection()
        .await
        .expect("Redis answers")
}

/// The store's key of one limit of one subject: `<prefix>:{<subject hash>}:<limit id>` (a
/// sliding log has a second key, the same with `#`, for its running total).
pub fn key(prefix: &str, subject: KeyHash, limit: &str) -> String {
    format!("{prefix}:{{{subject}}}:{limit}")
}

pub fn rate(algorithm: Algorithm, window: u64, requests: u64, burst: u64) -> Rate {
    Rate {
        algorithm,
        window,
        requests,
        burst,
    }
}

/// One check with no probes.
pub fn check(subject: KeyHash, limit: &str, rate: Rate, cost: u64, enforce: bool) -> Check<'_> {
    Check {
        subject,
        limit: LimitId {
            name: limit,
            hash: ratewarden::limit::hash_limit_id(limit),
        },
        rate,
        cost,
        enforce,
        probes: [None, None],
        written: None,
        slowest: rate.requests,
    }
}

pub fn allowed(limit: u64, remaining: u64, reset_after: u64) -> Outcome {
    Outcome {
        allowed: true,
        limit,
        remaining,
        reset_after,
        retry_after: Some(0),
    }
}

pub fn denied(limit: u64, remaining: u64, reset_after: u64, retry_after: Option<u64>) -> Outcome {
    Outcome {
        allowed: false,
        limit,
        remaining,
        reset_after,
        retry_after,
    }
}

/// How often the server ran `command`, from `INFO commandstats`.
pub fn command_calls(server: &RedisServer, command: &str) -> u64 {
    let stats = server.cli(&["INFO", "commandstats"]);
    stats
        .lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:calls=")))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

pub use crate::common::rng::Rng;
