//! The leader's copy of the fleet's activity when Redis loses part of it: a failover that
//! drops the newest values of a bucket's list (the promoted replica missed them) leaves what
//! was merged counted once, not read again from the list's start and counted twice; after a
//! flush, the new list's values count.

use super::shared::{POLICY, daemon_on, send};
use crate::common::START;
use crate::common::redis::RedisServer;
use ratewarden::clock::ManualClock;
use ratewarden::store::RedisStore;
use std::time::Duration;

#[tokio::test]
async fn a_list_cut_short_by_a_failover_is_not_counted_twice() {
    let server = RedisServer::start();
    let clock = ManualClock::starting_at(START);
    let store = RedisStore::connect(&server.url(), "rw", Duration::from_secs(2)).unwrap();
    let (engine, mut control) = daemon_on(store, POLICY, &clock, true);
    let dora = engine.hasher().user("dora");
    let requests = || {
        engine
            .scale_factors()
            .observed(dora)
            .map_or(0, |o| o.requests)
    };

    // Three intervals of 4 requests: three values appended to the bucket's list.
    for _ in 0..3 {
        send(&engine, "dora", "/a", "198.51.100.1", 4).await;
        clock.advance(Duration::from_secs(1));
        assert!(control.cycle().await.leader);
    }
    clock.advance(Duration::from_secs(1));
    control.cycle().await;
    assert_eq!(requests(), 12);

    // The failover: the newest value is gone from the list, but it was merged already.
    let list = server
        .keys()
        .into_iter()
        .find(|k| k.contains(":activity:"))
        .expect("an activity list");
    assert_eq!(server.cli(&["LLEN", &list]).trim(), "3");
    server.cli(&["RPOP", &list]);
    for _ in 0..3 {
        clock.advance(Duration::from_secs(1));
        control.cycle().await;
    }
    assert_eq!(requests(), 12, "the list's first values were merged again");

    // Redis flushed (restarted empty): what comes next counts, what was merged stays.
    server.cli(&["FLUSHALL"]);
    send(&engine, "dora", "/a", "198.51.100.1", 4).await;
    for _ in 0..3 {
        clock.advance(Duration::from_secs(1));
        control.cycle().await;
    }
    assert_eq!(requests(), 16);
}
