//! The admin API through the router: enabling and authentication, live thresholds, the subject
//! view, flags and the allowlist, stored tiers and reload. An engine on the embedded store with a manual clock.
//!
//! This file tests the gate (disabled, missing or wrong token) and the OpenAPI description;
//! `tests/http_admin/` holds the harness and the tests of each route.

mod common;

#[path = "http_admin/flags.rs"]
mod flags;
#[path = "http_admin/harness.rs"]
mod harness;
#[path = "http_admin/reload.rs"]
mod reload;
#[path = "http_admin/subjects.rs"]
mod subjects;
#[path = "http_admin/thresholds.rs"]
mod thresholds;
#[path = "http_admin/tier.rs"]
mod tier;

use axum::http::{Method, StatusCode, header};
use harness::{TOKEN, bearer, harness, send};
use serde_json::json;

/// Every admin route with a body it accepts.
const ROUTES: [(&str, &str, Option<&str>); 9] = [
    ("GET", "/v1/admin/thresholds", None),
    ("PUT", "/v1/admin/thresholds", Some("{}")),
    ("GET", "/v1/admin/subjects/alice", None),
    (
        "PUT",
        "/v1/admin/subjects/alice/tier",
        Some(r#"{"tier": "pro"}"#),
    ),
    ("POST", "/v1/admin/reload", None),
    ("GET", "/v1/admin/flagged", None),
    ("DELETE", "/v1/admin/subjects/alice/flag", None),
    (
        "PUT",
        "/v1/admin/subjects/alice/allowlist",
        Some(r#"{"ttl_seconds": 60}"#),
    ),
    ("DELETE", "/v1/admin/subjects/alice/allowlist", None),
];

fn method(name: &str) -> Method {
    name.parse().unwrap()
}

#[tokio::test]
async fn disabled_admin_api_is_404_on_every_route_whatever_the_token() {
    let h = harness(None);
    for (m, uri, body) in ROUTES {
        for auth in [None, Some(bearer())] {
            let reply = send(&h.app, method(m), uri, auth.as_deref(), body).await;
            reply.assert_problem(
                StatusCode::NOT_FOUND,
                "the admin API is disabled: set RATEWARDEN_ADMIN_TOKEN",
            );
        }
    }
    // Nothing was changed by the refused PUT.
    assert_eq!(h.engine.stored_tier("alice").await, None);
}

#[tokio::test]
async fn missing_or_wrong_token_is_401_with_a_bearer_challenge() {
    let h = harness(Some(TOKEN));
    for (m, uri, body) in ROUTES {
        let reply = send(&h.app, method(m), uri, None, body).await;
        reply.assert_problem(
            StatusCode::UNAUTHORIZED,
            "missing Authorization header: the admin API needs `Authorization: Bearer <token>`",
        );
        assert_eq!(reply.headers[header::WWW_AUTHENTICATE], "Bearer");

        let wrong = [
            "Bearer wrong",
            "Bearer s3cret-admin-toke",
            "Bearer s3cret-admin-token2",
            "Bearer S3CRET-ADMIN-TOKEN",
        ];
        for auth in wrong {
            let reply = send(&h.app, method(m), uri, Some(auth), body).await;
            reply.assert_problem(StatusCode::UNAUTHORIZED, "wrong admin token");
            assert_eq!(
                reply.headers[header::WWW_AUTHENTICATE],
                "Bearer error=\"invalid_token\""
            );
        }
        for auth in [TOKEN, "Basic czNjcmV0", "Bearer ", "Bearer"] {
            let reply = send(&h.app, method(m), uri, Some(auth), body).await;
            reply.assert_problem(
                StatusCode::UNAUTHORIZED,
                "the Authorization header must be `Bearer <token>`",
            );
            assert!(
                reply.headers[header::WWW_AUTHENTICATE]
                    .to_str()
                    .unwrap()
                    .starts_with("Bearer")
            );
        }
    }
    assert_eq!(h.engine.stored_tier("alice").await, None);

    // The scheme is case-insensitive (RFC 9110).
    let reply = send(
        &h.app,
        Method::GET,
        "/v1/admin/thresholds",
        Some(&format!("bearer {TOKEN}")),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
}

#[tokio::test]
async fn openapi_describes_the_admin_routes_behind_a_bearer_token() {
    let h = harness(None);
    let reply = send(&h.app, Method::GET, "/openapi.json", None, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    let doc = reply.json;
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"],
        json!({"type": "http", "scheme": "bearer"})
    );
    for (path, method) in [
        ("/v1/admin/thresholds", "get"),
        ("/v1/admin/thresholds", "put"),
        ("/v1/admin/subjects/{user}", "get"),
        ("/v1/admin/subjects/{user}/tier", "put"),
        ("/v1/admin/reload", "post"),
    ] {
        let op = &doc["paths"][path][method];
        assert_eq!(op["tags"], json!(["admin"]), "{method} {path}");
        assert_eq!(op["security"], json!([{"bearer": []}]), "{method} {path}");
    }
}

#[tokio::test]
async fn an_authorization_header_sent_twice_is_refused_whichever_copy_holds_the_token() {
    let h = harness(Some(TOKEN));
    for pair in [
        [bearer(), "Bearer wrong".to_owned()],
        ["Bearer wrong".to_owned(), bearer()],
    ] {
        let headers: Vec<(&str, &str)> =
            pair.iter().map(|v| ("authorization", v.as_str())).collect();
        let reply =
            common::http::call(&h.app, Method::GET, "/v1/admin/thresholds", &headers, "").await;
        reply.assert_problem(
            StatusCode::UNAUTHORIZED,
            "the Authorization header is sent more than once: send one",
        );
    }
}

/// A stray query parameter on an admin route gets an answer `/openapi.json` lists for it.
#[tokio::test]
async fn a_stray_query_parameter_gets_a_status_the_openapi_document_lists() {
    let h = harness(Some(TOKEN));
    let doc = send(&h.app, Method::GET, "/openapi.json", None, None)
        .await
        .json;
    let paths = doc["paths"].as_object().expect("paths");
    let mut tried = 0;
    for (path, item) in paths.iter().filter(|(p, _)| p.starts_with("/v1/admin/")) {
        for (verb, op) in item.as_object().expect("operations") {
            let uri = format!("{}?stray=1", path.replace("{user}", "alice"));
            let body = op.get("requestBody").map(|_| "{}");
            let reply = send(
                &h.app,
                method(&verb.to_uppercase()),
                &uri,
                Some(&bearer()),
                body,
            )
            .await;
            let status = reply.status.as_u16().to_string();
            assert!(
                op["responses"].get(&status).is_some(),
                "{verb} {uri} answered {status}, which /openapi.json does not list: {}",
                reply.json
            );
            tried += 1;
        }
    }
    assert!(tried >= 9, "{tried} admin operations");
}
