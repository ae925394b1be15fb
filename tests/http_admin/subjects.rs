//! `GET /v1/admin/subjects/{user}`: the subject view's usage, under scaling, for `key: ip`
//! rules, and its refusal of bad queries.

use crate::harness::{Reply, TOKEN, admin, check, check_with, harness};
use axum::http::{Method, StatusCode};
use ratewarden::control::ModelSlot;
use ratewarden::engine::SubjectStanding;
use ratewarden::features::{Features, SubjectFeatures};
use ratewarden::reload::Reloader;
use serde_json::{Value, json};
use std::sync::Arc;

const AMBIGUOUS: &str = "the path is ambiguous: its `..` segment takes it to \"/export\" where dot-segments are \
    removed (nginx, Go) but not where the path is routed as sent (Express); send the path \
    without `..`";

#[tokio::test]
async fn subject_view_shows_base_effective_and_exact_usage_without_the_raw_id() {
    let h = harness(Some(TOKEN));
    let user = "user-alice-42";
    for _ in 0..3 {
        check(&h.app, user, "/somewhere").await;
    }
    check(&h.app, "someone-else", "/somewhere").await;

    let expected = json!({
        "subject": h.engine.hasher().user(user).to_string(),
        "tier": "free",
        "tier_source": "default",
        "stored_tier": null,
        "endpoint_rule": "default",
        "abuse_score": null,
        "flagged": false,
        "load_factor": 1.0,
        "rule_load_factor": null,
        "scale": 1.0,
        "features": {},
        "scoring": {"requests": 0, "min_requests": 20, "progress": "0 of 20 requests"},
        "threshold": 0.8,
        "flag_start": null,
        "hold_until": null,
        "allowlisted_until": null,
        "model_version": null,
        "explanation": null,
        "limits": [
            {"scope": "tier", "name": "hourly", "algorithm": "sliding_log", "base": 100,
             "effective": 100, "used": 3, "remaining": 97, "window_ms": 3_600_000,
             "key": "user", "shadow": false, "load_factor": 1.0},
            {"scope": "tier", "name": "burst", "algorithm": "token_bucket", "base": 20,
             "effective": 20, "used": 3, "remaining": 17, "window_ms": 60_000,
             "key": "user", "shadow": false, "load_factor": 1.0},
            {"scope": "endpoint", "name": "endpoint", "algorithm": "sliding_window",
             "base": 5000, "effective": 5000, "used": 3, "remaining": 4997,
             "window_ms": 60_000, "key": "user", "shadow": false, "load_factor": 1.0},
        ],
    });
    let uri = format!("/v1/admin/subjects/{user}");
    let reply = admin(&h.app, Method::GET, &uri, None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.json, expected);
    assert_eq!(reply.json["subject"].as_str().unwrap().len(), 32);
    assert!(!reply.text.contains("alice"), "{}", reply.text);

    // The view consumes nothing: the same again, and the next check sees 3 used, not 5.
    assert_eq!(admin(&h.app, Method::GET, &uri, None).await.json, expected);
    let d = check(&h.app, user, "/somewhere").await;
    assert_eq!((&d["limit"], &d["remaining"]), (&json!(20), &json!(16)));

    // A subject never seen: nothing used.
    let reply = admin(&h.app, Method::GET, "/v1/admin/subjects/nobody", None).await;
    let limits = reply.json["limits"].as_array().unwrap();
    assert!(
        limits
            .iter()
            .all(|l| l["used"] == 0 && l["remaining"] == l["base"])
    );
}

#[tokio::test]
async fn subject_view_of_an_endpoint_and_under_scaling() {
    let h = harness(Some(TOKEN));
    for _ in 0..2 {
        check(&h.app, "bob", "/api/search").await;
    }
    let uri = "/v1/admin/subjects/bob?endpoint=/api/search";
    let reply = admin(&h.app, Method::GET, uri, None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.json["endpoint_rule"], "/api/search");
    // An absolute URI names its path, as on every route that takes one.
    let absolute = "/v1/admin/subjects/bob?endpoint=https%3A%2F%2Fh%2Fapi%2Fsearch";
    let same = admin(&h.app, Method::GET, absolute, None).await;
    assert_eq!(same.json["endpoint_rule"], "/api/search", "{}", same.text);
    let usage = |reply: &Reply| -> Vec<(String, Value, Value, Value, Value)> {
        reply.json["limits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    format!(
                        "{}:{}",
                        l["scope"].as_str().unwrap(),
                        l["name"].as_str().unwrap()
                    ),
                    l["base"].clone(),
                    l["effective"].clone(),
                    l["used"].clone(),
                    l["remaining"].clone(),
                )
            })
            .collect()
    };
    let row = |name: &str, base: u64, effective: u64, used: u64, remaining: u64| {
        (
            name.to_owned(),
            json!(base),
            json!(effective),
            json!(used),
            json!(remaining),
        )
    };
    assert_eq!(
        usage(&reply),
        [
            row("tier:hourly", 100, 100, 2, 98),
            row("tier:burst", 20, 20, 2, 18),
            row("endpoint:search", 5, 5, 2, 3),
        ]
    );
    assert_eq!(reply.json["limits"][2]["algorithm"], "gcra");
    assert_eq!(reply.json["limits"][2]["window_ms"], 60_000);

    // Halved: effective capacities follow, usage stays what was counted.
    admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"load_factor_override": 0.5}"#),
    )
    .await;
    let reply = admin(&h.app, Method::GET, uri, None).await;
    assert_eq!(
        (&reply.json["load_factor"], &reply.json["scale"]),
        (&json!(0.5), &json!(0.5))
    );
    let rows = usage(&reply);
    assert_eq!(rows[0], row("tier:hourly", 100, 50, 2, 48));
    assert_eq!(rows[1], row("tier:burst", 20, 10, 2, 8));
    assert_eq!(
        (&rows[2].1, &rows[2].2, &rows[2].3),
        (&json!(5), &json!(2), &json!(2))
    );

    // Scaled below the usage: nothing remains, and `used` still shows the 2 counted.
    admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"load_factor_override": 0.01}"#),
    )
    .await;
    let rows = usage(&admin(&h.app, Method::GET, uri, None).await);
    assert_eq!(rows[0], row("tier:hourly", 100, 1, 2, 0));
    assert_eq!(rows[1], row("tier:burst", 20, 0, 2, 0));
    assert_eq!(rows[2], row("endpoint:search", 5, 0, 2, 0));
}

#[tokio::test]
async fn subject_view_of_an_ip_keyed_rule_shows_usage_only_for_a_given_ip() {
    let h = harness(Some(TOKEN));
    let ip = "203.0.113.7";
    check_with(
        &h.app,
        json!({"user": "carol", "endpoint": "/login", "ip": ip}),
    )
    .await;

    let reply = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/carol?endpoint=/login",
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.json["endpoint_rule"], "/login");
    let login = &reply.json["limits"][2];
    assert_eq!(
        login,
        &json!({"scope": "endpoint", "name": "login", "algorithm": "fixed_window", "base": 20,
                "effective": 20, "used": null, "remaining": null, "window_ms": 300_000,
                "key": "ip", "shadow": false, "load_factor": 1.0})
    );
    // The tier's limits count per user and show the usage.
    assert_eq!(reply.json["limits"][0]["used"], 1);

    let uri = format!("/v1/admin/subjects/carol?endpoint=/login&ip={ip}");
    let reply = admin(&h.app, Method::GET, &uri, None).await;
    let login = &reply.json["limits"][2];
    assert_eq!(
        (&login["used"], &login["remaining"]),
        (&json!(1), &json!(19))
    );
    assert!(
        !reply.text.contains(ip) && !reply.text.contains("carol"),
        "{}",
        reply.text
    );

    // Another address has used nothing of the rule.
    let reply = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/carol?endpoint=/login&ip=2001:db8::1",
        None,
    )
    .await;
    assert_eq!(reply.json["limits"][2]["used"], 0);
}

#[tokio::test]
async fn subject_view_rejects_a_bad_query() {
    let h = harness(Some(TOKEN));
    let reply = admin(&h.app, Method::GET, "/v1/admin/subjects/dave?ip=nope", None).await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "query parameter `ip` is not an IP address: \"nope\"",
    );
    let reply = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/dave?endpoint=",
        None,
    )
    .await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "query parameter `endpoint` must be 1 to 2048 bytes (it has 0)",
    );
    let reply = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/dave?endpoint=/api//../export",
        None,
    )
    .await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        &format!("query parameter `endpoint`: {AMBIGUOUS}"),
    );
    let reply = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/dave?endpiont=/x",
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.content_type(), "application/problem+json");
    assert!(
        reply.detail().contains("unknown field `endpiont`"),
        "{}",
        reply.detail()
    );
    let long = "u".repeat(513);
    let reply = admin(
        &h.app,
        Method::GET,
        &format!("/v1/admin/subjects/{long}"),
        None,
    )
    .await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "the user in the path must be 1 to 512 bytes (it has 513)",
    );
}

/// A tier that only the checks name (their `tier` field) is shown when the view is told it;
/// without it the view can show only the stored tier or the default.
#[tokio::test]
async fn subject_view_shows_the_tier_a_check_names() {
    let h = harness(Some(TOKEN));
    for _ in 0..3 {
        check_with(
            &h.app,
            json!({"user": "erin", "endpoint": "/x", "tier": "pro"}),
        )
        .await;
    }
    let view = admin(&h.app, Method::GET, "/v1/admin/subjects/erin", None).await;
    assert_eq!(
        (&view.json["tier"], &view.json["tier_source"]),
        (&json!("free"), &json!("default"))
    );
    let view = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/erin?tier=pro",
        None,
    )
    .await;
    assert_eq!(
        (&view.json["tier"], &view.json["tier_source"]),
        (&json!("pro"), &json!("query")),
        "{}",
        view.text
    );
    let hourly = &view.json["limits"][0];
    assert_eq!(
        (&hourly["name"], &hourly["base"], &hourly["used"]),
        (&json!("hourly"), &json!(1000), &json!(3))
    );
    let reply = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/erin?tier=gold",
        None,
    )
    .await;
    reply.assert_problem(StatusCode::BAD_REQUEST, "unknown tier \"gold\"");
}

/// A flag held past the subject's last scored cycle keeps that cycle's score: an explanation of
/// the features now, below `min_requests`, would not add up to it, so there is none until the
/// subject is scored again.
#[tokio::test]
async fn a_held_flag_below_min_requests_shows_its_score_without_an_explanation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, crate::harness::POLICY).unwrap();
    let (engine, _clock) = crate::harness::engine(crate::harness::POLICY);
    let model = Arc::new(ModelSlot::new(engine.metrics().clone()));
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/abuse.json");
    model.load(Some(&shipped)).expect("the shipped model");
    let reloader = Reloader::new(path, engine.clone(), model);
    let app = crate::harness::app(&engine, Some(TOKEN), Some(reloader));
    let subject = engine.hasher().user("held");
    let standing = SubjectStanding {
        abuse_score: 0.97,
        held_until: u64::MAX,
        novel: false,
    };
    engine.scale_factors().set_standing(subject, standing);
    let features = Features {
        client_error_ratio: 0.9,
        interarrival_cv: 0.1,
        limit_usage: 0.5,
        limit_demand: 0.5,
        ..Features::default()
    };
    for (requests, explained) in [(5, false), (40, true)] {
        let observed = SubjectFeatures { features, requests };
        engine
            .scale_factors()
            .publish_observed([(subject, observed)].into_iter().collect());
        let view = admin(&app, Method::GET, "/v1/admin/subjects/held", None).await;
        assert_eq!(view.status, StatusCode::OK, "{}", view.text);
        assert_eq!(view.json["abuse_score"], json!(0.97));
        assert_eq!(
            !view.json["explanation"].is_null(),
            explained,
            "{requests} requests"
        );
    }
}
