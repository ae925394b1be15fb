//! The HTTP API at the router level (docs/reference/http-api.md): /v1/check, /v1/check/batch, their headers and
//! every error; the engine is the embedded store with a manual clock.

mod common;

use axum::http::{Method, StatusCode};
use common::EXAMPLE_POLICY;
use common::http::{App, Reply, app, call, post_json, post_raw, structured};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Duration;

const DECISION_FIELDS: [&str; 14] = [
    "allowed",
    "limit",
    "remaining",
    "reset_after_ms",
    "retry_after_ms",
    "policy",
    "violated",
    "scale",
    "load_factor",
    "rule_load_factor",
    "abuse_score",
    "reason",
    "shadow",
    "degraded",
];
const PROBLEM_FIELDS: [&str; 5] = ["type", "title", "status", "detail", "violated-policies"];
const QUOTA_EXCEEDED: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";

fn keys(body: &Value) -> BTreeSet<&str> {
    body.as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

async fn check(app: &App, body: Value) -> Reply {
    post_json(&app.router, "/v1/check", &body).await
}

fn export(user: &str) -> Value {
    json!({"user": user, "endpoint": "/api/export"})
}

/// The rate limit headers agree with the body: `name` is the headline limit, `window_s` its
/// window.
#[track_caller]
fn assert_headers_match(reply: &Reply, body: &Value, name: &str, window_s: i64) {
    let limit = body["limit"].as_i64().expect("limit");
    let remaining = body["remaining"].as_i64().expect("remaining");
    let reset_s = body["reset_after_ms"]
        .as_u64()
        .expect("reset")
        .div_ceil(1000) as i64;
    let policy = structured(reply.header("ratelimit-policy"));
    assert_eq!(policy.name, name);
    assert_eq!(
        policy.params,
        [("q".to_owned(), limit), ("w".to_owned(), window_s)]
    );
    let state = structured(reply.header("ratelimit"));
    assert_eq!(state.name, name);
    assert_eq!(
        state.params,
        [("r".to_owned(), remaining), ("t".to_owned(), reset_s)]
    );
    assert_eq!(reply.header("x-ratelimit-limit"), limit.to_string());
    assert_eq!(reply.header("x-ratelimit-remaining"), remaining.to_string());
    assert_eq!(reply.header("x-ratelimit-reset"), reset_s.to_string());
    match body["retry_after_ms"].as_i64() {
        Some(ms) if !body["allowed"].as_bool().unwrap() => {
            let ms = u64::try_from(ms).unwrap();
            assert_eq!(reply.header("retry-after"), ms.div_ceil(1000).to_string());
        }
        _ => assert!(reply.headers.get("retry-after").is_none(), "{reply:?}"),
    }
}

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
async fn undecidable_requests_are_400() {
    let app = app(EXAMPLE_POLICY);
    check(
        &app,
        json!({"user": "a", "endpoint": "/x", "tier": "platinum"}),
    )
    .await
    .assert_problem(
        StatusCode::BAD_REQUEST,
        "field `tier`: unknown tier \"platinum\"",
    );
    check(&app, json!({"user": "a", "endpoint": "/login"}))
        .await
        .assert_problem(
            StatusCode::BAD_REQUEST,
            "rule endpoints[3] (/login) counts per IP address (key: ip) and the request has no `ip`",
        );
    let reply = check(
        &app,
        json!({"user": "a", "endpoint": "/login", "ip": "203.0.113.7"}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    // A named tier applies: pro has one hourly limit of 1000.
    let reply = check(&app, json!({"user": "a", "endpoint": "/x", "tier": "pro"})).await;
    assert_eq!(reply.json()["policy"], "endpoint:default/endpoint");
}

#[tokio::test]
async fn every_malformed_request_is_a_4xx_that_names_the_problem() {
    let app = app(EXAMPLE_POLICY);
    let ok = |extra: Value| {
        let mut body = json!({"user": "u", "endpoint": "/x"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body.to_string()
    };
    let json_ct = Some("application/json");
    let big = format!(
        "{{\"user\": \"{}\", \"endpoint\": \"/x\"}}",
        "a".repeat(64 * 1024)
    );
    let cases: Vec<(&str, Option<&str>, String, u16, String)> = vec![
        (
            "malformed",
            json_ct,
            "{\"user\": ".into(),
            400,
            "malformed JSON: EOF while parsing a value at line 1 column 9".into(),
        ),
        (
            "trailing",
            json_ct,
            format!("{} x", ok(json!({}))),
            400,
            "malformed JSON: trailing characters at line 1 column 30".into(),
        ),
        (
            "empty body",
            json_ct,
            String::new(),
            400,
            "request body is empty (expected a JSON object)".into(),
        ),
        (
            "wrong content type",
            Some("text/plain"),
            ok(json!({})),
            415,
            "Content-Type must be application/json, not \"text/plain\"".into(),
        ),
        (
            "no content type",
            None,
            ok(json!({})),
            415,
            "Content-Type must be application/json (the header is missing)".into(),
        ),
        (
            "missing user",
            json_ct,
            json!({"endpoint": "/x"}).to_string(),
            400,
            "field `user` is required".into(),
        ),
        (
            "missing endpoint",
            json_ct,
            json!({"user": "u"}).to_string(),
            400,
            "field `endpoint` is required".into(),
        ),
        (
            "empty user",
            json_ct,
            ok(json!({"user": ""})),
            400,
            "field `user` must be 1 to 512 bytes (it has 0)".into(),
        ),
        (
            "empty endpoint",
            json_ct,
            ok(json!({"endpoint": ""})),
            400,
            "field `endpoint` must be 1 to 2048 bytes (it has 0)".into(),
        ),
        (
            "long user",
            json_ct,
            ok(json!({"user": "u".repeat(513)})),
            400,
            "field `user` must be 1 to 512 bytes (it has 513)".into(),
        ),
        (
            "long endpoint",
            json_ct,
            ok(json!({"endpoint": "/".repeat(2049)})),
            400,
            "field `endpoint` must be 1 to 2048 bytes (it has 2049)".into(),
        ),
        (
            "cost 0",
            json_ct,
            ok(json!({"cost": 0})),
            400,
            "field `cost` must be between 1 and 1000000 (it is 0)".into(),
        ),
        (
            "cost -1",
            json_ct,
            ok(json!({"cost": -1})),
            400,
            "field `cost` must be between 1 and 1000000 (it is -1)".into(),
        ),
        (
            "cost 1000001",
            json_ct,
            ok(json!({"cost": 1_000_001})),
            400,
            "field `cost` must be between 1 and 1000000 (it is 1000001)".into(),
        ),
        (
            "cost 1.5",
            json_ct,
            ok(json!({"cost": 1.5})),
            400,
            "field `cost`: invalid type: floating point `1.5`, expected i64".into(),
        ),
        (
            "cost \"1\"",
            json_ct,
            ok(json!({"cost": "1"})),
            400,
            "field `cost`: invalid type: string \"1\", expected i64".into(),
        ),
        (
            "bad ip",
            json_ct,
            ok(json!({"ip": "203.0.113"})),
            400,
            "field `ip` is not an IP address: \"203.0.113\"".into(),
        ),
        (
            "unknown field",
            json_ct,
            ok(json!({"cots": 5})),
            400,
            "unknown field `cots`, expected one of `user`, `endpoint`, `tier`, `ip`, `cost`".into(),
        ),
        (
            "array",
            json_ct,
            json!([{"user": "u", "endpoint": "/x"}]).to_string(),
            400,
            "invalid request: invalid type: sequence, expected struct CheckBody".into(),
        ),
        // Serde's derived structs would take their fields in order from an array.
        (
            "fields as array",
            json_ct,
            json!(["u", "/x", null, null, 2]).to_string(),
            400,
            "invalid request: invalid type: sequence, expected struct CheckBody".into(),
        ),
        (
            "oversized",
            json_ct,
            big,
            413,
            "request body exceeds 65536 bytes".into(),
        ),
    ];
    for (name, content_type, body, status, detail) in cases {
        let reply = post_raw(&app.router, "/v1/check", content_type, body).await;
        let status = StatusCode::from_u16(status).unwrap();
        assert_eq!(reply.status, status, "{name}: {}", reply.text());
        let problem = reply.assert_problem(status, &detail);
        assert_eq!(problem["type"], "about:blank", "{name}");
        assert_eq!(
            problem["title"],
            status.canonical_reason().unwrap(),
            "{name}"
        );
    }
    // None of these consumed anything.
    let reply = check(&app, json!({"user": "u", "endpoint": "/x"})).await;
    assert_eq!(reply.json()["remaining"], 19);

    let reply = call(&app.router, Method::GET, "/nope", &[], "").await;
    reply.assert_problem(StatusCode::NOT_FOUND, "no route for GET /nope");
    let reply = call(&app.router, Method::GET, "/v1/check", &[], "").await;
    reply.assert_problem(
        StatusCode::METHOD_NOT_ALLOWED,
        "/v1/check does not accept GET",
    );
    assert!(reply.header("allow").contains("POST"));
    let reply = call(&app.router, Method::DELETE, "/v1/report", &[], "").await;
    reply.assert_problem(
        StatusCode::METHOD_NOT_ALLOWED,
        "/v1/report does not accept DELETE",
    );
    // Forward auth answers any method: some proxies send the client's.
    let reply = call(&app.router, Method::DELETE, "/v1/auth", &[], "").await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "headers X-Original-URI and X-Forwarded-Uri are both missing: one must name the requested URI",
    );
}

async fn batch(app: &App, requests: Value) -> Reply {
    post_json(
        &app.router,
        "/v1/check/batch",
        &json!({ "requests": requests }),
    )
    .await
}

#[tokio::test]
async fn batch_answers_in_order_each_as_if_alone() {
    let app = app(EXAMPLE_POLICY);
    let reply = batch(
        &app,
        json!([
            {"user": "a", "endpoint": "/api/export"},
            {"user": "a", "endpoint": "/api/search"},
            {"user": "a", "endpoint": "/x", "tier": "pro"},
            {"user": "a", "endpoint": "/api/export", "cost": 6},
        ]),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.content_type(), "application/json");
    let body = reply.json();
    assert_eq!(keys(&body), ["results"].into());
    let results = body["results"].as_array().unwrap();
    let policies: Vec<&str> = results
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect();
    assert_eq!(
        policies,
        [
            "endpoint:/api/export/export",
            "endpoint:/api/search/search",
            "endpoint:default/endpoint",
            "endpoint:/api/export/export",
        ]
    );
    for r in results {
        assert_eq!(
            keys(r),
            DECISION_FIELDS.into(),
            "no problem members in a batch: {r}"
        );
    }
    assert_eq!(results[3]["allowed"], false);
    assert_eq!(results[3]["reason"], "quota");
    assert_eq!(results[3]["remaining"], 4);

    let reply = batch(&app, json!(vec![export("b"); 7])).await;
    assert_eq!(reply.status, StatusCode::OK);
    let results = reply.json()["results"].as_array().unwrap().clone();
    let allowed: Vec<bool> = results
        .iter()
        .map(|r| r["allowed"].as_bool().unwrap())
        .collect();
    assert_eq!(allowed, [true, true, true, true, true, false, false]);
    let remaining: Vec<i64> = results
        .iter()
        .map(|r| r["remaining"].as_i64().unwrap())
        .collect();
    assert_eq!(remaining, [4, 3, 2, 1, 0, 0, 0]);
    assert_eq!(results[5]["retry_after_ms"], 60_000);
    assert_eq!(results[6]["reason"], "burst");
    assert_eq!(
        check(&app, export("b")).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
}

#[tokio::test]
async fn a_bad_batch_is_400_and_consumes_nothing() {
    let app = app(EXAMPLE_POLICY);
    let item = export("z");
    let cases = [
        (
            json!({"requests": []}),
            "field `requests` must hold 1 to 1000 items (it holds 0)",
        ),
        (
            json!({ "requests": vec![item.clone(); 1001] }),
            "field `requests` must hold 1 to 1000 items (it holds 1001)",
        ),
        (json!({}), "field `requests` is required"),
        (
            json!({"requests": [item, item, {"user": "z", "endpoint": "/api/export", "cost": 0}]}),
            "field `requests[2].cost` must be between 1 and 1000000 (it is 0)",
        ),
        (
            json!({"requests": [item, item, {"user": "z", "endpoint": "/api/export", "cost": "2"}]}),
            "field `requests[2].cost`: invalid type: string \"2\", expected i64",
        ),
        (
            json!({"requests": [item, {"user": "z", "endpoint": "/x", "tier": "gold"}, item]}),
            "field `requests[1].tier`: unknown tier \"gold\"",
        ),
        (
            json!({"requests": [item, {"user": "z", "endpoint": "/login"}]}),
            "requests[1]: rule endpoints[3] (/login) counts per IP address (key: ip) and the request has no `ip`",
        ),
        (
            json!({"requests": [{"user": "z", "endpoint": "/x", "cots": 2}]}),
            "requests[0]: unknown field `cots`, expected one of `user`, `endpoint`, `tier`, `ip`, `cost`",
        ),
        (
            json!({"requests": [item, ["z", "/api/export", null, null, 2]]}),
            "field `requests[1]`: invalid type: sequence, expected struct CheckBody",
        ),
        (
            json!({"request": [item]}),
            "unknown field `request`, expected `requests`",
        ),
    ];
    for (body, detail) in cases {
        post_json(&app.router, "/v1/check/batch", &body)
            .await
            .assert_problem(StatusCode::BAD_REQUEST, detail);
    }
    let reply = check(&app, export("z")).await;
    assert_eq!(
        reply.json()["remaining"],
        4,
        "the failed batches consumed nothing"
    );
}
