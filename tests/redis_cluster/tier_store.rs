//! The tier store on a cluster: one hash on one node, read and written from cluster
//! connections, keeping its TTL.

use crate::common::redis::RedisCluster;
use crate::support::{PREFIX, check, engine, node_of};
use ratewarden::engine::CheckRequest;
use ratewarden::store::TIER_STORE_TTL;

/// The tier hash lives on one node; its lookups and changes (each pipelined with the TTL
/// refresh) work from a cluster connection, and the hash keeps its TTL.
#[tokio::test]
async fn the_tier_store_works_on_a_cluster_and_keeps_its_ttl() {
    let cluster = RedisCluster::start(3);
    let yaml = "default_tier: t\ntiers:\n  t:\n    limits:\n      - { name: l, algorithm: fixed_window, requests: 5, window: 1h }\n  pro:\n    limits:\n      - { name: l, algorithm: fixed_window, requests: 50, window: 1h }\n";
    let writer = engine(&cluster, yaml).await;
    writer.set_stored_tier("ann", Some("pro")).await.unwrap();
    // Other engines (the same secret, nothing cached) find it: one alone (HGET), one in a
    // batch (HMGET).
    let other = engine(&cluster, yaml).await;
    assert_eq!(
        check(&other, CheckRequest::new("ann", "/x"))
            .await
            .tier_name(),
        "pro"
    );
    let batch = [
        CheckRequest::new("bob", "/x"),
        CheckRequest::new("ann", "/x"),
    ];
    let tiers: Vec<String> = engine(&cluster, yaml)
        .await
        .check_batch(&batch)
        .await
        .unwrap()
        .iter()
        .map(|d| d.tier_name().to_owned())
        .collect();
    assert_eq!(tiers, ["t", "pro"]);
    let key = format!("{PREFIX}:tiers");
    let node = &cluster.nodes[node_of(&cluster, &key)];
    let ttl: i64 = node.cli(&["PTTL", &key]).trim().parse().unwrap();
    let long = TIER_STORE_TTL.as_millis() as i64;
    assert!(ttl > long - 60_000 && ttl <= long, "PTTL {ttl}");
    writer.set_stored_tier("ann", None).await.unwrap();
    assert_eq!(node.cli(&["HLEN", &key]).trim(), "0");
}
