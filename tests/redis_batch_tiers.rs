//! A batch looks up its users' stored tiers in one round trip (`HMGET`), never one per item.

mod common;

use common::EXAMPLE_POLICY;
use common::redis::RedisServer;
use ratewarden::engine::{CheckRequest, Engine, SubjectHasher};
use ratewarden::policy::Policy;
use ratewarden::store::RedisStore;
use std::path::Path;
use std::time::Duration;

/// `calls` of one command from `INFO commandstats`.
fn calls(server: &RedisServer, command: &str) -> u64 {
    server
        .cli(&["INFO", "commandstats"])
        .lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:calls=")))
        .and_then(|rest| rest.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_batch_reads_stored_tiers_with_one_hmget() {
    let redis = RedisServer::start();
    let store = RedisStore::connect(&redis.url(), "rw", Duration::from_secs(2)).unwrap();
    let policy = Policy::from_yaml(EXAMPLE_POLICY, Path::new(".")).unwrap();
    let engine = Engine::new(policy, store, SubjectHasher::from_secret("tiers"));
    for user in ["ann", "ben"] {
        engine.set_stored_tier(user, Some("pro")).await.unwrap();
    }
    redis.cli(&["CONFIG", "RESETSTAT"]);

    let users = ["ann", "ben", "cat", "ann", "ben", "cat"];
    let requests: Vec<_> = users.iter().map(|u| CheckRequest::new(u, "/x")).collect();
    let decisions = engine.check_batch(&requests).await.unwrap();

    let tiers: Vec<&str> = decisions.iter().map(|d| d.tier_name()).collect();
    assert_eq!(tiers, ["pro", "pro", "free", "pro", "pro", "free"]);
    assert!(decisions.iter().all(|d| d.allowed && !d.degraded));
    assert_eq!(calls(&redis, "hmget"), 1, "one lookup for the whole batch");
    assert_eq!(calls(&redis, "hget"), 0);

    // Now cached: a second batch asks Redis for no tier at all.
    engine.check_batch(&requests).await.unwrap();
    assert_eq!(calls(&redis, "hmget"), 1);
}
