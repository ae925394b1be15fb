//! The engine over Redis with the shipped example policy: what lands in Redis (no raw
//! identifier, a TTL on every key but the tier store), the tier store, and the same decisions
//! as on the memory store.
//!
//! Here: an engine on any store with the example policy, and the decision tests;
//! `engine_level/` holds what lands in Redis: `privacy` (no raw identifier, TTLs) and `tiers`
//! (the tier store).

use crate::common::EXAMPLE_POLICY;
use crate::common::redis::RedisServer;
use crate::reference::{ManualExpiry, Reference};
use crate::support::*;
use ratewarden::clock::ManualClock;
use ratewarden::engine::{
    CheckRequest, Cost, Decision, Engine, Reason, SubjectHasher, SubjectStanding,
};
use ratewarden::policy::Policy;
use ratewarden::store::{MemoryStore, Store};
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const SECRET: &str = "redis_store test secret";

pub fn policy() -> Policy {
    Policy::from_yaml(EXAMPLE_POLICY, Path::new(".")).expect("the example policy is valid")
}

pub fn engine_on<S: Store>(store: S) -> Engine<S> {
    Engine::new(policy(), store, SubjectHasher::from_secret(SECRET))
}

pub async fn decide<S: Store>(engine: &Engine<S>, request: &CheckRequest<'_>) -> Decision {
    let d = engine
        .check(request)
        .await
        .expect("the request is decidable");
    assert!(!d.degraded, "the store answered: {request:?}");
    d
}

fn ip(text: &str) -> IpAddr {
    text.parse().expect("an IP address")
}

#[path = "engine_level/privacy.rs"]
mod privacy;
#[path = "engine_level/tiers.rs"]
mod tiers;

pub use privacy::privacy_and_ttls;
pub use tiers::{a_failed_tier_lookup_is_the_default_tier_and_counted, tier_store};

/// What a client sees of a decision.
#[derive(Debug, PartialEq)]
struct Seen {
    allowed: bool,
    limit: Option<u64>,
    remaining: Option<u64>,
    reset_after: u64,
    retry_after: Option<u64>,
    reason: Option<Reason>,
    shadow: bool,
    scale: f64,
    abuse_score: Option<f64>,
    cost_exceeds_limit: bool,
    near_limit: bool,
    headline: Option<usize>,
    violated: Vec<usize>,
    shadow_violated: Vec<usize>,
    tier: String,
}

impl Seen {
    fn of(d: &Decision) -> Seen {
        Seen {
            allowed: d.allowed,
            limit: d.limit,
            remaining: d.remaining,
            reset_after: d.reset_after,
            retry_after: d.retry_after,
            reason: d.reason,
            shadow: d.shadow,
            scale: d.scale,
            abuse_score: d.abuse_score,
            cost_exceeds_limit: d.cost_exceeds_limit,
            near_limit: d.near_limit,
            headline: d.headline,
            violated: d.violated.to_vec(),
            shadow_violated: d.shadow_violated.to_vec(),
            tier: d.resolved.tier().name.clone(),
        }
    }
}

/// The same requests through an engine on memory and one on Redis, one manual clock: the same
/// decisions, reasons included (burst, load under a load factor, anomaly for a flagged subject).
pub async fn engine_decides_alike() {
    let server = RedisServer::start();
    let clock = ManualClock::starting_at(crate::common::START);
    let memory = engine_on(MemoryStore::new(Arc::new(clock.clone()), 1_000_000));
    let redis = engine_on(redis_store(&server, "rw", &clock));
    let mut conn = connection(&server).await;
    let (mut reference, mut expiry) = (Reference::default(), ManualExpiry::default());
    for engine in [memory.scale_factors(), redis.scale_factors()] {
        let standing = SubjectStanding {
            abuse_score: 0.93,
            held_until: 0,
            novel: false,
        };
        engine.set_standing(memory.hasher().user("mallory"), standing);
    }
    let set_load = |factor: f64| {
        memory.scale_factors().set_load_factor(factor);
        redis.scale_factors().set_load_factor(factor);
    };

    let users = ["alice", "bob", "mallory", "+15551234567", "carol"];
    let endpoints = [
        "/api/search",
        "/api/export",
        "/sms/send",
        "/login",
        "/anything",
    ];
    let addresses = ["203.0.113.7", "2001:db8::1", "198.51.100.1"];
    let mut reasons: HashMap<&str, usize> = HashMap::new();
    let mut rng = Rng::new(7);
    // First a script that reaches every reason, then random traffic.
    let mut script: Vec<(&str, &str, u64, f64)> = Vec::new();
    script.extend((0..22).map(|_| ("alice", "/anything", 1, 1.0)));
    script.extend((0..4).map(|_| ("dave", "/api/export", 1, 0.5)));
    script.extend((0..3).map(|_| ("mallory", "/api/search", 1, 1.0)));
    script.push(("carol", "/anything", 21, 1.0));
    for step in 0..400 {
        let (user, endpoint, cost, load, tier) = match script.get(step) {
            Some(&(user, endpoint, cost, load)) => (user, endpoint, cost, load, None),
            None => {
                let load = match rng.one_in(15) {
                    true => rng.pick(&[0.5, 1.0, 1.5]),
                    false => memory.scale_factors().load_factor(),
                };
                // Steps of 9 s: every state then decays at least 360 ms (enterprise's
                // emission interval) away from any step, so no Redis key can expire in real
                // time before the test has made it persistent.
                let advance =
                    rng.pick(&[0, 0, 0, 9 * SECOND, 18 * SECOND, 63 * SECOND, 297 * SECOND]);
                clock.set(clock_now(&clock) + advance);
                let cost = rng.pick(&[1, 1, 1, 1, 2, 5, 30]);
                let tier = rng.pick(&[None, None, None, Some("pro"), Some("enterprise")]);
                (rng.pick(&users), rng.pick(&endpoints), cost, load, tier)
            }
        };
        set_load(load);
        let mut r = CheckRequest::new(user, endpoint);
        r.cost = Cost::new(cost).unwrap();
        r.tier = tier;
        if endpoint == "/login" {
            r.ip = Some(ip(rng.pick(&addresses)));
        }
        let now = clock_now(&clock);
        expiry.expire(&mut conn, now).await;
        let started = std::time::Instant::now();
        let (m, d) = (decide(&memory, &r).await, decide(&redis, &r).await);
        assert_eq!(Seen::of(&d), Seen::of(&m), "step {step}: {r:?}");
        *reasons
            .entry(m.reason.map_or("allowed", Reason::label))
            .or_default() += 1;
        // The reference follows the same store requests, to expire Redis keys on the manual
        // clock (their TTLs run in real time).
        let plan = redis.plan_check(&r, None).expect("decidable");
        let (applied, written) = reference.apply(&plan.store_request(false), now);
        assert_eq!(applied.admitted, m.allowed, "step {step}: {r:?}");
        let context = format!("step {step}: {r:?}");
        expiry
            .written(&mut conn, "rw", now, &written, started, &context)
            .await;
        assert_eq!(
            expiry.lost_keys, 0,
            "{context}: a key expired in real time within 360 ms"
        );
    }
    for reason in [Reason::Burst, Reason::Load, Reason::Anomaly, Reason::Quota] {
        assert!(
            reasons.contains_key(reason.label()),
            "{reason:?} never seen: {reasons:?}"
        );
    }
    assert!(reasons["allowed"] > 100, "{reasons:?}");
}

fn clock_now(clock: &ManualClock) -> u64 {
    use ratewarden::clock::Clock;
    clock.now()
}

/// A token bucket of 10 every 10 s, scaled by a load factor that can fall to 0.5.
const SHRINKING: &str = r#"
default_tier: free
tiers:
  free:
    limits: [ { name: bucket, algorithm: token_bucket, requests: 10, window: 10s, burst: 10 } ]
default_endpoint:
  limits: [ { name: endpoint, algorithm: fixed_window, requests: 1000, window: 1h } ]
adaptive:
  load: { high_factor: 0.5 }
  anomaly: { factor: 1 }
"#;

/// The bucket is emptied at scale 1 (refill: one token a second, full in 10 s); then the load
/// factor halves it (5, one token every 2 s). 12 s later it has refilled 6 of the 10 tokens
/// used: 4 are still counted, 1 of 5 is left. A key kept only for the 10 s of a refill at
/// scale 1 would have forgotten them and admitted 5.
pub async fn bucket_usage_survives_a_smaller_scale() {
    let server = RedisServer::start();
    let clock = ManualClock::starting_at(crate::common::START);
    let policy = || Policy::from_yaml(SHRINKING, Path::new(".")).unwrap();
    let hasher = || SubjectHasher::from_secret(SECRET);
    let memory = Engine::new(
        policy(),
        MemoryStore::new(Arc::new(clock.clone()), 1_000),
        hasher(),
    );
    let redis = Engine::new(policy(), redis_store(&server, "rw", &clock), hasher());
    let mut first = CheckRequest::new("erin", "/anything");
    first.cost = Cost::new(10).unwrap();
    let mut second = CheckRequest::new("erin", "/anything");
    second.cost = Cost::new(2).unwrap();
    let d = decide(&memory, &first).await;
    assert!(d.allowed && d.remaining == Some(0), "{d:?}");
    let d = decide(&redis, &first).await;
    assert!(d.allowed && d.remaining == Some(0), "{d:?}");

    // Redis keeps the key for a full refill at the slowest rate (5 per 10 s): 20 s.
    let keys = server.keys();
    let bucket = keys
        .iter()
        .find(|k| k.ends_with(":t:free:bucket"))
        .unwrap_or_else(|| panic!("{keys:?}"));
    let ttl: u64 = server.cli(&["PTTL", bucket]).trim().parse().unwrap();
    assert!((19_000..=20_000).contains(&ttl), "PTTL {ttl} ms");

    clock.advance(Duration::from_secs(12));
    for (name, d) in [
        ("memory", {
            memory.scale_factors().set_load_factor(0.5);
            decide(&memory, &second).await
        }),
        ("redis", {
            redis.scale_factors().set_load_factor(0.5);
            decide(&redis, &second).await
        }),
    ] {
        assert!(!d.allowed, "{name}: {d:?}");
        assert_eq!(d.reason, Some(Reason::Load), "{name}");
        assert_eq!((d.limit, d.remaining), (Some(5), Some(1)), "{name}");
    }
    // One token fits.
    let mut one = CheckRequest::new("erin", "/anything");
    one.cost = Cost::ONE;
    assert!(decide(&memory, &one).await.allowed);
    assert!(decide(&redis, &one).await.allowed);
}
