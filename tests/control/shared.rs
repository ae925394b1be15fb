//! Two daemons' control loops on one real Redis: one holds the lease and scores, the other
//! adopts its standings; both see the same features for a subject whose traffic they split, and
//! count the same novel subjects.
//! Every key the control loop writes has a TTL. With no model, the loop sends Redis nothing.
//! A flushed script cache, on one Redis or on every node of a cluster, is no outage.

use super::cycle::Scripted;
use crate::common::START;
use crate::common::redis::{RedisCluster, RedisServer};
use ratewarden::clock::ManualClock;
use ratewarden::control::{ControlLoop, ModelSlot};
use ratewarden::engine::{CheckRequest, Engine, Outcome, SubjectHasher};
use ratewarden::policy::Policy;
use ratewarden::store::{Backend, RedisStore};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub(super) const POLICY: &str = r#"
default_tier: free
tiers:
  free:
    limits: [ { name: minute, algorithm: sliding_window, requests: 1000, window: 1m } ]
adaptive:
  interval: 1s
  anomaly: { window: 1m, min_requests: 5 }
"#;

/// One daemon's engine and control loop on `store`, with the shipped model when `model` says.
pub(super) fn daemon_on(
    store: RedisStore,
    yaml: &str,
    clock: &ManualClock,
    model: bool,
) -> (Arc<Engine<Backend>>, ControlLoop) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let policy = Policy::from_yaml(yaml, root).unwrap();
    let engine = Arc::new(
        Engine::new(
            policy,
            Backend::Redis(store.with_clock(Arc::new(clock.clone()))),
            SubjectHasher::from_secret("fleet"),
        )
        .with_clock(Arc::new(clock.clone())),
    );
    let slot = Arc::new(ModelSlot::new(engine.metrics().clone()));
    if model {
        slot.load(Some(&root.join("models/abuse.json")))
            .expect("the shipped model");
    }
    let control = ControlLoop::new(engine.clone(), slot, Box::new(Scripted(Default::default())));
    (engine, control)
}

/// A daemon with the shipped model: fleet mode shares activity only when a model reads it.
fn daemon(server: &RedisServer, clock: &ManualClock) -> (Arc<Engine<Backend>>, ControlLoop) {
    let store = RedisStore::connect(&server.url(), "rw", Duration::from_secs(2)).unwrap();
    daemon_on(store, POLICY, clock, true)
}

pub(super) async fn send(engine: &Engine<Backend>, user: &str, endpoint: &str, ip: &str, n: usize) {
    for _ in 0..n {
        let mut request = CheckRequest::new(user, endpoint);
        request.ip = Some(ip.parse().unwrap());
        engine.check(&request).await.unwrap();
    }
}

#[tokio::test]
async fn two_daemons_agree_on_a_subjects_features_within_two_intervals() {
    let server = RedisServer::start();
    let clock = ManualClock::starting_at(START);
    let (a, mut control_a) = daemon(&server, &clock);
    let (b, mut control_b) = daemon(&server, &clock);
    let carol = a.hasher().user("carol");

    send(&a, "carol", "/one", "198.51.100.1", 10).await;
    send(&b, "carol", "/two", "198.51.100.2", 6).await;
    clock.advance(Duration::from_secs(1));
    assert!(
        control_a.cycle().await.leader,
        "the first to ask takes the lease"
    );
    assert!(!control_b.cycle().await.leader, "the other follows");
    clock.advance(Duration::from_secs(1));
    control_a.cycle().await;
    control_b.cycle().await;

    let seen_a = a
        .scale_factors()
        .observed(carol)
        .expect("the leader sees carol");
    let seen_b = b
        .scale_factors()
        .observed(carol)
        .expect("the follower sees carol");
    assert_eq!(seen_a, seen_b);
    assert_eq!(seen_a.requests, 16);
    assert_eq!(seen_a.features.endpoints_per_request, 2.0 / 16.0);
    assert_eq!(seen_a.features.ips_per_request, 2.0 / 16.0);

    // The follower takes over when the leader stops renewing its lease (3 intervals).
    clock.advance(Duration::from_secs(1));
    tokio::time::sleep(Duration::from_millis(3100)).await;
    assert!(control_b.cycle().await.leader, "the lease expired: b leads");

    // No key without a TTL, and no raw id or address in any key.
    for key in server.keys() {
        let ttl: i64 = server.cli(&["PTTL", &key]).trim().parse().unwrap();
        assert!(ttl > 0, "{key} has no TTL ({ttl})");
        for raw in ["carol", "198.51.100", "/one", "/two"] {
            assert!(!key.contains(raw), "{key} contains {raw}");
        }
    }
}

#[tokio::test]
async fn the_fleet_state_works_on_a_redis_cluster_too() {
    use crate::common::redis::RedisCluster;
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let cluster = RedisCluster::start(3);
    let clock = ManualClock::starting_at(START);
    let mut daemons = Vec::new();
    for _ in 0..2 {
        let store = RedisStore::connect_cluster(&cluster.node_urls(), "rw", Duration::from_secs(2))
            .await
            .unwrap();
        daemons.push(daemon_on(store, POLICY, &clock, true));
    }
    // Subjects land in different slots (their hashes are the hash tags).
    let users: Vec<String> = (0..20).map(|i| format!("user-{i}")).collect();
    for (i, user) in users.iter().enumerate() {
        send(&daemons[i % 2].0, user, "/a", "192.0.2.1", 3).await;
        send(&daemons[(i + 1) % 2].0, user, "/b", "192.0.2.2", 2).await;
    }
    for _ in 0..2 {
        clock.advance(Duration::from_secs(1));
        for (_, control) in &mut daemons {
            control.cycle().await;
        }
    }
    for user in &users {
        let subject = daemons[0].0.hasher().user(user);
        let seen: Vec<_> = daemons
            .iter()
            .map(|(engine, _)| engine.scale_factors().observed(subject))
            .collect();
        assert_eq!(seen[0], seen[1], "{user}");
        let observed = seen[0].expect("seen");
        assert_eq!(observed.requests, 5, "{user}");
        assert_eq!(observed.features.endpoints_per_request, 2.0 / 5.0, "{user}");
    }
}

/// Two daemons with the shipped model on the example policy, sharing `server`.
fn two_daemons_on_the_example_policy(
    server: &RedisServer,
    clock: &ManualClock,
) -> Vec<(Arc<Engine<Backend>>, ControlLoop)> {
    let yaml =
        crate::common::EXAMPLE_POLICY.replace("url: memory://", &format!("url: {}", server.url()));
    (0..2)
        .map(|_| {
            let store = RedisStore::connect(&server.url(), "rw", Duration::from_secs(2)).unwrap();
            daemon_on(store, &yaml, clock, true)
        })
        .collect()
}

#[tokio::test]
async fn two_daemons_agree_on_an_abusers_score_flag_and_scale() {
    let server = RedisServer::start();
    let clock = ManualClock::starting_at(START);
    let mut daemons = two_daemons_on_the_example_policy(&server, &clock);
    // Flags begun and ended as each daemon told of them: the leader tells, a follower does not.
    let mut told = [(0, 0); 2];
    // A credential stuffer twice a second, alternating between the two daemons, each try from
    // another address, its failures reported to the daemon that answered.
    for attempt in 0..30u32 {
        let (engine, _) = &daemons[attempt as usize % 2];
        let mut request = CheckRequest::new("mallory", "/login");
        let ip = format!("10.1.{}.{}", attempt / 200, attempt % 200 + 1);
        request.ip = Some(ip.parse().unwrap());
        if engine.check(&request).await.unwrap().allowed {
            engine.report(&Outcome::new("mallory", "/login", 401));
        }
        clock.advance(Duration::from_millis(500));
        if attempt % 2 == 1 {
            cycle_both(&mut daemons, &mut told).await;
        }
    }
    for _ in 0..2 {
        clock.advance(Duration::from_secs(1));
        cycle_both(&mut daemons, &mut told).await;
    }
    let mallory = daemons[0].0.hasher().user("mallory");
    let standings: Vec<_> = daemons
        .iter()
        .map(|(engine, _)| engine.scale_factors().standing(mallory))
        .collect();
    assert_eq!(standings[0], standings[1], "one verdict");
    let standing = standings[0].expect("scored");
    assert!(
        standing.abuse_score >= 0.8 && standing.held_until > START,
        "{standing:?}"
    );
    for (engine, _) in &daemons {
        let mut request = CheckRequest::new("mallory", "/login");
        request.ip = Some("10.9.9.9".parse().unwrap());
        let decision = engine.check(&request).await.unwrap();
        assert_eq!(decision.scale, 0.1, "both daemons shrink mallory");
    }
    // Quiet past the 30-minute window and the 5-minute hold: the flag ends, told once.
    for _ in 0..40 {
        clock.advance(Duration::from_secs(60));
        cycle_both(&mut daemons, &mut told).await;
    }
    assert_eq!(daemons[0].0.scale_factors().standing(mallory), None);
    let (begun, ended) = (told[0].0 + told[1].0, told[0].1 + told[1].1);
    assert_eq!((begun, ended), (1, 1), "told once in the fleet: {told:?}");
}

/// One control cycle on each daemon, adding the flags each told of to `told`.
async fn cycle_both(
    daemons: &mut [(Arc<Engine<Backend>>, ControlLoop)],
    told: &mut [(usize, usize); 2],
) {
    for ((_, control), told) in daemons.iter_mut().zip(told.iter_mut()) {
        let report = control.cycle().await;
        told.0 += report.begun.len();
        told.1 += report.ended.len();
    }
}

/// The leader scores and the follower adopts its standings: both count the novel subject in
/// `ratewarden_novel_subjects` (the follower counted none, having scored nobody).
#[tokio::test]
async fn a_follower_counts_the_novel_subjects_the_leader_scored() {
    let server = RedisServer::start();
    let clock = ManualClock::starting_at(START);
    let mut daemons = two_daemons_on_the_example_policy(&server, &clock);
    // Past the 10 SMS an hour the example policy allows, each request asks a tenth of it: 600
    // ask 59 hours' worth, past the 46.54 the shipped model saw (its `limit_demand` range).
    for _ in 0..6 {
        send(&daemons[0].0, "pumper", "/sms/send", "10.2.0.1", 100).await;
        clock.advance(Duration::from_secs(1));
    }
    for _ in 0..3 {
        clock.advance(Duration::from_secs(1));
        for (_, control) in &mut daemons {
            control.cycle().await;
        }
    }
    for (engine, _) in &daemons {
        assert_eq!(engine.metrics().novel_subjects.get(), 1);
    }
}

/// `INFO commandstats` as (command, calls), the test's own INFO and CONFIG left out.
pub(super) fn command_calls(server: &RedisServer) -> Vec<(String, u64)> {
    server
        .cli(&["INFO", "commandstats"])
        .lines()
        .filter_map(|line| {
            let (name, stats) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = stats
                .strip_prefix("calls=")?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            Some((name.to_owned(), calls))
        })
        .filter(|(name, _)| name != "info" && !name.starts_with("config"))
        .collect()
}

#[tokio::test]
async fn with_no_model_the_control_loop_sends_redis_nothing() {
    let server = RedisServer::start();
    let clock = ManualClock::starting_at(START);
    let mut daemons = Vec::new();
    for _ in 0..2 {
        let store = RedisStore::connect(&server.url(), "rw", Duration::from_secs(2)).unwrap();
        daemons.push(daemon_on(store, POLICY, &clock, false));
    }
    for round in 0..4 {
        for (i, (engine, _)) in daemons.iter().enumerate() {
            for user in 0..50 {
                send(engine, &format!("user-{user}"), "/a", "192.0.2.1", 1).await;
            }
            send(engine, "carol", &format!("/{round}-{i}"), "198.51.100.1", 5).await;
        }
        // Only decisions so far; the cycles that follow must add no command at all.
        let before = command_calls(&server);
        assert!(before.iter().any(|(name, _)| name == "fcall"), "{before:?}");
        clock.advance(Duration::from_secs(1));
        for (_, control) in &mut daemons {
            let report = control.cycle().await;
            assert!(!report.leader, "no model: nobody leads the fleet");
        }
        assert_eq!(
            command_calls(&server),
            before,
            "round {round}: cycles sent commands"
        );
    }
    // The daemons still report what they saw themselves.
    let carol = daemons[0].0.hasher().user("carol");
    let seen = daemons[0].0.scale_factors().observed(carol).expect("seen");
    assert_eq!(seen.requests, 20);
    for key in server.keys() {
        assert!(
            !key.contains("{control}") && !key.contains(":a:"),
            "fleet key {key}"
        );
    }
}

/// Redis forgetting the control scripts (`SCRIPT FLUSH`, a restart or a failover) costs no
/// cycle: the lease's NOSCRIPT loads them again and the call is retried, with no outage.
#[tokio::test]
async fn a_flushed_script_cache_is_loaded_again_without_an_outage() {
    let server = RedisServer::start();
    let clock = ManualClock::starting_at(START);
    let (engine, control) = daemon(&server, &clock);
    lead_through_flushed_scripts(&engine, control, &clock, &[&server]).await;
}

#[tokio::test]
async fn a_flushed_script_cache_on_a_cluster_is_no_outage_either() {
    let cluster = RedisCluster::start(3);
    let clock = ManualClock::starting_at(START);
    let store = RedisStore::connect_cluster(&cluster.node_urls(), "rw", Duration::from_secs(2))
        .await
        .unwrap();
    let (engine, control) = daemon_on(store, POLICY, &clock, true);
    let nodes: Vec<&RedisServer> = cluster.nodes.iter().collect();
    lead_through_flushed_scripts(&engine, control, &clock, &nodes).await;
}

/// Three cycles, the scripts flushed on every node before the second and the third: each
/// holds the lease, and no outage is recorded (NOSCRIPT runs the script by EVAL at once).
async fn lead_through_flushed_scripts(
    engine: &Engine<Backend>,
    mut control: ControlLoop,
    clock: &ManualClock,
    nodes: &[&RedisServer],
) {
    for round in 0..3 {
        send(engine, "carol", "/a", "192.0.2.1", 5).await;
        if round > 0 {
            for node in nodes {
                assert_eq!(node.cli(&["SCRIPT", "FLUSH"]).trim(), "OK");
            }
        }
        clock.advance(Duration::from_secs(1));
        let report = control.cycle().await;
        assert!(report.leader, "round {round}: the lease was lost");
        assert!(
            !engine.store_outage().is_down(),
            "round {round}: a flushed script cache was taken for an outage"
        );
    }
}
