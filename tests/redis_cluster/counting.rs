//! Exact counts across masters: subjects spread over every master (each key on the master of its
//! slot), a batch across nodes decided subject by subject in order, and three daemons × 64
//! clients on one subject admitting exactly the limit.

use crate::common;
use crate::common::redis::RedisCluster;
use crate::support::{check, engine, fixed_window_policy, node_of, node_of_subject};
use ratewarden::engine::CheckRequest;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn subjects_spread_over_every_master_and_count_exactly() {
    const SUBJECTS: usize = 30;
    const ATTEMPTS: usize = 8;
    const LIMIT: u64 = 5;
    let cluster = RedisCluster::start(3);
    let yaml = fixed_window_policy(LIMIT, "1h");
    // Three daemons, each request of a subject from one of them, all at once.
    let mut engines = Vec::new();
    for _ in 0..3 {
        engines.push(Arc::new(engine(&cluster, &yaml).await));
    }
    common::clear_of_window_edge(Duration::from_secs(3600)).await;
    let mut tasks = Vec::new();
    for s in 0..SUBJECTS {
        for a in 0..ATTEMPTS {
            let engine = engines[(s + a) % engines.len()].clone();
            tasks.push(tokio::spawn(async move {
                let user = format!("subject-{s}");
                (
                    s,
                    check(&engine, CheckRequest::new(&user, "/x")).await.allowed,
                )
            }));
        }
    }
    let mut admitted = vec![0u64; SUBJECTS];
    for task in tasks {
        let (s, allowed) = task.await.unwrap();
        admitted[s] += u64::from(allowed);
    }
    assert_eq!(admitted, vec![LIMIT; SUBJECTS], "admitted per subject");

    // Every master holds some of the keys, each key on the master of its slot, one per subject.
    let mut all = BTreeSet::new();
    for (i, node) in cluster.nodes.iter().enumerate() {
        let keys = node.keys();
        let size: usize = node.cli(&["DBSIZE"]).trim().parse().unwrap();
        assert_eq!(size, keys.len(), "node {i}");
        assert!(!keys.is_empty(), "node {i} holds no key");
        for key in keys {
            assert!(key.starts_with("rw:{"), "{key}");
            assert_eq!(
                node_of(&cluster, &key),
                i,
                "{key} is on the master of its slot"
            );
            all.insert(key);
        }
    }
    let expected: BTreeSet<String> = (0..SUBJECTS)
        .map(|s| {
            format!(
                "rw:{{{}}}:{}",
                engines[0].hasher().user(&format!("subject-{s}")),
                "t:t:l"
            )
        })
        .collect();
    assert_eq!(all.len(), SUBJECTS);
    assert_eq!(all, expected);

    // Whichever daemon asks next, every subject is spent.
    for (s, engine) in (0..SUBJECTS).zip(engines.iter().cycle()) {
        let d = check(engine, CheckRequest::new(&format!("subject-{s}"), "/x")).await;
        assert!(!d.allowed, "subject-{s}");
        assert_eq!(d.remaining, Some(0));
    }
}

#[tokio::test]
async fn a_batch_across_nodes_decides_each_subject_in_order() {
    const PER_SUBJECT: usize = 7;
    const LIMIT: u64 = 5;
    let cluster = RedisCluster::start(3);
    let engine = engine(&cluster, &fixed_window_policy(LIMIT, "1h")).await;
    // Two subjects on each master.
    let mut per_node: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for i in 0.. {
        let user = format!("batch-{i}");
        let node = node_of_subject(&cluster, engine.hasher().user(&user));
        let users = per_node.entry(node).or_default();
        if users.len() < 2 {
            users.push(user);
        }
        if per_node.len() == 3 && per_node.values().all(|u| u.len() == 2) {
            break;
        }
    }
    let users: Vec<&str> = per_node.values().flatten().map(String::as_str).collect();
    // Interleaved: a, b, c, ..., a, b, c, ...
    let requests: Vec<CheckRequest<'_>> = (0..PER_SUBJECT)
        .flat_map(|_| users.iter().map(|u| CheckRequest::new(u, "/x")))
        .collect();
    common::clear_of_window_edge(Duration::from_secs(3600)).await;
    let decisions = engine.check_batch(&requests).await.unwrap();
    assert_eq!(decisions.len(), requests.len());
    for (i, (request, d)) in requests.iter().zip(&decisions).enumerate() {
        let nth = i / users.len();
        assert!(!d.degraded, "{i}");
        assert_eq!(
            d.allowed,
            (nth as u64) < LIMIT,
            "request {i} ({}, its #{nth})",
            request.user
        );
        assert_eq!(
            d.remaining,
            Some(LIMIT.saturating_sub(nth as u64 + 1)),
            "request {i}"
        );
    }
    // A second batch: every subject spent.
    let again = engine.check_batch(&requests[..users.len()]).await.unwrap();
    assert!(again.iter().all(|d| !d.allowed && !d.degraded));
    for (i, node) in cluster.nodes.iter().enumerate() {
        assert_eq!(
            node.keys().len(),
            2,
            "node {i} holds its two subjects' keys"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_daemons_on_the_cluster_admit_exactly_the_limit() {
    const CLIENTS_PER_ENGINE: usize = 64;
    const CHECKS_PER_CLIENT: usize = 6;
    const LIMIT: u64 = 200;
    let cluster = RedisCluster::start(3);
    let yaml = format!(
        "default_tier: t\ntiers:\n  t:\n    limits:\n      - {{ name: l, algorithm: sliding_log, requests: {LIMIT}, window: 1d }}\n"
    );
    let mut engines = Vec::new();
    for _ in 0..3 {
        engines.push(Arc::new(engine(&cluster, &yaml).await));
    }
    let admitted = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for engine in &engines {
        for _ in 0..CLIENTS_PER_ENGINE {
            let (engine, admitted) = (engine.clone(), admitted.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..CHECKS_PER_CLIENT {
                    if check(&engine, CheckRequest::new("one subject", "/x"))
                        .await
                        .allowed
                    {
                        admitted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(admitted.load(Ordering::Relaxed), LIMIT);
    let d = check(&engines[0], CheckRequest::new("one subject", "/x")).await;
    assert!(!d.allowed);
    assert_eq!(d.remaining, Some(0));
}
