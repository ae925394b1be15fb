//! What scripts/api-fuzz (schemathesis against /openapi.json) found, one test each, so the
//! OpenAPI document and the daemon stay in agreement. docs/testing.md, "API fuzzing", has the runs.

mod common;

use axum::body::Body;
use axum::http::{Method, StatusCode};
use common::EXAMPLE_POLICY;
use common::http::{app_with, call, get};
use serde_json::Value;

const TOKEN: &str = "api fuzz token";

/// The OpenAPI document as the daemon serves it, admin API enabled.
async fn document() -> Value {
    let app = app_with(EXAMPLE_POLICY, Some(TOKEN));
    let reply = get(&app.router, "/openapi.json", &[]).await;
    assert_eq!(reply.status, StatusCode::OK);
    reply.json()
}

/// Every operation of the document, as (method, path, operation).
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let paths = doc["paths"].as_object().expect("paths");
    paths
        .iter()
        .flat_map(|(path, item)| {
            let item = item.as_object().expect("a path item");
            item.iter()
                .filter(|(method, _)| Method::from_bytes(method.to_uppercase().as_bytes()).is_ok())
                .map(|(method, op)| (method.clone(), path.clone(), op.clone()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Finding (seed 1): PUT /v1/admin/thresholds and PUT /v1/admin/subjects/{user}/tier answered
/// 415 to a request without Content-Type, which their documents did not list (ST103,
/// undocumented status code). Every operation that reads a JSON body documents 413 and 415.
#[tokio::test]
async fn every_operation_with_a_body_documents_413_and_415() {
    let doc = document().await;
    let with_body: Vec<_> = operations(&doc)
        .into_iter()
        .filter(|(_, _, op)| op.get("requestBody").is_some())
        .collect();
    assert!(with_body.len() >= 5, "{with_body:?}");
    for (method, path, op) in &with_body {
        for status in ["413", "415"] {
            let response = &op["responses"][status];
            assert!(
                response.is_object(),
                "{method} {path} does not document {status}"
            );
            assert!(
                response["content"]["application/problem+json"].is_object(),
                "{method} {path}: {status} is not problem+json: {response}"
            );
        }
    }
}

/// The admin PUTs without Content-Type: the 415 the document now lists, as problem+json.
#[tokio::test]
async fn admin_puts_without_content_type_answer_a_documented_415() {
    let app = app_with(EXAMPLE_POLICY, Some(TOKEN));
    let bearer = format!("Bearer {TOKEN}");
    for path in ["/v1/admin/thresholds", "/v1/admin/subjects/0/tier"] {
        let reply = call(
            &app.router,
            Method::PUT,
            path,
            &[("authorization", &bearer)],
            Body::empty(),
        )
        .await;
        reply.assert_problem(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json (the header is missing)",
        );
    }
}

/// Finding (every run, a schemathesis warning): batch and report requests built from the
/// document were mostly refused, because fields the handlers require were optional there (they
/// are `Option`s in Rust so that a missing one gets a clear 400). The document now requires
/// them, with the bounds the handlers enforce.
#[tokio::test]
async fn request_schemas_require_what_the_handlers_require() {
    let doc = document().await;
    let schema = |name: &str| doc["components"]["schemas"][name].clone();
    let required = |name: &str| -> Vec<String> {
        let mut fields: Vec<String> = schema(name)["required"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} has no required list: {}", schema(name)))
            .iter()
            .map(|v| v.as_str().expect("a field name").to_owned())
            .collect();
        fields.sort();
        fields
    };
    assert_eq!(required("CheckBody"), ["endpoint", "user"]);
    assert_eq!(required("BatchBody"), ["requests"]);
    assert_eq!(required("ReportBody"), ["endpoint", "status", "user"]);
    for (name, field) in [
        ("CheckBody", "user"),
        ("CheckBody", "endpoint"),
        ("ReportBody", "user"),
        ("ReportBody", "endpoint"),
    ] {
        let property = &schema(name)["properties"][field];
        assert_eq!(property["type"], "string", "{name}.{field}: {property}");
        assert_eq!(property["minLength"], 1, "{name}.{field}: {property}");
    }
    let requests = &schema("BatchBody")["properties"]["requests"];
    assert_eq!(
        (&requests["minItems"], &requests["maxItems"]),
        (&Value::from(1), &Value::from(1000)),
        "{requests}"
    );
    let status = &schema("ReportBody")["properties"]["status"];
    assert_eq!(
        (&status["minimum"], &status["maximum"]),
        (&Value::from(100), &Value::from(599)),
        "{status}"
    );
}
