//! The script's `refund` of a sliding log, run directly: the cluster path refunds what a
//! request's first part consumed when a later part denies, and a refund must leave the log as
//! if that consumption had never been made, TTL included.

use crate::common::redis::RedisServer;
use crate::support::connection;
use redis::AsyncCommands;

const SCRIPT: &str = include_str!("../../src/store/redis/limits.lua");
const WINDOW: i64 = 1_000_000;
const LIMIT: i64 = 2;

/// One sliding-log check of `cost` against 2 a second, in `mode`, at `now` (µs).
async fn run(conn: &mut redis::aio::MultiplexedConnection, mode: &str, now: i64, cost: i64) {
    let args: [i64; 12] = [now, 1, 1, WINDOW, LIMIT, LIMIT, cost, 1, -1, -1, -1, -1];
    let _: redis::Value = redis::cmd("EVAL")
        .arg(SCRIPT)
        .arg(2)
        .arg("log")
        .arg("log#")
        .arg(mode)
        .arg(&args[..])
        .arg(LIMIT)
        .arg(&[-1_i64, -1][..])
        .query_async(conn)
        .await
        .expect("the script runs");
}

/// A clock that stepped back merges a consumption into the newest entry (`T:2`); refunding it
/// takes one unit out of that entry, which rewrites the one-entry log. It keeps its TTL: a log
/// without one outlived its total, whose expiry then left the log one request short.
#[tokio::test]
async fn a_partial_refund_of_the_only_entry_keeps_the_logs_ttl() {
    let server = RedisServer::start();
    let mut conn = connection(&server).await;
    let now = 1_800_000_000_000_000;
    run(&mut conn, "apply", now, 1).await;
    run(&mut conn, "apply", now - 5, 1).await;
    let merged: Vec<(String, f64)> = conn.zrange_withscores("log", 0, -1).await.unwrap();
    assert_eq!(merged.len(), 1, "merged into one entry: {merged:?}");
    run(&mut conn, "refund", now - 5, 1).await;
    let left: Vec<(String, f64)> = conn.zrange_withscores("log", 0, -1).await.unwrap();
    assert_eq!(left.len(), 1);
    assert!(left[0].0.ends_with(":1"), "{left:?}");
    let total: i64 = conn.get("log#").await.unwrap();
    assert_eq!(total, 1);
    let ttl: i64 = conn.pttl("log").await.unwrap();
    assert!(ttl > 0, "the log keeps a TTL (PTTL {ttl})");
}
