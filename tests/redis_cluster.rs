//! The Redis store on a real 3-master Redis Cluster: keys spread over every master, decisions
//! exact per subject, batches across nodes, requests that mix a user and an IP subject
//! (applied subject by subject, refunded when a later subject denies), readiness, and three
//! daemons x 64 clients admitting exactly the limit.

mod common;

use common::redis::RedisCluster;
use ratewarden::engine::{CheckRequest, Decision, Engine, SubjectHasher};
use ratewarden::limit::Algorithm;
use ratewarden::limit::KeyHash;
use ratewarden::policy::Policy;
use ratewarden::store::{RedisStore, Store, TIER_STORE_TTL};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing_subscriber::util::SubscriberInitExt;

const PREFIX: &str = "rw";
const TIMEOUT: Duration = Duration::from_millis(500);

async fn engine(cluster: &RedisCluster, yaml: &str) -> Engine<RedisStore> {
    let policy = Policy::from_yaml(yaml, Path::new(".")).expect("test policy is valid");
    let store = RedisStore::connect_cluster(&cluster.node_urls(), PREFIX, TIMEOUT)
        .await
        .expect("cluster connection");
    Engine::new(policy, store, SubjectHasher::from_secret("test secret"))
}

async fn check(engine: &Engine<RedisStore>, request: CheckRequest<'_>) -> Decision {
    let d = engine.check(&request).await.expect("request is decidable");
    assert!(!d.degraded, "the cluster answered: {request:?}");
    d
}

/// The index in `cluster.nodes` of the master that serves `key`'s slot.
fn node_of(cluster: &RedisCluster, key: &str) -> usize {
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
fn node_of_subject(cluster: &RedisCluster, subject: KeyHash) -> usize {
    node_of(cluster, &format!("{{{subject}}}"))
}

fn fixed_window_policy(requests: u64, window: &str) -> String {
    format!(
        "default_tier: t\ntiers:\n  t:\n    limits:\n      - {{ name: l, algorithm: fixed_window, requests: {requests}, window: {window} }}\n"
    )
}

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

/// A `tracing` writer that keeps what is logged, to see the store's warnings.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The request mixes the user's tier limit and an IP-keyed endpoint limit, on two masters.
/// Where the IP limit denies, the user's tier usage is refunded; where the tier denies, the
/// IP limit is not consumed. For every algorithm of the tier limit (the one refunded).
// One thread: the captured log is the thread's default subscriber.
#[tokio::test(flavor = "current_thread")]
async fn a_user_and_an_ip_on_two_masters_are_all_or_nothing() {
    const TIER: u64 = 100;
    const SMALL_TIER: u64 = 2;
    const LOGIN: u64 = 3;
    const SIGNUP: u64 = 10;
    const DENIED: u64 = 5;
    let log = Captured::default();
    let writer = log.clone();
    let _guard = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .set_default();

    let cluster = RedisCluster::start(3);
    for (a, algorithm) in Algorithm::ALL.into_iter().enumerate() {
        let yaml = format!(
            "default_tier: big\n\
             tiers:\n  \
               big:\n    limits: [ {{ name: tier, algorithm: {algorithm}, requests: {TIER}, window: 1h }} ]\n  \
               small:\n    limits: [ {{ name: tier, algorithm: {algorithm}, requests: {SMALL_TIER}, window: 1h }} ]\n\
             endpoints:\n  \
               - path: /login\n    key: ip\n    limits: [ {{ name: login, algorithm: fixed_window, requests: {LOGIN}, window: 1h }} ]\n  \
               - path: /signup\n    key: ip\n    limits: [ {{ name: signup, algorithm: {algorithm}, requests: {SIGNUP}, window: 1h }} ]\n"
        );
        let engine = engine(&cluster, &yaml).await;
        common::clear_of_window_edge(Duration::from_secs(3600)).await;

        // A user and an address whose keys live on different masters.
        let pick = |tag: &str, ip: IpAddr| {
            let ip_node = node_of_subject(&cluster, engine.hasher().ip(ip));
            (0..)
                .map(|i| format!("{tag}-{algorithm}-{i}"))
                .find(|u| node_of_subject(&cluster, engine.hasher().user(u)) != ip_node)
                .unwrap()
        };

        // The IP limit denies: the tier usage of the denied requests is given back.
        let ip: IpAddr = format!("10.0.{a}.1").parse().unwrap();
        let user = pick("refunded", ip);
        let login = CheckRequest {
            ip: Some(ip),
            ..CheckRequest::new(&user, "/login")
        };
        for n in 1..=LOGIN {
            let d = check(&engine, login.clone()).await;
            assert!(d.allowed, "{algorithm}: login #{n}");
        }
        for n in 1..=DENIED {
            let d = check(&engine, login.clone()).await;
            assert!(!d.allowed, "{algorithm}: login #{} after the limit", n);
            assert_eq!(
                d.violated_names().collect::<Vec<_>>(),
                ["login"],
                "{algorithm}"
            );
        }
        let view = engine
            .dry_run(&engine.plan_check(&login, None).unwrap())
            .await
            .unwrap();
        assert_eq!(view.checks.len(), 2);
        assert_eq!(
            view.checks[0].outcome.remaining,
            TIER - LOGIN - 1,
            "{algorithm}: the tier counts only the {LOGIN} admitted requests"
        );
        assert!(!view.checks[1].outcome.allowed && view.checks[1].outcome.remaining == 0);
        // The same from a real request that only the tier limit applies to.
        let d = check(&engine, CheckRequest::new(&user, "/elsewhere")).await;
        assert!(d.allowed);
        assert_eq!(d.remaining, Some(TIER - LOGIN - 1), "{algorithm}");
        // Another address from the same user still passes: the user was not charged.
        let other_ip: IpAddr = format!("10.1.{a}.1").parse().unwrap();
        let d = check(
            &engine,
            CheckRequest {
                ip: Some(other_ip),
                ..CheckRequest::new(&user, "/login")
            },
        )
        .await;
        assert!(d.allowed, "{algorithm}");

        // The tier denies: the IP limit is not consumed.
        let ip: IpAddr = format!("10.2.{a}.1").parse().unwrap();
        let user = pick("spent", ip);
        let signup = CheckRequest {
            ip: Some(ip),
            tier: Some("small"),
            ..CheckRequest::new(&user, "/signup")
        };
        for n in 1..=SMALL_TIER {
            assert!(
                check(&engine, signup.clone()).await.allowed,
                "{algorithm}: signup #{n}"
            );
        }
        for _ in 0..DENIED {
            let d = check(&engine, signup.clone()).await;
            assert!(!d.allowed, "{algorithm}");
            assert_eq!(
                d.violated_names().collect::<Vec<_>>(),
                ["tier"],
                "{algorithm}"
            );
            assert!(d.retry_after.is_some());
        }
        let view = engine
            .dry_run(&engine.plan_check(&signup, None).unwrap())
            .await
            .unwrap();
        assert!(!view.checks[0].outcome.allowed, "{algorithm}");
        assert_eq!(
            view.checks[1].outcome.remaining,
            SIGNUP - SMALL_TIER - 1,
            "{algorithm}: the address counts only the {SMALL_TIER} admitted requests"
        );
        // Another user behind that address has what the first one did not use.
        let d = check(
            &engine,
            CheckRequest {
                ip: Some(ip),
                ..CheckRequest::new("someone else", "/signup")
            },
        )
        .await;
        assert!(d.allowed, "{algorithm}");
        assert_eq!(d.remaining, Some(SIGNUP - SMALL_TIER - 1), "{algorithm}");
    }
    let log = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    assert!(!log.contains("could not refund"), "refunds succeed:\n{log}");
}

#[tokio::test]
async fn ping_answers_on_the_cluster_and_fails_without_a_master() {
    let mut cluster = RedisCluster::start(3);
    let engine = engine(&cluster, &fixed_window_policy(5, "1m")).await;
    engine.store().ping().await.expect("every master answers");
    assert!(
        check(&engine, CheckRequest::new("pinged", "/x"))
            .await
            .allowed
    );
    // A master gone (no replica to take over): not ready.
    // A user on a master that stays, and one on the master that goes.
    let user_on = |node: bool| {
        (0..)
            .map(|i| format!("after-{i}"))
            .find(|u| (node_of_subject(&cluster, engine.hasher().user(u)) == 1) == node)
            .unwrap()
    };
    let (live, dead) = (user_on(false), user_on(true));
    cluster.nodes[1].kill();
    // At once: the live master's subjects are still decided, the dead one's are degraded.
    assert!(
        !check(&engine, CheckRequest::new(&live, "/x"))
            .await
            .degraded
    );
    assert!(
        engine
            .check(&CheckRequest::new(&dead, "/x"))
            .await
            .unwrap()
            .degraded
    );
    // Once the others mark it failed (cluster-node-timeout is 2 s), the store is not ready...
    let started = Instant::now();
    loop {
        let call = Instant::now();
        let result = engine.store().ping().await;
        assert!(
            call.elapsed() < Duration::from_secs(2),
            "the ping keeps its deadline: {:?}",
            call.elapsed()
        );
        if result.is_err() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "still ready with a master down"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // ...and rightly so: a cluster that lost slots refuses every command (CLUSTERDOWN).
    assert!(
        engine
            .check(&CheckRequest::new(&live, "/x"))
            .await
            .unwrap()
            .degraded
    );
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
