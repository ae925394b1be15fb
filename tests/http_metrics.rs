//! `/metrics` at the router level (docs/reference/http-api.md, Metrics): the names dashboards rely on, counts that
//! match the decisions served, labels from the policy only, never a user id, IP or path.

mod common;

use axum::http::StatusCode;
use common::EXAMPLE_POLICY;
use common::http::{app, get, post_json};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Samples of the Prometheus text format: (name, labels, value).
fn samples(text: &str) -> Vec<(String, BTreeMap<String, String>, f64)> {
    let mut out = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line.rsplit_once(' ').expect("name value");
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (name, rest.strip_suffix('}').expect("closing brace")),
            None => (series, ""),
        };
        let mut map = BTreeMap::new();
        let mut rest = labels;
        while let Some((key, after)) = rest.split_once("=\"") {
            let end = after
                .find('"')
                .expect("closing quote (no escapes expected)");
            map.insert(
                key.trim_start_matches(',').to_owned(),
                after[..end].to_owned(),
            );
            rest = &after[end + 1..];
        }
        out.push((name.to_owned(), map, value.parse().expect("a number")));
    }
    out
}

fn value(
    samples: &[(String, BTreeMap<String, String>, f64)],
    name: &str,
    labels: &[(&str, &str)],
) -> f64 {
    samples
        .iter()
        .filter(|(n, l, _)| {
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(v))
        })
        .map(|s| s.2)
        .sum()
}

#[tokio::test]
async fn metrics_count_decisions_with_policy_labels_only() {
    let app = app(EXAMPLE_POLICY);
    // What the bodies said, to compare with the counters: (rule, outcome or reason) -> count.
    let mut decisions: BTreeMap<(String, String), f64> = BTreeMap::new();
    let mut rejections: BTreeMap<(String, String), f64> = BTreeMap::new();
    let mut near: BTreeMap<String, f64> = BTreeMap::new();
    let mut tally = |d: &Value| {
        let headline = d["policy"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_owned();
        if d["allowed"] == true {
            *decisions
                .entry((headline.clone(), "allowed".into()))
                .or_default() += 1.0;
            if d["remaining"].as_u64().unwrap() * 5 <= d["limit"].as_u64().unwrap() {
                *near.entry(headline).or_default() += 1.0;
            }
        } else {
            let rule = d["violated"][0].as_str().unwrap().to_owned();
            let reason = d["reason"].as_str().unwrap().to_owned();
            *decisions
                .entry((rule.clone(), "denied".into()))
                .or_default() += 1.0;
            *rejections.entry((rule, reason)).or_default() += 1.0;
        }
    };
    for _ in 0..12 {
        let body =
            json!({"user": "alice@example.com", "endpoint": "/api/search", "ip": "203.0.113.7"});
        tally(&post_json(&app.router, "/v1/check", &body).await.json());
    }
    for _ in 0..11 {
        let body = json!({"user": "+15551234567", "endpoint": "/sms/send"});
        tally(&post_json(&app.router, "/v1/check", &body).await.json());
    }
    let body = json!({"user": "alice@example.com", "endpoint": "/login", "ip": "203.0.113.7"});
    tally(&post_json(&app.router, "/v1/check", &body).await.json());
    let items =
        vec![json!({"user": "+15551234567", "endpoint": "/api/export", "ip": "203.0.113.7"}); 7];
    let reply = post_json(&app.router, "/v1/check/batch", &json!({"requests": items})).await;
    reply.json()["results"]
        .as_array()
        .unwrap()
        .iter()
        .for_each(&mut tally);
    let auth = [
        ("X-Original-URI", "/api/search?q=alice"),
        ("X-Api-Key", "alice@example.com"),
    ];
    let reply = get(&app.router, "/v1/auth", &auth).await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    let denied_by = reply.json()["violated-policies"][0]
        .as_str()
        .unwrap()
        .to_owned();
    *decisions
        .entry((denied_by.clone(), "denied".into()))
        .or_default() += 1.0;
    *rejections.entry((denied_by, "burst".into())).or_default() += 1.0;
    let report = json!({"user": "alice@example.com", "endpoint": "/api/search", "status": 429, "ip": "203.0.113.7"});
    assert_eq!(
        post_json(&app.router, "/v1/report", &report).await.status,
        202
    );

    let reply = get(&app.router, "/metrics", &[]).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        reply.content_type(),
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = reply.text();
    for secret in [
        "alice",
        "example.com",
        "+15551234567",
        "15551234567",
        "203.0.113.7",
        "/api/",
        "/sms/send",
        "/login",
    ] {
        assert!(
            !text.contains(secret),
            "{secret:?} leaked into /metrics:\n{text}"
        );
    }
    let all = samples(&text);
    let names: BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    for touched in [
        "ratewarden_decisions_total",
        "ratewarden_rejections_total",
        "ratewarden_bursts_total",
        "ratewarden_near_limit_total",
        "ratewarden_decision_duration_seconds",
        "ratewarden_store_duration_seconds",
        "ratewarden_load_factor",
        "ratewarden_system_cpu_ratio",
        "ratewarden_abuse_score",
        "ratewarden_flagged_subjects",
        "ratewarden_control_cycle_duration_seconds",
        "ratewarden_reports_total",
        "ratewarden_config_reloads_total",
    ] {
        assert!(names.contains(touched), "{touched} is missing:\n{text}");
    }
    // Reload counts start at 0 for every kind and result (so a first failure is an increase
    // Prometheus can see, and alert on).
    for kind in ["policy", "model"] {
        for result in ["success", "error"] {
            let series =
                format!("ratewarden_config_reloads_total{{kind=\"{kind}\",result=\"{result}\"}} 0");
            assert!(text.contains(&series), "{series} is missing:\n{text}");
        }
    }
    // Counters whose labels take a known, finite set of values are there from the start at 0:
    // the store's errors by every action, and the tier cache (skipped: no tier is stored).
    for action in ["local", "allowed", "denied"] {
        let series =
            format!("ratewarden_store_errors_total{{action=\"{action}\",store=\"memory\"}} 0");
        assert!(text.contains(&series), "{series} is missing:\n{text}");
    }
    for result in ["hit", "miss"] {
        let series = format!("ratewarden_tier_cache_requests_total{{result=\"{result}\"}} 0");
        assert!(text.contains(&series), "{series} is missing:\n{text}");
    }
    assert!(
        text.contains("\nratewarden_tier_lookup_errors_total 0\n"),
        "ratewarden_tier_lookup_errors_total is missing:\n{text}"
    );
    // No model: no model info.
    assert!(
        !names.contains("ratewarden_model_info"),
        "ratewarden_model_info is present:\n{text}"
    );
    // Labels: the documented set, plus `le` (histogram buckets), `class` (reports_total, the
    // status class 1xx..5xx of a report, an extra metric) and `scope` (the load series: `global`
    // or a rule's pattern from the policy).
    let allowed: BTreeSet<&str> = [
        "rule", "tier", "outcome", "reason", "api", "store", "action", "result", "kind", "version",
        "le", "class", "scope",
    ]
    .into();
    let rules: BTreeSet<&str> = [
        "hourly", "burst", "search", "export", "sms", "login", "endpoint", "none",
    ]
    .into();
    for (name, labels, _) in &all {
        for (key, label) in labels {
            assert!(allowed.contains(key.as_str()), "{name} has label {key}");
            match key.as_str() {
                "rule" => assert!(rules.contains(label.as_str()), "{name}: rule {label}"),
                "tier" => assert!(
                    ["free", "pro", "enterprise"].contains(&label.as_str()),
                    "{name}: tier {label}"
                ),
                // The shipped policy names no rule with a load source of its own.
                "scope" => assert_eq!(label, "global", "{name}: scope {label}"),
                // Every API's latency series exists from start-up, at 0.
                "api" => assert!(
                    ["http", "batch", "auth", "grpc"].contains(&label.as_str()),
                    "{name}: api {label}"
                ),
                _ => {}
            }
        }
    }
    assert_eq!(value(&all, "ratewarden_load_factor", &[]), 1.0);
    assert_eq!(
        value(&all, "ratewarden_reports_total", &[("class", "4xx")]),
        1.0
    );
    for ((rule, outcome), n) in &decisions {
        let labels = [
            ("rule", rule.as_str()),
            ("tier", "free"),
            ("outcome", outcome.as_str()),
        ];
        assert_eq!(
            value(&all, "ratewarden_decisions_total", &labels),
            *n,
            "{rule} {outcome}"
        );
    }
    let total: f64 = decisions.values().sum();
    assert_eq!(total, 12.0 + 11.0 + 1.0 + 7.0 + 1.0);
    assert_eq!(
        value(&all, "ratewarden_decisions_total", &[]),
        total,
        "once per request"
    );
    for ((rule, reason), n) in &rejections {
        let labels = [
            ("rule", rule.as_str()),
            ("tier", "free"),
            ("reason", reason.as_str()),
        ];
        assert_eq!(
            value(&all, "ratewarden_rejections_total", &labels),
            *n,
            "{rule} {reason}"
        );
    }
    assert_eq!(
        value(&all, "ratewarden_rejections_total", &[]),
        rejections.values().sum::<f64>()
    );
    assert!(
        rejections.contains_key(&("sms".into(), "quota".into())),
        "{rejections:?}"
    );
    let bursts: f64 = rejections
        .iter()
        .filter(|((_, r), _)| r == "burst")
        .map(|(_, n)| n)
        .sum();
    assert!(bursts > 0.0);
    assert_eq!(value(&all, "ratewarden_bursts_total", &[]), bursts);
    for (rule, n) in &near {
        assert_eq!(
            value(
                &all,
                "ratewarden_near_limit_total",
                &[("rule", rule.as_str()), ("tier", "free")]
            ),
            *n,
            "{rule}"
        );
    }
    assert!(
        near.contains_key("export") && near.contains_key("sms"),
        "{near:?}"
    );
    assert_eq!(
        value(&all, "ratewarden_near_limit_total", &[]),
        near.values().sum::<f64>()
    );
    let count = |api| {
        value(
            &all,
            "ratewarden_decision_duration_seconds_count",
            &[("api", api)],
        )
    };
    assert_eq!(
        (count("http"), count("batch"), count("auth")),
        (24.0, 1.0, 1.0)
    );
    let store = value(
        &all,
        "ratewarden_store_duration_seconds_count",
        &[("store", "memory")],
    );
    assert_eq!(
        store,
        24.0 + 1.0 + 1.0,
        "one round trip per call, batch included"
    );

    // A stored tier sends lookups through the local cache: one miss, then hits.
    app.engine
        .set_stored_tier("+15551234567", Some("pro"))
        .await
        .unwrap();
    for _ in 0..2 {
        let body = json!({"user": "+15551234567", "endpoint": "/elsewhere"});
        let reply = post_json(&app.router, "/v1/check", &body).await;
        assert_eq!(
            reply.json()["policy"],
            "endpoint:default/endpoint",
            "the pro tier applies"
        );
    }
    let text = get(&app.router, "/metrics", &[]).await.text();
    let all = samples(&text);
    let cache = |result| {
        value(
            &all,
            "ratewarden_tier_cache_requests_total",
            &[("result", result)],
        )
    };
    assert_eq!((cache("miss"), cache("hit")), (1.0, 1.0));
    assert!(!text.contains("15551234567"));
}
