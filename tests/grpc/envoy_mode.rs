//! envoyproxy/ratelimit configuration mode: the fixtures of `tests/fixtures/envoy/valid`
//! (modelled on envoyproxy/ratelimit's documented examples) with the decisions they must give.
//!
//! This file: which limit a descriptor matches (wildcards, exact values, prefixes, nested paths,
//! `unlimited`, `shadow_mode`, `replaces`, addresses in names); how the matched limit counts is in
//! `envoy_counting`.

use crate::common::START;
use crate::harness::*;
use std::time::Duration;

pub async fn server() -> Server {
    start(policy_with(NATIVE_POLICY, Some(&fixtures().join("valid")))).await
}

/// Seconds left in the epoch-aligned window of `unit_secs` at the test's start.
pub fn left_in(unit_secs: u64) -> i64 {
    let now = START / 1_000_000;
    (unit_secs - now % unit_secs) as i64
}

#[tokio::test]
async fn wildcard_key_limits_each_value_with_statuses_and_headers() {
    let s = server().await;
    let ask = || s.ask(one("edge", &[("remote_address", "203.0.113.7")]));
    for i in 1..=60u32 {
        let r = ask().await;
        assert_eq!(r.overall_code, OK, "request {i}");
        let status = &r.statuses[0];
        assert_eq!(status.code, OK);
        assert_eq!(
            current(status),
            Some((60, unit::MINUTE, "remote_address".to_owned()))
        );
        assert_eq!(status.limit_remaining, 60 - i);
        assert_eq!(reset_secs(status), Some(left_in(60)));
    }
    let over = ask().await;
    assert_eq!(over.overall_code, OVER_LIMIT);
    assert_eq!(over.statuses[0].code, OVER_LIMIT);
    assert_eq!(over.statuses[0].limit_remaining, 0);
    // The same headers as the HTTP API.
    assert_eq!(
        header(&over, "ratelimit-policy"),
        Some("\"remote_address\";q=60;w=60")
    );
    assert_eq!(
        header(&over, "ratelimit"),
        Some(format!("\"remote_address\";r=0;t={}", left_in(60)).as_str())
    );
    assert_eq!(header(&over, "x-ratelimit-limit"), Some("60"));
    assert_eq!(header(&over, "x-ratelimit-remaining"), Some("0"));
    assert_eq!(
        header(&over, "retry-after"),
        Some(left_in(60).to_string().as_str())
    );
    // Another value has its own counter.
    let other = s
        .ask(one("edge", &[("remote_address", "198.51.100.1")]))
        .await;
    assert_eq!(other.overall_code, OK);
    assert_eq!(other.statuses[0].limit_remaining, 59);
    assert!(header(&other, "retry-after").is_none());
    // The next window, aligned to the epoch, starts afresh.
    s.clock.advance(Duration::from_secs(left_in(60) as u64));
    assert_eq!(ask().await.overall_code, OK);
}

#[tokio::test]
async fn an_exact_value_wins_over_the_wildcard_and_zero_blocks() {
    let s = server().await;
    let r = s.ask(one("edge", &[("remote_address", "50.0.0.5")])).await;
    assert_eq!(r.overall_code, OVER_LIMIT);
    assert_eq!(
        current(&r.statuses[0]),
        Some((0, unit::SECOND, "remote_address_".to_owned()))
    );
    // Nothing of a blocked request is consumed, its other descriptors keep their quota.
    let both = s
        .ask(request(
            "edge",
            vec![
                descriptor(&[("tight", "t")]),
                descriptor(&[("remote_address", "50.0.0.5")]),
            ],
        ))
        .await;
    assert_eq!(both.overall_code, OVER_LIMIT);
    assert_eq!(both.statuses[0].code, OK);
    assert_eq!(both.statuses[0].limit_remaining, 1);
    // No headers: the passing limit's `r=1` would read as room, and no wait lets it pass.
    assert!(both.response_headers_to_add.is_empty(), "{both:?}");
    let tight = s.ask(one("edge", &[("tight", "t")])).await;
    assert_eq!(tight.overall_code, OK);
    assert_eq!(tight.statuses[0].limit_remaining, 0);
}

#[tokio::test]
async fn nested_descriptors_match_only_the_whole_path() {
    let s = server().await;
    let search = [("api_key", "key-1"), ("path", "/api/search")];
    for i in 1..=10u32 {
        let r = s.ask(one("edge", &search)).await;
        assert_eq!(r.overall_code, OK);
        assert_eq!(r.statuses[0].limit_remaining, 10 - i);
        assert_eq!(
            current(&r.statuses[0]),
            Some((10, unit::MINUTE, "api_key.path_/api/search".to_owned()))
        );
    }
    assert_eq!(s.ask(one("edge", &search)).await.overall_code, OVER_LIMIT);
    // Another key value, another counter.
    let other = [("api_key", "key-2"), ("path", "/api/search")];
    assert_eq!(s.ask(one("edge", &other)).await.overall_code, OK);
    // Fewer or more entries than the path, or another value: no limit, OK, counted as
    // unmatched.
    for entries in [
        &[("api_key", "key-1")][..],
        &[("api_key", "key-1"), ("path", "/api/other")][..],
        &[("api_key", "key-1"), ("path", "/api/search"), ("x", "y")][..],
        &[("path", "/api/search")][..],
        &[("unknown", "z")][..],
    ] {
        let r = s.ask(one("edge", entries)).await;
        assert_eq!(r.overall_code, OK, "{entries:?}");
        assert_eq!(r.statuses[0].current_limit, None, "{entries:?}");
        assert_eq!(r.statuses[0].limit_remaining, 0);
        assert!(r.response_headers_to_add.is_empty());
    }
    let metrics = s.metrics_text();
    assert!(
        metrics.contains("ratewarden_envoy_unmatched_total{domain=\"edge\"} 5"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_value_prefix_counts_each_value_apart() {
    let s = server().await;
    let at = |path: &'static str| [("api_key", "k"), ("path", path)];
    for _ in 0..4 {
        assert_eq!(s.ask(one("edge", &at("/api/v2/a"))).await.overall_code, OK);
    }
    let r = s.ask(one("edge", &at("/api/v2/a"))).await;
    assert_eq!(r.overall_code, OVER_LIMIT);
    assert_eq!(
        current(&r.statuses[0]).map(|c| c.2),
        Some("api_key.path_/api/v2/*".to_owned())
    );
    assert_eq!(s.ask(one("edge", &at("/api/v2/b"))).await.overall_code, OK);
}

#[tokio::test]
async fn unlimited_always_passes_and_shadow_never_denies() {
    let s = server().await;
    for _ in 0..20 {
        let r = s.ask(one("edge", &[("internal", "batch")])).await;
        assert_eq!(r.overall_code, OK);
        assert_eq!(r.statuses[0].limit_remaining, u32::MAX);
        assert_eq!(r.statuses[0].current_limit, None);
    }
    for _ in 0..10 {
        let r = s.ask(one("edge", &[("header_match", "login")])).await;
        assert_eq!(r.overall_code, OK);
        assert_eq!(r.statuses[0].code, OK);
    }
    let metrics = s.metrics_text();
    assert!(
        metrics.contains(
            "ratewarden_decisions_total{outcome=\"shadow_denied\",rule=\"login\",tier=\"edge\"} 5"
        ),
        "{metrics}"
    );
    // Every call counts once: the 20 unlimited ones and the 5 within the shadow limit too, as
    // allowed with no enforced limit.
    assert!(
        metrics.contains(
            "ratewarden_decisions_total{outcome=\"allowed\",rule=\"none\",tier=\"edge\"} 25"
        ),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_limit_of_zero_in_shadow_mode_passes_and_is_counted_as_shadow_denied() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("edge.yaml"),
        "domain: edge\ndescriptors:\n  - key: header_match\n    value: block-me\n    shadow_mode: true\n    rate_limit: { unit: second, requests_per_unit: 0, name: trial_block }\n  - key: remote_address\n    rate_limit: { unit: minute, requests_per_unit: 60 }\n",
    )
    .unwrap();
    let s = start(policy_with(NATIVE_POLICY, Some(dir.path()))).await;
    for _ in 0..3 {
        let r = s.ask(one("edge", &[("header_match", "block-me")])).await;
        assert_eq!(r.overall_code, OK);
        assert_eq!(r.statuses[0].code, OK);
        // Not the unlimited marker: a shadow answer shows no limit, and nothing remains.
        assert_eq!(r.statuses[0].limit_remaining, 0);
        assert_eq!(r.statuses[0].current_limit, None);
    }
    // Beside a limit that passes, the call still passes and counts as shadow-denied: 4 calls.
    let both = request(
        "edge",
        vec![
            descriptor(&[("header_match", "block-me")]),
            descriptor(&[("remote_address", "192.0.2.9")]),
        ],
    );
    let r = s.ask(both).await;
    assert_eq!(r.overall_code, OK);
    assert_eq!(r.statuses[1].limit_remaining, 59);
    let metrics = s.metrics_text();
    assert!(
        metrics.contains(
            "ratewarden_decisions_total{outcome=\"shadow_denied\",rule=\"trial_block\",tier=\"edge\"} 4"
        ),
        "{metrics}"
    );
}

#[tokio::test]
async fn replaces_drops_the_named_limit_when_both_apply() {
    let s = server().await;
    let both = || {
        request(
            "plans",
            vec![
                descriptor(&[("tenant", "acme")]),
                descriptor(&[("plan", "premium")]),
            ],
        )
    };
    for i in 1..=5u32 {
        let r = s.ask(both()).await;
        assert_eq!(r.overall_code, OK, "request {i}");
        assert_eq!(r.statuses[0].current_limit, None);
        assert_eq!(r.statuses[1].limit_remaining, 5 - i);
    }
    assert_eq!(s.ask(both()).await.overall_code, OVER_LIMIT);
    // Alone, the tenant limit applies (and was never consumed above).
    let alone = s.ask(one("plans", &[("tenant", "acme")])).await;
    assert_eq!(alone.overall_code, OK);
    assert_eq!(
        current(&alone.statuses[0]),
        Some((1, unit::MINUTE, "per_tenant".to_owned()))
    );
    assert_eq!(
        s.ask(one("plans", &[("tenant", "acme")]))
            .await
            .overall_code,
        OVER_LIMIT
    );
}

#[tokio::test]
async fn nested_and_flat_limits_of_the_messaging_example() {
    let s = server().await;
    let marketing = [("message_type", "marketing"), ("to_number", "+15550001")];
    let any = [("to_number", "+15550001")];
    for _ in 0..5 {
        let r = s
            .ask(request(
                "messaging",
                vec![descriptor(&marketing), descriptor(&any)],
            ))
            .await;
        assert_eq!(r.overall_code, OK);
    }
    let r = s
        .ask(request(
            "messaging",
            vec![descriptor(&marketing), descriptor(&any)],
        ))
        .await;
    assert_eq!(r.overall_code, OVER_LIMIT);
    assert_eq!(r.statuses[0].code, OVER_LIMIT);
    // The daily cap passes and shows its quota unconsumed: 5 used of 100.
    assert_eq!(r.statuses[1].code, OK);
    assert_eq!(r.statuses[1].limit_remaining, 95);
    assert_eq!(
        current(&r.statuses[1]),
        Some((100, unit::DAY, "to_number".to_owned()))
    );
    assert_eq!(reset_secs(&r.statuses[1]), Some(left_in(86_400)));
    // Capitals in units are read as envoyproxy/ratelimit reads them.
    let db = s.ask(one("databases", &[("database", "default")])).await;
    assert_eq!(
        current(&db.statuses[0]),
        Some((50, unit::SECOND, "database_default".to_owned()))
    );
}

#[tokio::test]
async fn unnamed_limits_show_addresses_as_underscores_and_zero_denies_every_request() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("addresses.yaml"),
        r#"
domain: addresses
descriptors:
  - key: client
    value: 2001:db8::1
    descriptors:
      - key: path
        value: /pay
        rate_limit: { unit: minute, requests_per_unit: 3 }
  - key: client
    value: 192.0.2.1
    rate_limit: { unit: minute, requests_per_unit: 0 }
  - key: client
    value: office
    rate_limit: { unit: minute, requests_per_unit: 2 }
"#,
    )
    .unwrap();
    let s = start(policy_with(NATIVE_POLICY, Some(dir.path()))).await;
    let r = s
        .ask(one(
            "addresses",
            &[("client", "2001:db8::1"), ("path", "/pay")],
        ))
        .await;
    assert_eq!(r.overall_code, OK);
    assert_eq!(
        current(&r.statuses[0]),
        Some((3, unit::MINUTE, "client_.path_/pay".to_owned()))
    );
    // A value that is no address is kept.
    let r = s.ask(one("addresses", &[("client", "office")])).await;
    assert_eq!(
        current(&r.statuses[0]),
        Some((2, unit::MINUTE, "client_office".to_owned()))
    );
    // requests_per_unit: 0 denies every request of the descriptor, the first one included.
    for _ in 0..3 {
        let r = s.ask(one("addresses", &[("client", "192.0.2.1")])).await;
        assert_eq!(r.overall_code, OVER_LIMIT);
        assert_eq!(r.statuses[0].code, OVER_LIMIT);
        assert_eq!(
            current(&r.statuses[0]),
            Some((0, unit::MINUTE, "client_".to_owned()))
        );
    }
    // Each blocked call counts once, denied by its limit of 0, with reason quota.
    let metrics = s.metrics_text();
    for line in [
        "ratewarden_decisions_total{outcome=\"denied\",rule=\"client_\",tier=\"addresses\"} 3",
        "ratewarden_rejections_total{reason=\"quota\",rule=\"client_\",tier=\"addresses\"} 3",
    ] {
        assert!(metrics.contains(line), "no {line} in {metrics}");
    }
}
