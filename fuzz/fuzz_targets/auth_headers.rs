//! Forward auth (`/v1/auth`): arbitrary header names and values, never a panic or a 5xx.
//!
//! Input: byte 0 picks the policy (trusting X-Forwarded-For and X-Tier, or not) and whether the
//! client address is known; the rest is header lines `name: value`, split at the first colon.
//! Lines that are not a valid header name or value are skipped (hyper refuses them on the wire).
#![no_main]

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderName, HeaderValue, Request};
use libfuzzer_sys::fuzz_target;
use ratewarden::policy::Policy;
use ratewarden_fuzz::{EXAMPLE_POLICY, app, compiled, send_and_check};
use std::net::SocketAddr;
use std::sync::OnceLock;

fuzz_target!(|data: &[u8]| {
    let [flags, lines @ ..] = data else {
        return;
    };
    static PLAIN: OnceLock<Policy> = OnceLock::new();
    static TRUSTING: OnceLock<Policy> = OnceLock::new();
    let policy = match flags & 1 {
        0 => compiled(&PLAIN, EXAMPLE_POLICY),
        _ => compiled(
            &TRUSTING,
            &EXAMPLE_POLICY
                .replace("trust_forwarded: false", "trust_forwarded: true")
                .replace("trust_tier_header: false", "trust_tier_header: true"),
        ),
    };
    let mut request = Request::builder().method("GET").uri("/v1/auth");
    for line in lines.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name),
            HeaderValue::from_bytes(value.trim_ascii_start()),
        ) else {
            continue;
        };
        request = request.header(name, value);
    }
    let mut request = request.body(Body::empty()).expect("a valid request");
    if flags & 2 != 0 {
        let peer: SocketAddr = match flags & 4 {
            0 => ([203, 0, 113, 7], 40_000).into(),
            _ => "[2001:db8::7]:40000".parse().expect("an address"),
        };
        request.extensions_mut().insert(ConnectInfo(peer));
    }
    send_and_check(app(policy), request);
});
