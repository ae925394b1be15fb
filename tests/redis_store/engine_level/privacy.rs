//! No raw identifier in Redis and a TTL on every key: the engine with the example policy drives
//! users, phone numbers and addresses through every rule, then every key and value is read back
//! and searched for the forms a careless store would keep them in.

use super::{decide, engine_on, ip, policy};
use crate::common::redis::RedisServer;
use crate::support::*;
use ratewarden::engine::{CheckRequest, Cost};
use ratewarden::limit::Algorithm;
use ratewarden::limit::Limit;
use ratewarden::policy::Policy;
use ratewarden::store::TIER_STORE_TTL;
use std::collections::HashMap;
use std::time::Duration;

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
