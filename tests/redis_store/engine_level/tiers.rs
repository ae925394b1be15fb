//! The tier store over Redis: `set_stored_tier` writes one hash field per subject hash, checks
//! read it through the local cache, and the hash keeps its long TTL; a lookup Redis refuses
//! gives the default tier and is counted.

use super::{decide, engine_on};
use crate::common::redis::RedisServer;
use crate::support::*;
use ratewarden::clock::ManualClock;
use ratewarden::engine::{CheckRequest, Decision};
use ratewarden::store::{TIER_STORE_TTL, TIER_TTL_REFRESH};
use std::time::Duration;

/// `set_stored_tier` writes `HSET <prefix>:tiers <subject hash> <tier>`; checks read it
/// through the local cache; removing it goes back to the default tier.
pub async fn tier_store() {
    let server = RedisServer::start();
    let clock = ManualClock::starting_at(T0);
    let engine = engine_on(redis_store(&server, "rw", &clock));
    let tier_of = |d: &Decision| d.resolved.tier().name.clone();

    assert_eq!(engine.stored_tier("carol").await, None);
    assert_eq!(
        tier_of(&decide(&engine, &CheckRequest::new("carol", "/x")).await),
        "free"
    );
    let subject = engine
        .set_stored_tier("carol", Some("pro"))
        .await
        .expect("stored");
    assert_eq!(subject, engine.hasher().user("carol"));
    assert_eq!(
        server
            .cli(&["HGET", "rw:tiers", &subject.to_string()])
            .trim(),
        "pro"
    );
    assert_eq!(server.cli(&["HLEN", "rw:tiers"]).trim(), "1");
    let long = TIER_STORE_TTL.as_millis() as i64;
    let tiers_ttl = || -> i64 { server.cli(&["PTTL", "rw:tiers"]).trim().parse().unwrap() };
    assert!(tiers_ttl() > long - 60_000, "PTTL {}", tiers_ttl());
    // A hash an operator wrote without a TTL gets one from the first lookup once the refresh
    // is due: lookups refresh it at most once per TIER_TTL_REFRESH, not once per request.
    server.cli(&["PERSIST", "rw:tiers"]);
    assert_eq!(tiers_ttl(), -1);
    // The engine that wrote it forgets its cached answer at once.
    let before = command_calls(&server, "hget");
    assert_eq!(
        tier_of(&decide(&engine, &CheckRequest::new("carol", "/x")).await),
        "pro"
    );
    assert_eq!(command_calls(&server, "hget"), before + 1, "one lookup");
    assert_eq!(tiers_ttl(), -1, "the change refreshed it a moment ago");
    clock.advance(TIER_TTL_REFRESH + Duration::from_secs(1));
    assert_eq!(engine.stored_tier("zed").await, None);
    assert!(tiers_ttl() > long - 60_000, "PTTL {}", tiers_ttl());
    let before = command_calls(&server, "hget");
    // Then the local cache answers: an operator's change in Redis is not seen yet.
    server.cli(&["HSET", "rw:tiers", &subject.to_string(), "enterprise"]);
    for _ in 0..3 {
        assert_eq!(
            tier_of(&decide(&engine, &CheckRequest::new("carol", "/x")).await),
            "pro"
        );
    }
    assert_eq!(command_calls(&server, "hget"), before, "cached");
    // A tier written straight into Redis for a subject not cached yet is found.
    let dave = engine.hasher().user("dave").to_string();
    server.cli(&["HSET", "rw:tiers", &dave, "enterprise"]);
    assert_eq!(
        tier_of(&decide(&engine, &CheckRequest::new("dave", "/x")).await),
        "enterprise"
    );
    // A stored tier the policy does not have falls back to the default tier.
    let erin = engine.hasher().user("erin").to_string();
    server.cli(&["HSET", "rw:tiers", &erin, "platinum"]);
    assert_eq!(
        tier_of(&decide(&engine, &CheckRequest::new("erin", "/x")).await),
        "free"
    );
    // A tier named by the request wins over the stored one.
    let mut r = CheckRequest::new("dave", "/x");
    r.tier = Some("pro");
    assert_eq!(tier_of(&decide(&engine, &r).await), "pro");
    // An unknown tier is refused and nothing is written.
    assert!(
        engine
            .set_stored_tier("frank", Some("platinum"))
            .await
            .is_err()
    );
    let frank = engine.hasher().user("frank").to_string();
    assert_eq!(server.cli(&["HEXISTS", "rw:tiers", &frank]).trim(), "0");
    // Removing.
    engine
        .set_stored_tier("carol", None)
        .await
        .expect("removed");
    assert_eq!(
        server
            .cli(&["HEXISTS", "rw:tiers", &subject.to_string()])
            .trim(),
        "0"
    );
    assert_eq!(engine.stored_tier("carol").await, None);
    assert_eq!(
        tier_of(&decide(&engine, &CheckRequest::new("carol", "/x")).await),
        "free"
    );
    // The tier store keeps its TTL and holds hashes only.
    assert!(tiers_ttl() > long - 60_000, "PTTL {}", tiers_ttl());
    let all = server.cli(&["HGETALL", "rw:tiers"]);
    assert!(!all.contains("dave") && !all.contains("erin"), "{all}");
}

/// A lookup Redis refuses (an ACL user without `HGET` and `HMGET`) gives the default tier,
/// uncached, without marking the decision degraded, and counts each subject in
/// `ratewarden_tier_lookup_errors_total`.
pub async fn a_failed_tier_lookup_is_the_default_tier_and_counted() {
    let server = RedisServer::start();
    let clock = ManualClock::starting_at(T0);
    let engine = engine_on(redis_store(&server, "rw", &clock));
    let tier_of = |d: &Decision| d.resolved.tier().name.clone();
    let errors = || engine.metrics().tier_lookup_errors.get();
    engine
        .set_stored_tier("carol", Some("pro"))
        .await
        .expect("stored");
    engine
        .set_stored_tier("dave", Some("pro"))
        .await
        .expect("stored");

    let refused = server.cli(&["ACL", "SETUSER", "default", "-hget", "-hmget"]);
    assert_eq!(refused.trim(), "OK");
    assert_eq!(
        tier_of(&decide(&engine, &CheckRequest::new("carol", "/x")).await),
        "free"
    );
    assert_eq!(errors(), 1);
    let batch = [
        CheckRequest::new("carol", "/x"),
        CheckRequest::new("dave", "/x"),
    ];
    let decisions = engine.check_batch(&batch).await.expect("decidable");
    assert!(
        decisions
            .iter()
            .all(|d| !d.degraded && tier_of(d) == "free")
    );
    assert_eq!(errors(), 3, "one per subject of the batch's one lookup");

    // Not cached: the next lookup after Redis allows it again finds the stored tier.
    server.cli(&["ACL", "SETUSER", "default", "+hget", "+hmget"]);
    assert_eq!(
        tier_of(&decide(&engine, &CheckRequest::new("carol", "/x")).await),
        "pro"
    );
    assert_eq!(errors(), 3);
}
