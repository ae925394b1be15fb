//! /v1/check/batch: items answered in order, each as if alone; a bad batch is a 400 naming the
//! bad item and consumes nothing.

use crate::common::EXAMPLE_POLICY;
use crate::common::http::{App, Reply, app, post_json, post_raw};
use crate::support::{DECISION_FIELDS, check, export, keys};
use axum::http::StatusCode;
use serde_json::{Value, json};

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
        (json!({"requests": null}), "field `requests` is required"),
        (
            json!({"requests": 5}),
            "field `requests`: invalid type: integer `5`, expected a sequence",
        ),
        // Counted, not built: a 3 MB body of `{}`s costs no more than a full batch.
        (
            json!({ "requests": vec![json!({}); 1_000_000] }),
            "field `requests` must hold 1 to 1000 items (it holds 1000000)",
        ),
        (
            json!({"requests": [item, item, {"user": "z", "endpoint": "/api/export", "cost": 0}]}),
            "field `requests[2].cost` must be between 1 and 1000000 (it is 0)",
        ),
        (
            json!({"requests": [item, item, {"user": "z", "endpoint": "/api/export", "cost": "2"}]}),
            "field `requests[2].cost`: invalid type: string \"2\", expected a JSON number",
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
            "field `requests[1]`: invalid type: sequence, expected a JSON object",
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

/// A batch's body may be 4 MiB, a single check's 64 KiB: a batch is refused for its item count,
/// never for the size of 1000 items.
#[tokio::test]
async fn a_batch_body_is_capped_at_4_mib_and_a_check_body_at_64_kib() {
    let app = app(EXAMPLE_POLICY);
    let over = |cap: usize, prefix: &str| format!("{prefix}{}", " ".repeat(cap + 1 - prefix.len()));
    let batch = over(
        4 * 1024 * 1024,
        r#"{"requests":[{"user":"a","endpoint":"/x"}]}"#,
    );
    post_raw(
        &app.router,
        "/v1/check/batch",
        Some("application/json"),
        batch,
    )
    .await
    .assert_problem(
        StatusCode::PAYLOAD_TOO_LARGE,
        "request body exceeds 4194304 bytes",
    );
    let within = " ".repeat(64 * 1024) + r#"{"requests":[{"user":"a","endpoint":"/x"}]}"#;
    let reply = post_raw(
        &app.router,
        "/v1/check/batch",
        Some("application/json"),
        within,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let check = over(64 * 1024, r#"{"user":"a","endpoint":"/x"}"#);
    post_raw(&app.router, "/v1/check", Some("application/json"), check)
        .await
        .assert_problem(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request body exceeds 65536 bytes",
        );
}
