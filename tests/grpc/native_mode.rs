//! Native descriptors (a domain no envoy configuration names): one check request each on the
//! policy, read like forward auth; malformed requests; and descriptors whose values the policy
//! cannot decide on, which are over limit rather than an error Envoy would let through.

use crate::harness::*;
use tonic::Code;

async fn server() -> Server {
    start(policy_with(NATIVE_POLICY, Some(&fixtures().join("valid")))).await
}

#[tokio::test]
async fn a_descriptor_is_a_check_request_on_the_policy() {
    let s = server().await;
    let search = [("user", "alice"), ("path", "/api/search?q=rust")];
    for remaining in [2, 1, 0] {
        let r = s.ask(one("web", &search)).await;
        assert_eq!(r.overall_code, OK);
        assert_eq!(
            current(&r.statuses[0]),
            Some((3, unit::MINUTE, "search".to_owned()))
        );
        assert_eq!(r.statuses[0].limit_remaining, remaining);
    }
    let over = s.ask(one("web", &search)).await;
    assert_eq!(over.overall_code, OVER_LIMIT);
    assert_eq!(
        header(&over, "ratelimit-policy"),
        Some("\"search\";q=3;w=60")
    );
    assert!(header(&over, "retry-after").is_some());
    // HTTP's checks share the counters.
    let decision = s
        .engine
        .check(&ratewarden::engine::CheckRequest::new(
            "alice",
            "/api/search",
        ))
        .await
        .unwrap();
    assert!(!decision.allowed);
}

#[tokio::test]
async fn the_subject_is_user_then_api_key_then_the_address() {
    let s = server().await;
    // api_key and remote_address: the key is the subject; without an endpoint the
    // default_endpoint limits apply.
    let by_key = [("remote_address", "203.0.113.9"), ("api_key", "k-1")];
    let r = s.ask(one("web", &by_key)).await;
    assert_eq!(
        current(&r.statuses[0]).map(|c| c.2),
        Some("endpoint".to_owned())
    );
    assert_eq!(r.statuses[0].limit_remaining, 4);
    let r = s.ask(one("web", &[("api_key", "k-1")])).await;
    assert_eq!(r.statuses[0].limit_remaining, 3);
    // The address alone is a subject too.
    let r = s
        .ask(one("web", &[("remote_address", "203.0.113.9")]))
        .await;
    assert_eq!(r.statuses[0].limit_remaining, 4);
    // A tier named by the descriptor: pro's hourly limit is 1000, the headline stays the
    // endpoint's (least remaining).
    let pro = s
        .ask(one(
            "web",
            &[("user", "carol"), ("tier", "pro"), ("endpoint", "/x")],
        ))
        .await;
    assert_eq!(pro.statuses[0].limit_remaining, 4);
}

#[tokio::test]
async fn key_ip_rules_count_per_address() {
    let s = server().await;
    let login = |user: &'static str| {
        one(
            "web",
            &[
                ("user", user),
                ("path", "/login"),
                ("remote_address", "192.0.2.1"),
            ],
        )
    };
    assert_eq!(s.ask(login("a")).await.overall_code, OK);
    assert_eq!(s.ask(login("b")).await.overall_code, OK);
    let r = s.ask(login("c")).await;
    assert_eq!(r.overall_code, OVER_LIMIT);
    // A 5 m window is no whole unit: UNKNOWN.
    assert_eq!(
        current(&r.statuses[0]),
        Some((2, unit::UNKNOWN, "login".to_owned()))
    );
}

#[tokio::test]
async fn no_subject_is_ok_with_no_limit_counted_as_native() {
    let s = server().await;
    let r = s.ask(one("web", &[("header_match", "x")])).await;
    assert_eq!(r.overall_code, OK);
    assert_eq!(r.statuses[0].current_limit, None);
    assert!(
        s.metrics_text()
            .contains("ratewarden_envoy_unmatched_total{domain=\"native\"} 1")
    );
}

#[tokio::test]
async fn malformed_requests_are_invalid_argument_naming_the_problem() {
    let s = server().await;
    let big = |n: u32| {
        let mut r = one("web", &[("user", "a")]);
        r.hits_addend = n;
        r
    };
    let mut own_zero = one("web", &[("user", "a")]);
    own_zero.descriptors[0].hits_addend =
        Some(envoy_types::pb::google::protobuf::UInt64Value { value: 0 });
    let cases = [
        (one("", &[("user", "a")]), "domain must not be empty"),
        (request("web", vec![]), "descriptors must not be empty"),
        (
            request("web", vec![descriptor(&[("user", "a")]), descriptor(&[])]),
            "descriptors[1] has no entries",
        ),
        (
            one("web", &[("user", "a"), ("", "x")]),
            "descriptors[0].entries[1] has an empty key",
        ),
        (
            big(1_000_001),
            "hits_addend must be between 1 and 1000000, not 1000001",
        ),
        (
            own_zero,
            "descriptors[0].hits_addend must be between 1 and 1000000, not 0",
        ),
        (
            request(
                "edge",
                vec![with_override(
                    descriptor(&[("remote_address", "1.1.1.1")]),
                    1,
                    0,
                )],
            ),
            "descriptors[0].limit.unit must be SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR, not 0",
        ),
    ];
    for (request, message) in cases {
        let status = s.refused(request).await;
        assert_eq!(status.code(), Code::InvalidArgument, "{message}");
        assert_eq!(status.message(), message);
    }
    let too_many = request("web", vec![descriptor(&[("user", "a")]); 1001]);
    let status = s.refused(too_many).await;
    assert_eq!(status.message(), "at most 1000 descriptors per request");
}

#[tokio::test]
async fn a_message_over_one_mebibyte_is_refused_before_it_is_decoded() {
    let s = server().await;
    // About 1.2 MiB of empty-valued entries: decoded, a few hundred thousand of them.
    let entries = vec![("k", ""); 300_000];
    let status = s.refused(request("web", vec![descriptor(&entries)])).await;
    assert_eq!(status.code(), Code::OutOfRange);
    assert!(
        status
            .message()
            .starts_with("Error, decoded message length too large"),
        "{}",
        status.message()
    );
}

#[tokio::test]
async fn a_descriptor_the_policy_cannot_decide_on_is_over_limit_and_consumes_nothing() {
    let s = server().await;
    let search = || descriptor(&[("user", "alice"), ("path", "/api/search")]);
    let long_user = "u".repeat(513);
    let long_path = format!("/{}", "a".repeat(2048));
    let refusals: [&[(&str, &str)]; 7] = [
        &[("user", "a"), ("tier", "gold")],
        // As on HTTP (`unknown tier ""`): once taken for no tier at all.
        &[("user", "a"), ("tier", "")],
        &[("user", "a"), ("ip", "not-an-ip")],
        &[("user", "a"), ("path", "/api//../export")],
        &[("user", "a"), ("path", "/login")],
        &[("user", &long_user)],
        &[("user", "a"), ("path", &long_path)],
    ];
    for (count, entries) in refusals.into_iter().enumerate() {
        let r = s
            .ask(request("web", vec![search(), descriptor(entries)]))
            .await;
        assert_eq!(r.overall_code, OVER_LIMIT, "{entries:?}");
        // The good descriptor is OK and unconsumed; the refused one names no limit.
        assert_eq!(r.statuses[0].code, OK);
        assert_eq!(r.statuses[0].limit_remaining, 3);
        assert_eq!(r.statuses[1].code, OVER_LIMIT);
        assert_eq!(r.statuses[1].current_limit, None);
        assert_eq!(r.statuses[1].limit_remaining, 0);
        // It can never pass as sent: no Retry-After.
        assert_eq!(header(&r, "retry-after"), None);
        let metrics = s.metrics_text();
        assert!(
            metrics.contains(&format!("ratewarden_envoy_refused_total {}", count + 1)),
            "{metrics}"
        );
        // Counted as refused only: no decision.
        assert!(
            metrics
                .lines()
                .filter(|l| l.starts_with("ratewarden_decisions_total{"))
                .all(|l| l.ends_with(" 0")),
            "{metrics}"
        );
    }
    assert_eq!(
        s.ask(one("web", &[("user", "alice"), ("path", "/api/search")]))
            .await
            .statuses[0]
            .limit_remaining,
        2
    );
}

#[tokio::test]
async fn the_reason_a_descriptor_is_refused_is_kept_with_its_index() {
    use ratewarden::engine::{Cost, DescriptorOutcome, DescriptorRequest};
    let s = server().await;
    let refused = DescriptorRequest {
        entries: vec![("user", "a"), ("path", "/api//../export")],
        cost: Cost::ONE,
        limit: None,
    };
    let decision = s.engine.check_descriptors("web", &[refused]).await;
    assert!(!decision.admitted);
    let DescriptorOutcome::Refused(problem) = &decision.outcomes[0] else {
        panic!("{:?}", decision.outcomes);
    };
    assert_eq!(
        problem,
        "descriptors[0]: the endpoint: the path is ambiguous: its `..` segment takes it to \
         \"/export\" where dot-segments are removed (nginx, Go) but not where the path is routed \
         as sent (Express); send the path without `..`"
    );
}

/// Every descriptor's subject gets its own stored tier (looked up for all of them at once).
#[tokio::test]
async fn each_descriptor_gets_its_subjects_stored_tier() {
    let policy = "default_tier: free\n\
                  tiers:\n  \
                    free:\n    limits: [ { name: hourly, algorithm: fixed_window, requests: 2, window: 1h } ]\n  \
                    pro:\n    limits: [ { name: hourly, algorithm: fixed_window, requests: 1000, window: 1h } ]\n\
                  default_endpoint:\n  limits: [ { name: endpoint, algorithm: fixed_window, requests: 5000, window: 1m } ]\n";
    let s = start(policy_with(policy, None)).await;
    s.engine.set_stored_tier("bob", Some("pro")).await.unwrap();
    let r = s
        .ask(request(
            "web",
            vec![
                descriptor(&[("user", "alice")]),
                descriptor(&[("user", "bob")]),
                descriptor(&[("user", "carol"), ("tier", "pro")]),
                descriptor(&[("user", "dave")]),
            ],
        ))
        .await;
    let limits: Vec<u32> = r
        .statuses
        .iter()
        .map(|status| current(status).map_or(0, |c| c.0))
        .collect();
    assert_eq!(limits, [2, 1000, 1000, 2]);
}
