//! Request bodies of check, batch, report and the admin thresholds and tier routes, through the
//! real router: never a panic, never a 5xx, every 4xx problem+json.
//!
//! Input: byte 0 picks the route, byte 1 the Content-Type, the rest is the body.
#![no_main]

use axum::body::Body;
use axum::http::{Method, Request, header};
use libfuzzer_sys::fuzz_target;
use ratewarden::policy::Policy;
use ratewarden_fuzz::{ADMIN_TOKEN, EXAMPLE_POLICY, app, compiled, send_and_check};
use std::sync::OnceLock;

const ROUTES: [(Method, &str); 5] = [
    (Method::POST, "/v1/check"),
    (Method::POST, "/v1/check/batch"),
    (Method::POST, "/v1/report"),
    (Method::PUT, "/v1/admin/thresholds"),
    (Method::PUT, "/v1/admin/subjects/fuzz-user/tier"),
];

const CONTENT_TYPES: [Option<&str>; 4] = [
    Some("application/json"),
    Some("application/json; charset=utf-8"),
    Some("text/plain"),
    None,
];

fuzz_target!(|data: &[u8]| {
    let [route, content_type, body @ ..] = data else {
        return;
    };
    static POLICY: OnceLock<Policy> = OnceLock::new();
    let router = app(compiled(&POLICY, EXAMPLE_POLICY));
    let (method, path) = &ROUTES[usize::from(*route) % ROUTES.len()];
    let mut request = Request::builder()
        .method(method)
        .uri(*path)
        .header(header::AUTHORIZATION, format!("Bearer {ADMIN_TOKEN}"));
    // Three in four inputs are JSON, so most reach the body parser.
    let content_type = match content_type % 8 {
        0 => CONTENT_TYPES[2],
        1 => CONTENT_TYPES[3],
        n => CONTENT_TYPES[usize::from(n) % 2],
    };
    if let Some(value) = content_type {
        request = request.header(header::CONTENT_TYPE, value);
    }
    let request = request
        .body(Body::from(body.to_vec()))
        .expect("a valid request");
    send_and_check(router, request);
});
