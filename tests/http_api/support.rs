//! What the HTTP API tests share: the fields a decision and a problem carry, a /v1/check call,
//! and the rate limit headers checked against the body.

use crate::common::http::{App, Reply, post_json, structured};
use serde_json::{Value, json};
use std::collections::BTreeSet;

pub const DECISION_FIELDS: [&str; 14] = [
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
pub const PROBLEM_FIELDS: [&str; 5] = ["type", "title", "status", "detail", "violated-policies"];
pub const QUOTA_EXCEEDED: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";

pub fn keys(body: &Value) -> BTreeSet<&str> {
    body.as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

pub async fn check(app: &App, body: Value) -> Reply {
    post_json(&app.router, "/v1/check", &body).await
}

pub fn export(user: &str) -> Value {
    json!({"user": user, "endpoint": "/api/export"})
}

/// The rate limit headers agree with the body: `name` is the headline limit, `window_s` its
/// window.
#[track_caller]
pub fn assert_headers_match(reply: &Reply, body: &Value, name: &str, window_s: i64) {
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
