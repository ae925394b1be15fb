//! Single /v1/check decisions: every field of an allowed and a denied answer, the rate limit
//! headers agreeing with the body, resets shrinking with the clock, a cost above the limit.

use crate::common::EXAMPLE_POLICY;
use crate::common::http::{app, post_raw, structured};
use crate::support::{
    DECISION_FIELDS, PROBLEM_FIELDS, QUOTA_EXCEEDED, assert_headers_match, check, export, keys,
};
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Duration;

#[tokio::test]
async fn allowed_check_is_200_json_with_every_field() {
    let app = app(EXAMPLE_POLICY);
    let reply = check(&app, json!({"user": "alice", "endpoint": "/api/export"})).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.content_type(), "application/json");
    let body = reply.json();
    assert_eq!(keys(&body), DECISION_FIELDS.into());
    assert_eq!(
        body,
        json!({
            "allowed": true, "limit": 5, "remaining": 4,
            "reset_after_ms": 60_000, "retry_after_ms": 0,
            "policy": "endpoint:/api/export/export", "violated": [],
            "scale": 1.0, "load_factor": 1.0, "rule_load_factor": null, "abuse_score": null,
            "reason": null, "shadow": false, "degraded": false
        })
    );
    assert_headers_match(&reply, &body, "export", 60);
    // A charset parameter is still JSON.
    let reply = post_raw(
        &app.router,
        "/v1/check",
        Some("application/json; charset=utf-8"),
        export("alice").to_string(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["remaining"], 3);
}

#[tokio::test]
async fn export_allows_five_a_minute_then_429_problem_with_decision_fields() {
    let app = app(EXAMPLE_POLICY);
    for n in 0..5 {
        let reply = check(&app, export("bob")).await;
        assert_eq!(reply.status, StatusCode::OK, "request {n}");
        let body = reply.json();
        assert_eq!(body["remaining"], 4 - n);
        assert_headers_match(&reply, &body, "export", 60);
    }
    app.clock.advance(Duration::from_millis(10_500));
    let reply = check(&app, export("bob")).await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(reply.content_type(), "application/problem+json");
    let body = reply.json();
    let all: BTreeSet<&str> = DECISION_FIELDS.into_iter().chain(PROBLEM_FIELDS).collect();
    assert_eq!(keys(&body), all);
    assert_eq!(body["allowed"], false);
    assert_eq!(
        (body["limit"].clone(), body["remaining"].clone()),
        (json!(5), json!(0))
    );
    // The fixed window ends 60 s after MINUTE; 10.5 s have passed.
    assert_eq!(body["reset_after_ms"], 49_500);
    assert_eq!(body["retry_after_ms"], 49_500);
    // Shorter than the tier's hourly limit, which has room: a burst (docs/reference/http-api.md, Reasons).
    assert_eq!(body["reason"], "burst");
    assert_eq!(body["violated"], json!(["export"]));
    assert_eq!(body["violated-policies"], json!(["export"]));
    assert_eq!(body["type"], QUOTA_EXCEEDED);
    assert_eq!(body["title"], "Quota exceeded");
    assert_eq!(body["status"], 429);
    assert_eq!(
        body["detail"],
        "limit \"export\" allows 5 per 60 s; retry in 50 s"
    );
    assert_headers_match(&reply, &body, "export", 60);
    assert_eq!(reply.header("retry-after"), "50");
    assert_eq!(structured(reply.header("ratelimit")).param("t"), 50);

    // The window ends: everything is back.
    app.clock.advance(Duration::from_millis(49_500));
    let reply = check(&app, export("bob")).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["remaining"], 4);
}

#[tokio::test]
async fn reset_shrinks_as_the_clock_advances() {
    let app = app(EXAMPLE_POLICY);
    let mut last_t = i64::MAX;
    for (step, expected_t) in [(0, 60), (1_000, 59), (20_001, 39), (30_000, 9)] {
        app.clock.advance(Duration::from_millis(step));
        let reply = check(&app, json!({"user": "dan", "endpoint": "/api/export"})).await;
        let body = reply.json();
        assert_headers_match(&reply, &body, "export", 60);
        let t = structured(reply.header("ratelimit")).param("t");
        assert_eq!(t, expected_t);
        assert!(t < last_t);
        last_t = t;
    }
    // Token bucket: a burst denial names the time until one token is back (60 s / 20 = 3 s).
    for _ in 0..20 {
        assert_eq!(
            check(&app, json!({"user": "eve", "endpoint": "/x"}))
                .await
                .status,
            200
        );
    }
    let reply = check(&app, json!({"user": "eve", "endpoint": "/x"})).await;
    let body = reply.json();
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        (body["reason"].as_str(), body["retry_after_ms"].as_i64()),
        (Some("burst"), Some(3000))
    );
    assert_headers_match(&reply, &body, "burst", 60);
    assert_eq!(reply.header("retry-after"), "3");
}

#[tokio::test]
async fn cost_above_the_base_limit_is_quota_without_retry() {
    let app = app(EXAMPLE_POLICY);
    let reply = check(
        &app,
        json!({"user": "carol", "endpoint": "/api/export", "cost": 6}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(reply.content_type(), "application/problem+json");
    let body = reply.json();
    assert_eq!(body["reason"], "quota");
    assert_eq!(body["retry_after_ms"], Value::Null);
    assert_eq!(body["remaining"], 5, "a denial consumes nothing");
    assert_eq!(
        body["detail"],
        "cost 6 exceeds the limit of 5 on \"export\"; this request can never pass"
    );
    assert!(reply.headers.get("retry-after").is_none());
    assert_headers_match(&reply, &body, "export", 60);
    // A cost of 5 still fits.
    let reply = check(
        &app,
        json!({"user": "carol", "endpoint": "/api/export", "cost": 5}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["remaining"], 0);
}

#[tokio::test]
async fn a_bucket_denial_states_its_rate_and_its_burst_apart() {
    // /api/search is gcra, 10 a minute in bursts of 5: `limit` is the burst, the rate is not.
    let app = app(EXAMPLE_POLICY);
    let search = json!({"user": "ivy", "endpoint": "/api/search"});
    for _ in 0..5 {
        assert_eq!(check(&app, search.clone()).await.status, StatusCode::OK);
    }
    let body = check(&app, search).await.json();
    assert_eq!(body["limit"], 5);
    assert_eq!(
        body["detail"],
        "limit \"search\" allows 10 per 60 s, at most 5 at once; retry in 6 s"
    );
}
