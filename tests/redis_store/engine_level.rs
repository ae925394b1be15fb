//! The engine over Redis with the shipped example policy: what lands in Redis (no raw
//! identifier, a TTL on every key but the tier store), the tier store, and the same decisions
//! as on the memory store.

use crate::common::EXAMPLE_POLICY;
use crate::common::redis::RedisServer;
use crate::reference::{ManualExpiry, Reference};
use crate::support::*;
use ratewarden::clock::ManualClock;
use ratewarden::engine::{
    CheckRequest, Cost, Decision, Engine, Reason, SubjectHasher, SubjectStanding,
};
use ratewarden::limit::Algorithm;
use ratewarden::limit::Limit;
use ratewarden::policy::Policy;
use ratewarden::store::{MemoryStore, Store, TIER_STORE_TTL, TIER_TTL_REFRESH};
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

/// Every limit of the policy by its store id (`t:free:hourly`).
fn limits_by_id(policy: &Policy) -> HashMap<String, Limit> {
    let tiers = policy.tiers.iter().flat_map(|t| &t.limits);
    let rules = policy
        .endpoints
        .iter()
        .chain([&policy.default_endpoint])
        .flat_map(|r| &r.limits);
    tiers
        .chain(rules)
        .map(|l| (l.id.clone(), l.clone()))
        .collect()
}

/// The smallest scale the example policy can put on a limit: its `high_factor` (0.5) times its
/// anomaly `factor` (0.1).
const SLOWEST_SCALE: f64 = 0.05;

/// How long a limit's state can matter after a request: a window, two for `sliding_window`
/// (the previous window weighs on the next), a full refill for GCRA at scale 1 (its state is a
/// time), and a full refill at the slowest scale for a token bucket (its usage refills at the
/// rate in force when it is next checked).
fn longest_life_ms(limit: &Limit) -> u64 {
    let rate = limit.base_rate();
    let micros = match rate.algorithm {
        Algorithm::SlidingLog | Algorithm::FixedWindow => rate.window,
        Algorithm::SlidingWindow => 2 * rate.window,
        Algorithm::Gcra => rate.burst * rate.window.div_ceil(rate.requests),
        Algorithm::TokenBucket => {
            let slowest = limit.rate(SLOWEST_SCALE).requests.max(1);
            rate.burst * rate.window.div_ceil(slowest)
        }
    };
    micros.div_ceil(1000)
}

/// Users, phone numbers and addresses, and the forms in which a careless store would keep them.
const USERS: [&str; 3] = ["alice@example.com", "+15551234567", "Bob.Smith@Example.org"];
const IPS: [&str; 3] = ["203.0.113.7", "2001:db8::1", "::ffff:198.51.100.23"];

fn forbidden_forms() -> Vec<String> {
    let mut forms: Vec<String> = [
        "alice@example.com",
        "alice",
        "example.com",
        "+15551234567",
        "15551234567",
        "5551234567",
        "bob.smith",
        "example.org",
        "203.0.113.7",
        "7.113.0.203",
        "203.000.113.007",
        "cb007107",   // 203.0.113.7 in hex
        "3405803783", // ... as a 32-bit number
        "2001:db8",
        "2001:0db8",
        "20010db8",
        "198.51.100.23",
        "c6336417", // 198.51.100.23 in hex
        "::ffff",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    forms.extend(USERS.iter().map(hex::encode));
    forms
}

/// Drives the engine with the example policy, then reads everything in Redis.
pub async fn privacy_and_ttls() {
    let server = RedisServer::start();
    // The server's own clock: TTLs as in production. The example policy's shortest windows are
    // a minute: start clear of a minute's edge, so no key expires before it is read below.
    crate::common::clear_of_window_edge(Duration::from_secs(60)).await;
    let engine = engine_on(redis_store_server_time(&server, "rw"));
    engine
        .set_stored_tier(USERS[2], Some("pro"))
        .await
        .expect("tier stored");
    for user in USERS {
        for endpoint in ["/api/search", "/api/export", "/sms/send", "/anything"] {
            for tier in [None, Some("enterprise")] {
                for _ in 0..3 {
                    let mut r = CheckRequest::new(user, endpoint);
                    r.tier = tier;
                    decide(&engine, &r).await;
                }
            }
        }
        for address in IPS {
            let mut r = CheckRequest::new(user, "/login");
            r.ip = Some(ip(address));
            decide(&engine, &r).await;
        }
    }
    // Denied requests too: a cost above the burst, and the SMS rule spent.
    let mut r = CheckRequest::new(USERS[1], "/anything");
    r.cost = Cost::new(25).unwrap();
    assert!(!decide(&engine, &r).await.allowed);
    for _ in 0..10 {
        decide(&engine, &CheckRequest::new(USERS[1], "/sms/send")).await;
    }
    assert!(
        !decide(&engine, &CheckRequest::new(USERS[1], "/sms/send"))
            .await
            .allowed
    );

    let keys = server.keys();
    let forms = forbidden_forms();
    let limits = limits_by_id(&policy());
    let mut algorithms_seen = std::collections::BTreeSet::new();
    assert!(keys.len() > 20, "{keys:?}");
    for key in &keys {
        let kind = server.cli(&["TYPE", key]).trim().to_owned();
        if kind == "none" {
            // Expired since KEYS listed it (a GCRA or token bucket key lives only until its
            // state has decayed, a second or so here): it had a TTL.
            continue;
        }
        let value = match kind.as_str() {
            "string" => server.cli(&["GET", key]),
            "zset" => server.cli(&["ZRANGE", key, "0", "-1", "WITHSCORES"]),
            "hash" => server.cli(&["HGETALL", key]),
            other => panic!("{key} is a {other}"),
        };
        for form in &forms {
            let form = form.to_lowercase();
            assert!(
                !key.to_lowercase().contains(&form),
                "key {key} contains {form}"
            );
            assert!(
                !value.to_lowercase().contains(&form),
                "{key} = {value:?} contains {form}"
            );
        }
        let ttl: i64 = server
            .cli(&["PTTL", key])
            .trim()
            .parse()
            .expect("PTTL answers a number");
        if ttl == -2 {
            continue; // Expired between TYPE and PTTL, as above.
        }
        if key == "rw:tiers" {
            // Operator data: a long TTL, refreshed by changes and (once a minute) lookups.
            assert_eq!(kind, "hash");
            let long = TIER_STORE_TTL.as_millis() as i64;
            assert!(ttl > long - 60_000 && ttl <= long, "{key}: PTTL {ttl}");
            continue;
        }
        // rw:{<32 hex digits>}:<limit id>, and # for a sliding log's running total.
        let rest = key
            .strip_prefix("rw:{")
            .unwrap_or_else(|| panic!("unexpected key {key}"));
        let (hash, id) = rest
            .split_once("}:")
            .unwrap_or_else(|| panic!("unexpected key {key}"));
        assert!(
            hash.len() == 32 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
            "{key}"
        );
        let (id, total) = id.strip_suffix('#').map_or((id, false), |id| (id, true));
        let limit = limits
            .get(id)
            .unwrap_or_else(|| panic!("{key}: no limit {id}"));
        assert_eq!(
            total,
            kind == "string" && limit.algorithm == Algorithm::SlidingLog,
            "{key}"
        );
        algorithms_seen.insert(limit.algorithm.name());
        assert!(ttl > 0, "{key} has no TTL ({ttl})");
        let bound = longest_life_ms(limit);
        assert!(
            ttl as u64 <= bound + 2,
            "{key}: PTTL {ttl} ms, longer than its state can matter ({bound} ms)"
        );
        if limit.algorithm != Algorithm::TokenBucket {
            assert!(
                ttl as u64 <= 2 * limit.window_micros() / 1000 + 2,
                "{key}: PTTL {ttl} ms"
            );
        }
    }
    assert_eq!(algorithms_seen.len(), 5, "{algorithms_seen:?}");
    assert!(keys.iter().any(|k| k == "rw:tiers"), "{keys:?}");
}

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
