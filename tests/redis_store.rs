//! The Redis store against real `redis-server` processes: the algorithm suite run on both
//! stores with the same expectations, a random differential of the memory store and the Lua
//! script in lockstep, what lands in Redis (hashes only, TTLs), the tier store, batches and
//! script-cache recovery, and the engine end to end on both stores.
//!
//! `tests/redis_store/` holds the parts: `support` (stores on one manual clock, key layout, a
//! seeded generator), `scenarios` (the suite, generic over `Store`; its tables and
//! request-level rules in `scenarios/`), `reference` (the algorithms as a store, and Redis expiry
//! on the manual clock), `differential`, `engine_level` (privacy and the tier store in
//! `engine_level/`) and `batch`.

#[path = "redis_store/batch.rs"]
mod batch;
mod common;
#[path = "redis_store/differential.rs"]
mod differential;
#[path = "redis_store/engine_level.rs"]
mod engine_level;
#[path = "redis_store/log_refund.rs"]
mod log_refund;
#[path = "redis_store/reference.rs"]
mod reference;
#[path = "redis_store/reload.rs"]
mod reload;
#[path = "redis_store/scenarios.rs"]
mod scenarios;
#[path = "redis_store/support.rs"]
mod support;

use common::redis::RedisServer;
use ratewarden::clock::ManualClock;
use ratewarden::store::{MemoryStore, Store, StoreKind};
use std::sync::Arc;
use support::{Pair, T0};

#[tokio::test]
async fn algorithm_suite_on_the_memory_store() {
    let clock = ManualClock::starting_at(T0);
    let memory = MemoryStore::new(Arc::new(clock.clone()), 1_000_000);
    assert_eq!(memory.kind(), StoreKind::Memory);
    scenarios::run(&memory, &clock, "memory").await;
}

#[tokio::test]
async fn algorithm_suite_on_the_redis_store() {
    let server = RedisServer::start();
    let pair = Pair::new(&server, "suite", T0);
    assert_eq!(pair.redis.kind(), StoreKind::Redis);
    pair.redis.ping().await.expect("Redis answers");
    scenarios::run(&pair.redis, &pair.clock, "redis").await;
}

#[tokio::test]
async fn differential_memory_and_redis_agree_on_random_requests() {
    let server = RedisServer::start();
    differential::run(&server).await;
}

#[tokio::test]
async fn no_raw_identifier_in_redis_and_every_key_expires() {
    engine_level::privacy_and_ttls().await;
}

#[tokio::test]
async fn tier_store_is_a_hash_read_through_the_local_cache() {
    engine_level::tier_store().await;
}

#[tokio::test]
async fn a_failed_tier_lookup_is_the_default_tier_and_counted() {
    engine_level::a_failed_tier_lookup_is_the_default_tier_and_counted().await;
}

#[tokio::test]
async fn batch_is_one_round_trip_and_a_flushed_library_is_loaded_again() {
    batch::batch_and_flushed_library().await;
}

#[tokio::test]
async fn a_server_that_refuses_functions_is_sent_evalsha() {
    batch::evalsha_where_functions_are_refused().await;
}

#[tokio::test]
async fn a_request_without_limits_is_admitted() {
    batch::a_request_without_limits().await;
}

#[tokio::test]
async fn out_of_memory_redis_still_answers_what_writes_nothing() {
    batch::out_of_memory().await;
}

#[tokio::test]
async fn out_of_memory_a_batch_item_that_would_write_fails_alone() {
    batch::out_of_memory_batch().await;
}

#[tokio::test]
async fn engine_decides_alike_on_memory_and_redis() {
    engine_level::engine_decides_alike().await;
}

#[tokio::test]
async fn a_token_bucket_keeps_its_usage_when_the_load_factor_shrinks_it_later() {
    engine_level::bucket_usage_survives_a_smaller_scale().await;
}
