//! Requests /v1/check cannot decide or parse: each is a 4xx problem naming the problem (exact
//! `detail`), consumes nothing, and unknown routes and methods are problems too.

use crate::common::EXAMPLE_POLICY;
use crate::common::http::{app, call, post_raw};
use crate::support::check;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

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
            "lone surrogate",
            json_ct,
            r#"{"user": "\ud800", "endpoint": "/x"}"#.into(),
            400,
            "malformed JSON: a \\u escape is a lone UTF-16 surrogate, not a character at line 1 \
             column 17"
                .into(),
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
            "field `cost` must be a whole number between 1 and 1000000 (it is 1.5)".into(),
        ),
        (
            "cost past every integer type",
            json_ct,
            ok(json!({"cost": 9_223_372_036_854_775_808u64})),
            400,
            "field `cost` must be between 1 and 1000000 (it is 9223372036854775808)".into(),
        ),
        (
            "cost 1e23",
            json_ct,
            ok(json!({"cost": 1e23})),
            400,
            "field `cost` must be between 1 and 1000000 (it is 1e+23)".into(),
        ),
        (
            "cost \"1\"",
            json_ct,
            ok(json!({"cost": "1"})),
            400,
            "field `cost`: invalid type: string \"1\", expected a JSON number".into(),
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
            "invalid request: invalid type: sequence, expected a JSON object".into(),
        ),
        // Serde's derived structs would take their fields in order from an array.
        (
            "fields as array",
            json_ct,
            json!(["u", "/x", null, null, 2]).to_string(),
            400,
            "invalid request: invalid type: sequence, expected a JSON object".into(),
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
    let reply = call(&app.router, Method::CONNECT, "example.com:443", &[], "").await;
    reply.assert_problem(
        StatusCode::NOT_FOUND,
        "no route for CONNECT example.com:443",
    );
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

#[tokio::test]
async fn a_body_that_would_read_as_something_else_is_refused_by_name() {
    let app = app(EXAMPLE_POLICY);
    let body = json!({"user": "u", "endpoint": "/x"}).to_string();
    let json_ct = ("content-type", "application/json");
    type Headers<'a> = &'a [(&'a str, &'a str)];
    let cases: [(Headers, u16, &str); 4] = [
        (
            &[json_ct, ("content-encoding", "gzip")],
            415,
            "Content-Encoding \"gzip\" is not supported: send the body uncompressed",
        ),
        (
            &[("content-type", "application/json; charset=utf-16")],
            415,
            "Content-Type charset must be utf-8 (JSON is UTF-8), not \"utf-16\"",
        ),
        (
            &[json_ct, ("content-type", "text/plain")],
            400,
            "header Content-Type is sent more than once: send one",
        ),
        (
            &[("content-type", "text/plain"), json_ct],
            400,
            "header Content-Type is sent more than once: send one",
        ),
    ];
    for path in ["/v1/check", "/v1/report"] {
        for (headers, status, detail) in cases {
            let reply = call(&app.router, Method::POST, path, headers, body.clone()).await;
            let status = StatusCode::from_u16(status).unwrap();
            reply.assert_problem(status, detail);
        }
    }
    // What says plainly "UTF-8 JSON, not encoded" is read as before.
    let plain = [
        ("content-type", "application/json; charset=\"UTF-8\""),
        ("content-encoding", "identity"),
    ];
    let reply = call(&app.router, Method::POST, "/v1/check", &plain, body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
}
