//! envoyproxy/ratelimit configuration mode, how a matched limit counts: every unit with its
//! epoch-aligned window, the `algorithm:` key, load and anomaly scaling, request overrides, all
//! descriptors or none, duplicates, `hits_addend`, and the metrics of a gRPC decision.

use crate::envoy_mode::{left_in, server};
use crate::harness::*;
use ratewarden::engine::SubjectStanding;
use std::time::Duration;

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
    // A limit of 1 cannot hold both: as written, so the quota denies, not the load.
    let r = s.ask(twice).await;
    assert_eq!(r.overall_code, OVER_LIMIT);
    let metrics = s.metrics_text();
    assert!(
        metrics
            .contains(r#"ratewarden_rejections_total{reason="quota",rule="tight",tier="edge"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics
            .lines()
            .filter(|l| l.contains(r#"reason="load""#))
            .all(|l| l.ends_with(" 0")),
        "{metrics}"
    );
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

/// On `OVER_LIMIT` the headers name a limit that denied, even when a passing descriptor has
/// less room left: a 429 must not read as room.
#[tokio::test]
async fn a_refusal_s_headers_name_a_limit_that_denied() {
    let s = server().await;
    s.ask(one("units", &[("unit", "minute")])).await;
    s.ask(one("units", &[("unit", "minute")])).await;
    s.ask(one("units", &[("unit", "hour")])).await;
    let mut costly = descriptor(&[("unit", "hour")]);
    costly.hits_addend = Some(envoy_types::pb::google::protobuf::UInt64Value { value: 3 });
    // minute: 1 left and passing; hour: 2 left, denied (its cost 3 is over what is left).
    let r = s
        .ask(request(
            "units",
            vec![descriptor(&[("unit", "minute")]), costly],
        ))
        .await;
    assert_eq!(r.overall_code, OVER_LIMIT);
    assert_eq!(r.statuses[0].code, OK);
    assert_eq!(
        header(&r, "ratelimit-policy"),
        Some("\"unit_hour\";q=3;w=3600")
    );
    assert_eq!(header(&r, "x-ratelimit-remaining"), Some("2"));
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
