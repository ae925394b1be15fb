//! What the cluster tests share: an engine on a cluster connection, a check the cluster must
//! answer, which master serves a key or a subject, and a one-limit policy.

use crate::common::redis::RedisCluster;
use ratewarden::engine::{CheckRequest, Decision, Engine, SubjectHasher};
use ratewarden::limit::KeyHash;
use ratewarden::policy::Policy;
use ratewarden::store::RedisStore;
use std::path::Path;
use std::time::Duration;

pub const PREFIX: &str = "rw";
const TIMEOUT: Duration = Duration::from_millis(500);

pub async fn engine(cluster: &RedisCluster, yaml: &str) -> Engine<RedisStore> {
    let policy = Policy::from_yaml(yaml, Path::new(".")).expect("test policy is valid");
    let store = RedisStore::connect_cluster(&cluster.node_urls(), PREFIX, TIMEOUT)
        .await
        .expect("cluster connection");
    Engine::new(policy, store, SubjectHasher::from_secret("test secret"))
}

pub async fn check(engine: &Engine<RedisStore>, request: CheckRequest<'_>) -> Decision {
    let d = engine.check(&request).await.expect("request is decidable");
    assert!(!d.degraded, "the cluster answered: {request:?}");
    d
}

/// The index in `cluster.nodes` of the master that serves `key`'s slot.
pub fn node_of(cluster: &RedisCluster, key: &str) -> usize {
    let slot: u16 = cluster.nodes[0]
        .cli(&["CLUSTER", "KEYSLOT", key])
        .trim()
        .parse()
        .expect("a slot");
    // `<id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slot ranges...>`
    for line in cluster.nodes[0].cli(&["CLUSTER", "NODES"]).lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 9 || !fields[2].contains("master") {
            continue;
        }
        let port: u16 = fields[1]
            .split(['@', ':'])
            .nth(1)
            .and_then(|p| p.parse().ok())
            .expect("a port");
        let serves = fields[8..].iter().any(|range| {
            let mut ends = range.split('-').map(|s| s.parse::<u16>());
            match (ends.next(), ends.next()) {
                (Some(Ok(a)), Some(Ok(b))) => (a..=b).contains(&slot),
                (Some(Ok(a)), None) => a == slot,
                _ => false,
            }
        });
        if serves {
            return cluster
                .nodes
                .iter()
                .position(|n| n.port == port)
                .expect("a node of this cluster");
        }
    }
    panic!("no master serves slot {slot}");
}

/// The node holding a subject's keys (their hash tag is the subject hash).
pub fn node_of_subject(cluster: &RedisCluster, subject: KeyHash) -> usize {
    node_of(cluster, &format!("{{{subject}}}"))
}

pub fn fixed_window_policy(requests: u64, window: &str) -> String {
    format!(
        "default_tier: t\ntiers:\n  t:\n    limits:\n      - {{ name: l, algorithm: fixed_window, requests: {requests}, window: {window} }}\n"
    )
}
