//! The fuzz targets' inputs in the normal suite: every committed seed (fuzz/corpus/<target>/)
//! and every crash turned regression (fuzz/regressions/<target>/, none found so far) goes
//! through what its target drives, with the same assertions: never a panic, never a 5xx, every
//! 4xx problem+json. scripts/fuzz runs the fuzzer itself; this keeps its findings fixed.

mod common;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, StatusCode};
use common::EXAMPLE_POLICY;
use common::http::{app_with, send};
use ratewarden::envoy_config::Domain;
use ratewarden::policy::Policy;
use std::path::{Path, PathBuf};

const ADMIN_TOKEN: &str = "fuzz-admin-token";

/// The inputs of one target: its seeds and its regressions.
fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut found = Vec::new();
    for folder in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(folder).join(target)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let bytes = std::fs::read(&path).expect("a readable input");
            found.push((path, bytes));
        }
    }
    found.sort();
    found
}

#[test]
fn policy_inputs_compile_or_fail_with_messages() {
    let all = inputs("policy_yaml");
    assert!(all.len() > 10, "seeds are missing: {all:?}");
    for (path, bytes) in all {
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        if let Err(errors) = Policy::from_yaml(text, Path::new("/nonexistent/ratewarden-fuzz")) {
            assert!(
                errors.0.iter().all(|e| !e.message.is_empty()),
                "{}: {errors:?}",
                path.display()
            );
        }
    }
}

#[test]
fn envoy_inputs_compile_or_fail_with_messages() {
    let all = inputs("envoy_config");
    assert!(all.len() > 5, "seeds are missing: {all:?}");
    for (path, bytes) in all {
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        match Domain::from_yaml(text, "fuzz.yaml") {
            Ok(domain) => {
                let _ = domain.lookup(&[("key", "value")]);
            }
            Err(errors) => assert!(
                errors.0.iter().all(|e| !e.message.is_empty()),
                "{}: {errors:?}",
                path.display()
            ),
        }
    }
}

/// Sends `request` to a fresh router over `policy` (admin API on) and asserts what the HTTP
/// targets assert; returns the status.
async fn assert_no_server_error(path: &Path, policy: &str, request: Request<Body>) -> StatusCode {
    let app = app_with(policy, Some(ADMIN_TOKEN));
    let reply = send(&app.router, request).await;
    assert!(
        !reply.status.is_server_error(),
        "{}: {} {}",
        path.display(),
        reply.status,
        reply.text()
    );
    if reply.status.is_client_error() {
        assert_eq!(
            reply.content_type(),
            "application/problem+json",
            "{}",
            path.display()
        );
    }
    reply.status
}

/// As fuzz/fuzz_targets/http_bodies.rs reads its input: route, Content-Type, body.
#[tokio::test]
async fn http_body_inputs_never_answer_5xx() {
    const ROUTES: [(Method, &str); 5] = [
        (Method::POST, "/v1/check"),
        (Method::POST, "/v1/check/batch"),
        (Method::POST, "/v1/report"),
        (Method::PUT, "/v1/admin/thresholds"),
        (Method::PUT, "/v1/admin/subjects/fuzz-user/tier"),
    ];
    let all = inputs("http_bodies");
    assert!(all.len() > 10, "seeds are missing: {all:?}");
    let mut answered_ok = 0;
    for (path, bytes) in all {
        let [route, content_type, body @ ..] = &bytes[..] else {
            continue;
        };
        let (method, uri) = &ROUTES[usize::from(*route) % ROUTES.len()];
        let mut request = Request::builder()
            .method(method)
            .uri(*uri)
            .header("authorization", format!("Bearer {ADMIN_TOKEN}"));
        let content_type = match content_type % 8 {
            0 => Some("text/plain"),
            1 => None,
            n if n % 2 == 0 => Some("application/json"),
            _ => Some("application/json; charset=utf-8"),
        };
        if let Some(value) = content_type {
            request = request.header("content-type", value);
        }
        let request = request.body(Body::from(body.to_vec())).expect("a request");
        let status = assert_no_server_error(&path, EXAMPLE_POLICY, request).await;
        answered_ok += usize::from(status == StatusCode::OK);
    }
    // The hand-written seeds include valid requests for every route: they must still pass.
    assert!(answered_ok >= 5, "only {answered_ok} seeds were accepted");
}

/// As fuzz/fuzz_targets/auth_headers.rs reads its input: flags (bit 0: the policy trusts
/// X-Forwarded-For and X-Tier), then `name: value` lines. The peer address (bits 1 and 2)
/// is left out: oneshot requests have none.
#[tokio::test]
async fn auth_header_inputs_never_answer_5xx() {
    let trusting = EXAMPLE_POLICY
        .replace("trust_forwarded: false", "trust_forwarded: true")
        .replace("trust_tier_header: false", "trust_tier_header: true");
    let all = inputs("auth_headers");
    assert!(all.len() > 3, "seeds are missing: {all:?}");
    for (path, bytes) in all {
        let Some((flags, lines)) = bytes.split_first() else {
            continue;
        };
        let mut request = Request::builder().method("GET").uri("/v1/auth");
        for line in lines.split(|&b| b == b'\n') {
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(&line[..colon]),
                HeaderValue::from_bytes(line[colon + 1..].trim_ascii_start()),
            ) {
                request = request.header(name, value);
            }
        }
        let request = request.body(Body::empty()).expect("a request");
        let policy = if flags & 1 == 0 {
            EXAMPLE_POLICY
        } else {
            &trusting
        };
        assert_no_server_error(&path, policy, request).await;
    }
}
