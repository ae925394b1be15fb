//! The OpenAPI document kept in sync with the router: every served route documented, and a
//! denial's schema declaring every member the body has.

use crate::common::EXAMPLE_POLICY;
use crate::common::http::{app, app_with, call, get, post_json};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use std::collections::BTreeSet;

#[tokio::test]
async fn openapi_documents_exactly_the_served_routes() {
    const TOKEN: &str = "admin test token";
    // Admin routes answer 404 while the admin API is disabled, so the probe enables it.
    let app = app_with(EXAMPLE_POLICY, Some(TOKEN));
    let reply = get(&app.router, "/openapi.json", &[]).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.content_type(), "application/json");
    let doc = reply.json();
    let paths = doc["paths"].as_object().expect("paths");
    let documented: BTreeSet<&str> = paths.keys().map(String::as_str).collect();
    let core: BTreeSet<&str> = [
        "/v1/check",
        "/v1/check/batch",
        "/v1/auth",
        "/v1/report",
        "/healthz",
        "/readyz",
        "/metrics",
    ]
    .into();
    let extra: Vec<&&str> = documented.difference(&core).collect();
    assert!(
        core.is_subset(&documented),
        "undocumented: {:?}",
        core.difference(&documented)
    );
    assert!(
        extra.iter().all(|p| p.starts_with("/v1/admin/")),
        "unexpected paths: {extra:?}"
    );

    let methods = |path: &str| -> Vec<&str> {
        let ops = paths[path].as_object().unwrap().keys().map(String::as_str);
        ops.filter(|k| Method::from_bytes(k.to_uppercase().as_bytes()).is_ok())
            .collect()
    };
    for (path, method) in [
        ("/v1/check", "post"),
        ("/v1/check/batch", "post"),
        ("/v1/report", "post"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/metrics", "get"),
    ] {
        assert_eq!(methods(path), [method], "{path}");
    }
    // Forward auth answers any method (some proxies send the client's).
    assert_eq!(
        methods("/v1/auth"),
        [
            "delete", "get", "head", "options", "patch", "post", "put", "trace"
        ]
    );

    let bearer = format!("Bearer {TOKEN}");
    let mut probed = 0;
    for (path, item) in paths {
        let concrete = path.replace("{user}", "alice");
        for (method, _) in item.as_object().unwrap() {
            let Ok(method) = Method::from_bytes(method.to_uppercase().as_bytes()) else {
                continue; // "parameters", "summary" and the like
            };
            let headers = [
                ("authorization", bearer.as_str()),
                ("content-type", "application/json"),
            ];
            let body = if method == Method::GET { "" } else { "{}" };
            let reply = call(&app.router, method.clone(), &concrete, &headers, body).await;
            let what = format!("{method} {concrete}: {} {}", reply.status, reply.text());
            assert_ne!(reply.status, StatusCode::METHOD_NOT_ALLOWED, "{what}");
            if reply.status == StatusCode::NOT_FOUND {
                let detail = reply.json()["detail"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                assert!(!detail.starts_with("no route for"), "{what}");
            }
            probed += 1;
        }
    }
    assert!(probed >= core.len(), "{probed} operations probed");
    // And what is not documented is not served.
    let reply = get(&app.router, "/v1/checks", &[]).await;
    reply.assert_problem(StatusCode::NOT_FOUND, "no route for GET /v1/checks");
}

/// The members a schema declares, those of its `allOf` parts (references or inline) included.
fn schema_members(doc: &Value, schema: &Value) -> BTreeSet<String> {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.rsplit('/').next().unwrap_or_default();
        return schema_members(doc, &doc["components"]["schemas"][name]);
    }
    let mut members: BTreeSet<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    for part in schema["allOf"].as_array().into_iter().flatten() {
        members.extend(schema_members(doc, part));
    }
    members
}

#[tokio::test]
async fn openapi_declares_every_member_of_a_denial() {
    let app = app(EXAMPLE_POLICY);
    let doc = get(&app.router, "/openapi.json", &[]).await.json();
    let responses = &doc["paths"]["/v1/check"]["post"]["responses"];
    for status in ["429", "503"] {
        assert_eq!(
            responses[status]["content"]["application/problem+json"]["schema"]["$ref"],
            "#/components/schemas/Denial",
            "{status}"
        );
    }
    let declared = schema_members(&doc, &json!({"$ref": "#/components/schemas/Denial"}));
    let request = json!({"user": "dora", "endpoint": "/api/search"});
    let mut denial = post_json(&app.router, "/v1/check", &request).await;
    while denial.status == StatusCode::OK {
        denial = post_json(&app.router, "/v1/check", &request).await;
    }
    assert_eq!(denial.status, StatusCode::TOO_MANY_REQUESTS);
    let body = denial.json();
    let served: BTreeSet<String> = body.as_object().unwrap().keys().cloned().collect();
    // `violated-policies` is an extension member: the Problem schema takes any.
    let undeclared: Vec<&String> = served
        .difference(&declared)
        .filter(|m| *m != "violated-policies")
        .collect();
    assert!(undeclared.is_empty(), "not in the schema: {undeclared:?}");
    for member in ["type", "title", "status", "detail", "allowed", "reason"] {
        assert!(declared.contains(member), "{member}");
    }
}
