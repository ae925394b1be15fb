//! envoyproxy/ratelimit configuration mode: the fixtures of `tests/fixtures/envoy/valid`
//! (modelled on envoyproxy/ratelimit's documented examples) with the decisions they must give.

use crate::common::START;
use crate::harness::*;
use ratewarden::engine::SubjectStanding;
use std::time::Duration;

async fn server() -> Server {
    start(policy_with(NATIVE_POLICY, Some(&fixtures().join("valid")))).await
}

/// Seconds left in the epoch-aligned window of `unit_secs` at the test's start.
fn left_in(unit_secs: u64) -> i64 {
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
    assert!(header(&both, "retry-after").is_none());
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
async fn every_unit_has_its_epoch_aligned_window() {
    let s = server().await;
    for (name, code, secs) in [
        ("second", unit::SECOND, 1),
        ("minute", unit::MINUTE, 60),
        ("hour", unit::HOUR, 3_600),
        ("day", unit::DAY, 86_400),
        ("week", unit::WEEK, 7 * 86_400),
        ("month", unit::MONTH, 30 * 86_400),
        ("year", unit::YEAR, 365 * 86_400),
    ] {
        let r = s.ask(one("units", &[("unit", name)])).await;
        let status = &r.statuses[0];
        assert_eq!(
            current(status).map(|c| (c.0, c.1)),
            Some((3, code)),
            "{name}"
        );
        assert_eq!(reset_secs(status), Some(left_in(secs)), "{name}");
        assert_eq!(
            header(&r, "ratelimit-policy"),
            Some(format!("\"unit_{name}\";q=3;w={secs}").as_str())
        );
    }
}

#[tokio::test]
async fn the_algorithm_key_chooses_another_algorithm() {
    let s = server().await;
    let sliding = || s.ask(one("units", &[("sliding", "x")]));
    assert_eq!(sliding().await.overall_code, OK);
    assert_eq!(sliding().await.overall_code, OK);
    assert_eq!(sliding().await.overall_code, OVER_LIMIT);
    // A fixed window would start afresh at the next minute; a sliding log does not.
    s.clock.advance(Duration::from_secs(left_in(60) as u64));
    assert_eq!(sliding().await.overall_code, OVER_LIMIT);
    s.clock.advance(Duration::from_secs(60));
    assert_eq!(sliding().await.overall_code, OK);
    // GCRA refills continuously: one more every half second.
    let bucket = || s.ask(one("units", &[("bucket", "x")]));
    assert_eq!(bucket().await.overall_code, OK);
    assert_eq!(bucket().await.overall_code, OK);
    assert_eq!(bucket().await.overall_code, OVER_LIMIT);
    s.clock.advance(Duration::from_millis(500));
    assert_eq!(bucket().await.overall_code, OK);
}

#[tokio::test]
async fn load_scaling_applies_unless_adaptive_is_false() {
    let s = server().await;
    s.engine.scale_factors().set_load_factor(0.5);
    let scaled = s.ask(one("units", &[("user", "u")])).await;
    assert_eq!(current(&scaled.statuses[0]).map(|c| c.0), Some(5));
    let exact = s.ask(one("units", &[("exact", "e")])).await;
    assert_eq!(current(&exact.statuses[0]).map(|c| c.0), Some(10));
}

#[tokio::test]
async fn anomaly_scaling_follows_the_subject_entry() {
    let s = server().await;
    let alice = s.engine.hasher().user("alice");
    s.engine.scale_factors().set_standing(
        alice,
        SubjectStanding {
            abuse_score: 0.95,
            held_until: 0,
            novel: false,
        },
    );
    // anomaly.factor defaults to 0.1: 10 becomes 1.
    let r = s.ask(one("units", &[("user", "alice")])).await;
    assert_eq!(current(&r.statuses[0]).map(|c| c.0), Some(1));
    let r = s.ask(one("units", &[("user", "alice")])).await;
    assert_eq!(r.overall_code, OVER_LIMIT);
    let bob = s.ask(one("units", &[("user", "bob")])).await;
    assert_eq!(current(&bob.statuses[0]).map(|c| c.0), Some(10));
}

#[tokio::test]
async fn a_request_limit_overrides_the_configured_one() {
    let s = server().await;
    // type.v3.RateLimitUnit SECOND = 1.
    let overridden = || {
        request(
            "edge",
            vec![with_override(
                descriptor(&[("remote_address", "192.0.2.9")]),
                2,
                1,
            )],
        )
    };
    for remaining in [1, 0] {
        let r = s.ask(overridden()).await;
        assert_eq!(r.overall_code, OK);
        assert_eq!(
            current(&r.statuses[0]),
            Some((2, unit::SECOND, "remote_address".to_owned()))
        );
        assert_eq!(r.statuses[0].limit_remaining, remaining);
    }
    assert_eq!(s.ask(overridden()).await.overall_code, OVER_LIMIT);
    // Even a descriptor that matches nothing is limited by its override.
    let unmatched = request(
        "edge",
        vec![with_override(descriptor(&[("nothing", "x")]), 1, 2)],
    );
    let r = s.ask(unmatched.clone()).await;
    assert_eq!(
        current(&r.statuses[0]),
        Some((1, unit::MINUTE, "override".to_owned()))
    );
    assert_eq!(s.ask(unmatched).await.overall_code, OVER_LIMIT);
}

#[tokio::test]
async fn all_descriptors_pass_together_or_nothing_is_consumed() {
    let s = server().await;
    let pair = || {
        request(
            "edge",
            vec![
                descriptor(&[("remote_address", "203.0.113.50")]),
                descriptor(&[("tight", "pair")]),
            ],
        )
    };
    let first = s.ask(pair()).await;
    assert_eq!(first.overall_code, OK);
    assert_eq!(first.statuses[0].limit_remaining, 59);
    let second = s.ask(pair()).await;
    assert_eq!(second.overall_code, OVER_LIMIT);
    assert_eq!(second.statuses[0].code, OK);
    assert_eq!(second.statuses[0].limit_remaining, 59);
    assert_eq!(second.statuses[1].code, OVER_LIMIT);
    // The headers name the limit with the least remaining, with the request's Retry-After.
    assert_eq!(
        header(&second, "ratelimit-policy"),
        Some("\"tight\";q=1;w=3600")
    );
    assert_eq!(
        header(&second, "retry-after"),
        Some(left_in(3_600).to_string().as_str())
    );
    let alone = s
        .ask(one("edge", &[("remote_address", "203.0.113.50")]))
        .await;
    assert_eq!(alone.statuses[0].limit_remaining, 58);
}

#[tokio::test]
async fn the_same_descriptor_twice_counts_twice() {
    let s = server().await;
    let twice = request(
        "edge",
        vec![
            descriptor(&[("tight", "dup")]),
            descriptor(&[("tight", "dup")]),
        ],
    );
    // A limit of 1 cannot hold both.
    let r = s.ask(twice).await;
    assert_eq!(r.overall_code, OVER_LIMIT);
    assert_eq!(
        s.ask(one("edge", &[("tight", "dup")])).await.overall_code,
        OK
    );
    let ra = request(
        "edge",
        vec![
            descriptor(&[("remote_address", "192.0.2.77")]),
            descriptor(&[("remote_address", "192.0.2.77")]),
        ],
    );
    let r = s.ask(ra).await;
    assert_eq!(r.overall_code, OK);
    assert_eq!(r.statuses[0].limit_remaining, 58);
    assert_eq!(r.statuses[1].limit_remaining, 58);
}

#[tokio::test]
async fn hits_addend_is_the_cost_and_a_descriptor_s_own_wins() {
    let s = server().await;
    let mut r = one("edge", &[("remote_address", "192.0.2.200")]);
    r.hits_addend = 10;
    assert_eq!(s.ask(r.clone()).await.statuses[0].limit_remaining, 50);
    r.descriptors[0].hits_addend =
        Some(envoy_types::pb::google::protobuf::UInt64Value { value: 30 });
    assert_eq!(s.ask(r.clone()).await.statuses[0].limit_remaining, 20);
    r.descriptors[0].hits_addend = None;
    r.hits_addend = 21;
    let over = s.ask(r).await;
    assert_eq!(over.overall_code, OVER_LIMIT);
    assert_eq!(over.statuses[0].limit_remaining, 20);
}

#[tokio::test]
async fn metrics_are_labelled_grpc_with_the_rule_and_domain() {
    let s = server().await;
    s.ask(one("edge", &[("api_key", "k"), ("path", "/api/search")]))
        .await;
    let metrics = s.metrics_text();
    assert!(
        metrics.contains("ratewarden_decision_duration_seconds_count{api=\"grpc\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "ratewarden_decisions_total{outcome=\"allowed\",rule=\"api_key.path_/api/search\",tier=\"edge\"} 1"
        ),
        "{metrics}"
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
}
