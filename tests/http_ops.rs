//! The HTTP API at the router level (docs/reference/http-api.md), part two: forward auth,
//! reports and health; the OpenAPI document kept in sync with the router is in
//! http_ops/openapi.rs, `/metrics` in http_metrics.rs.

mod common;

use axum::http::StatusCode;
use common::EXAMPLE_POLICY;
use common::http::{Reply, app, get, post_json, structured};
use serde_json::{Value, json};
use std::time::Duration;

const QUOTA_EXCEEDED: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";

/// `name` with `q`, `r`, `t` as the draft's headers and the X- ones show them.
#[track_caller]
fn assert_limit(reply: &Reply, name: &str, q: i64, r: i64, t: i64) {
    let policy = structured(reply.header("ratelimit-policy"));
    let state = structured(reply.header("ratelimit"));
    assert_eq!((policy.name.as_str(), policy.param("q")), (name, q));
    assert_eq!(
        (state.name.as_str(), state.param("r"), state.param("t")),
        (name, r, t)
    );
    assert_eq!(reply.header("x-ratelimit-limit"), q.to_string());
    assert_eq!(reply.header("x-ratelimit-remaining"), r.to_string());
    assert_eq!(reply.header("x-ratelimit-reset"), t.to_string());
}

#[tokio::test]
async fn forward_auth_takes_path_and_subject_from_headers() {
    let app = app(EXAMPLE_POLICY);
    let auth =
        |headers: &'static [(&'static str, &'static str)]| get(&app.router, "/v1/auth", headers);
    let reply = auth(&[
        ("X-Original-URI", "/api/export?token=abc"),
        ("X-Api-Key", "k1"),
    ])
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.body.is_empty());
    assert!(reply.headers.get("retry-after").is_none());
    assert_limit(&reply, "export", 5, 4, 60);
    assert_eq!(structured(reply.header("ratelimit-policy")).param("w"), 60);
    // Traefik and Caddy send a full URI; the path is what counts.
    let reply = auth(&[
        ("X-Forwarded-Uri", "https://app.example/api/export?x=1#f"),
        ("X-Api-Key", "k1"),
    ])
    .await;
    assert_limit(&reply, "export", 5, 3, 60);
    // X-Original-URI wins over X-Forwarded-Uri; X-Api-Key over X-User-Id.
    let reply = auth(&[
        ("X-Original-URI", "/api/export"),
        ("X-Forwarded-Uri", "/elsewhere"),
        ("X-Api-Key", "k1"),
        ("X-User-Id", "u1"),
    ])
    .await;
    assert_limit(&reply, "export", 5, 2, 60);
    let reply = auth(&[("X-Original-URI", "/api/export"), ("X-User-Id", "u1")]).await;
    assert_limit(&reply, "export", 5, 4, 60);
    // X-Tier is ignored unless identity.trust_tier_header: free's burst is the headline.
    let reply = auth(&[
        ("X-Original-URI", "/x"),
        ("X-User-Id", "u1"),
        ("X-Tier", "pro"),
    ])
    .await;
    assert_limit(&reply, "burst", 20, 18, 6);

    app.clock.advance(Duration::from_secs(15));
    for r in [1, 0] {
        let reply = auth(&[("X-Original-URI", "/api/export"), ("X-Api-Key", "k1")]).await;
        assert_limit(&reply, "export", 5, r, 45);
    }
    let reply = auth(&[("X-Original-URI", "/api/export"), ("X-Api-Key", "k1")]).await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(reply.content_type(), "application/problem+json");
    assert_eq!(reply.header("retry-after"), "45");
    assert_limit(&reply, "export", 5, 0, 45);
    assert_eq!(
        reply.json(),
        json!({
            "type": QUOTA_EXCEEDED, "title": "Quota exceeded", "status": 429,
            "detail": "limit \"export\" allows 5 per 60 s; retry in 45 s",
            "violated-policies": ["export"]
        })
    );
    // The same subject through /v1/check: one counter.
    let reply = post_json(
        &app.router,
        "/v1/check",
        &json!({"user": "k1", "endpoint": "/api/export"}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn forward_auth_without_uri_or_subject_is_400() {
    let app = app(EXAMPLE_POLICY);
    let both_missing = "headers X-Original-URI and X-Forwarded-Uri are both missing: one must name the requested URI";
    for headers in [
        &[("X-Api-Key", "k1")][..],
        &[("X-Api-Key", "k1"), ("X-Original-URI", "")],
    ] {
        get(&app.router, "/v1/auth", headers)
            .await
            .assert_problem(StatusCode::BAD_REQUEST, both_missing);
    }
    // No key header, no peer address (oneshot), and X-Forwarded-For is not trusted here.
    let reply = get(
        &app.router,
        "/v1/auth",
        &[
            ("X-Original-URI", "/x"),
            ("X-Forwarded-For", "198.51.100.1"),
        ],
    )
    .await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "no subject: neither X-Api-Key nor X-User-Id is set and the client address is unknown",
    );
    let reply = get(
        &app.router,
        "/v1/auth",
        &[("X-Original-URI", "/login"), ("X-Api-Key", "k1")],
    )
    .await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "rule endpoints[3] (/login) counts per IP address (key: ip) and the request has no `ip`",
    );
}

const TRUSTING: &str = r#"
identity: { header: X-Client, trust_forwarded: true, trust_tier_header: true }
default_tier: free
tiers:
  free: { limits: [ { name: minute, algorithm: fixed_window, requests: 2, window: 1m } ] }
  pro:  { limits: [ { name: minute, algorithm: fixed_window, requests: 4, window: 1m } ] }
"#;

#[tokio::test]
async fn forward_auth_trusts_forwarded_for_and_tier_when_the_policy_says_so() {
    let app = app(TRUSTING);
    let auth =
        |headers: &'static [(&'static str, &'static str)]| get(&app.router, "/v1/auth", headers);
    let reply = auth(&[
        ("X-Original-URI", "/x"),
        ("X-Forwarded-For", "198.51.100.1, 10.0.0.1"),
    ])
    .await;
    assert_limit(&reply, "minute", 2, 1, 60);
    let reply = auth(&[
        ("X-Original-URI", "/x"),
        ("X-Forwarded-For", "198.51.100.1"),
    ])
    .await;
    assert_limit(&reply, "minute", 2, 0, 60);
    // The first hop is the subject; later hops do not matter, nor does a non-identity header.
    let reply = auth(&[
        ("X-Original-URI", "/x"),
        ("X-Forwarded-For", "198.51.100.1, 10.9.9.9"),
        ("X-Api-Key", "not the identity header here"),
    ])
    .await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(reply.header("retry-after"), "60");
    let body = json!({"user": "198.51.100.1", "endpoint": "/x"});
    assert_eq!(post_json(&app.router, "/v1/check", &body).await.status, 429);
    let reply = auth(&[
        ("X-Original-URI", "/x"),
        ("X-Forwarded-For", "198.51.100.2, 198.51.100.1"),
    ])
    .await;
    assert_limit(&reply, "minute", 2, 1, 60);
    // identity.header (X-Client) names the subject before the address.
    let reply = auth(&[
        ("X-Original-URI", "/x"),
        ("X-Client", "acct-1"),
        ("X-Forwarded-For", "198.51.100.1"),
    ])
    .await;
    assert_limit(&reply, "minute", 2, 1, 60);
    // trust_tier_header: X-Tier picks the tier.
    let reply = auth(&[
        ("X-Original-URI", "/x"),
        ("X-Client", "acct-2"),
        ("X-Tier", "pro"),
    ])
    .await;
    assert_limit(&reply, "minute", 4, 3, 60);
    auth(&[
        ("X-Original-URI", "/x"),
        ("X-Client", "acct-2"),
        ("X-Tier", "gold"),
    ])
    .await
    .assert_problem(
        StatusCode::BAD_REQUEST,
        "header X-Tier: unknown tier \"gold\"",
    );
    auth(&[
        ("X-Original-URI", "/x"),
        ("X-Forwarded-For", "unknown, 10.0.0.1"),
    ])
    .await
    .assert_problem(
        StatusCode::BAD_REQUEST,
        "header X-Forwarded-For: first hop \"unknown\" is not an IP address",
    );
    // A load balancer that writes the port: the address alone is the subject.
    for (with_port, bare) in [
        ("198.51.100.7:5678", "198.51.100.7"),
        ("[2001:db8::7]:80", "2001:db8::7"),
    ] {
        let hop = |xff: &'static str| vec![("X-Original-URI", "/x"), ("X-Forwarded-For", xff)];
        assert_limit(
            &get(&app.router, "/v1/auth", &hop(with_port)).await,
            "minute",
            2,
            1,
            60,
        );
        assert_limit(
            &get(&app.router, "/v1/auth", &hop(bare)).await,
            "minute",
            2,
            0,
            60,
        );
    }
    // Two copies of a header that decides something: the backend may read the other one.
    for (name, first, second) in [
        ("X-Client", "acct-3", "acct-4"),
        ("X-Original-URI", "/x", "/y"),
        ("X-Tier", "pro", "free"),
    ] {
        let mut headers = vec![("X-Original-URI", "/x"), ("X-Client", "acct-5")];
        headers.retain(|(n, _)| *n != name);
        headers.extend([(name, first), (name, second)]);
        get(&app.router, "/v1/auth", &headers).await.assert_problem(
            StatusCode::BAD_REQUEST,
            &format!("header {name} is sent more than once: send one"),
        );
    }
    // The same header spelt with `_`: CGI and WSGI backends read both as one (HTTP_X_CLIENT),
    // so a made-up key beside the real one would be counted while the backend honours the
    // other; alone, it would be counted by address while the backend reads a key.
    for headers in [
        vec![
            ("X-Original-URI", "/x"),
            ("X-Client", "acct-6"),
            ("X_Client", "acct-7"),
        ],
        vec![("X-Original-URI", "/x"), ("X_Client", "acct-7")],
    ] {
        get(&app.router, "/v1/auth", &headers).await.assert_problem(
            StatusCode::BAD_REQUEST,
            "header x_client is refused: backends may read it as X-Client; send X-Client only",
        );
    }
    // Underscores and dashes mixed fold to the same variable too.
    get(
        &app.router,
        "/v1/auth",
        &[("X-Original-URI", "/x"), ("X_Original-URI", "/free")],
    )
    .await
    .assert_problem(
        StatusCode::BAD_REQUEST,
        "header x_original-uri is refused: backends may read it as X-Original-URI; send X-Original-URI only",
    );
}

#[tokio::test]
async fn reports_are_202_or_a_400_naming_the_field() {
    let app = app(EXAMPLE_POLICY);
    let report = |extra: Value| {
        let mut body = json!({"user": "alice", "endpoint": "/login", "status": 401, "ip": "203.0.113.7", "latency_ms": 12});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body.as_object_mut().unwrap().retain(|_, v| !v.is_null());
        body
    };
    let reply = post_json(&app.router, "/v1/report", &report(json!({}))).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    assert!(reply.body.is_empty());
    let reply = post_json(
        &app.router,
        "/v1/report",
        &report(json!({"ip": null, "latency_ms": 0.5})),
    )
    .await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    for (extra, detail) in [
        (json!({"status": null}), "field `status` is required"),
        (
            json!({"status": 99}),
            "field `status` must be between 100 and 599 (it is 99)",
        ),
        (
            json!({"status": 600}),
            "field `status` must be between 100 and 599 (it is 600)",
        ),
        (
            json!({"ip": "203.0.113.300"}),
            "field `ip` is not an IP address: \"203.0.113.300\"",
        ),
        (
            json!({"latency_ms": -1}),
            "field `latency_ms` must be a number of milliseconds, 0 to 86400000 (a day)",
        ),
        (
            json!({"latency_ms": 1e308}),
            "field `latency_ms` must be a number of milliseconds, 0 to 86400000 (a day)",
        ),
        (json!({"user": null}), "field `user` is required"),
        (
            json!({"endpoint": ""}),
            "field `endpoint` must be 1 to 2048 bytes (it has 0)",
        ),
        (
            json!({"stauts": 200}),
            "unknown field `stauts`, expected one of `user`, `endpoint`, `status`, `ip`, `latency_ms`",
        ),
    ] {
        post_json(&app.router, "/v1/report", &report(extra))
            .await
            .assert_problem(StatusCode::BAD_REQUEST, detail);
    }
}

#[tokio::test]
async fn health_and_readiness() {
    let app = app(EXAMPLE_POLICY);
    let reply = get(&app.router, "/healthz", &[]).await;
    assert_eq!(
        (reply.status, reply.json()),
        (StatusCode::OK, json!({"status": "ok"}))
    );
    let reply = get(&app.router, "/readyz", &[]).await;
    assert_eq!(
        (reply.status, reply.json()),
        (StatusCode::OK, json!({"status": "ready"}))
    );
}

#[path = "http_ops/openapi.rs"]
mod openapi;
