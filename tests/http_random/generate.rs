//! The kinds of request the fuzzer sends, and how often: valid checks, hostile JSON, forward
//! auth, the admin API, random routes, broken HTTP, garbage and huge headers.
//!
//! The weights and the order of the draws are the run's identity: changing them changes what a
//! printed seed replays.

use crate::ADMIN_TOKEN;
use crate::bodies::{IPS, json_body, tier};
use crate::json::object;
use crate::parts::{
    HEADER_NAMES, PATHS, break_protocol, content_type, framing, header_value, path, random_headers,
    random_method,
};
use crate::request::{Length, Request};
use crate::rng::{Rng, VISIBLE};

/// A check (or a batch of them, or a report) that is valid in every way.
fn valid(rng: &mut Rng) -> Request {
    fn item(rng: &mut Rng) -> String {
        let endpoint = rng.pick(&["/api/search", "/api/export", "/sms/send", "/login", "/else"]);
        let mut item = format!(
            r#"{{"user":"user-{}","endpoint":"{endpoint}""#,
            rng.below(3000)
        );
        if endpoint == "/login" || rng.one_in(3) {
            item.push_str(&format!(
                r#","ip":"{}""#,
                rng.pick(&["203.0.113.7", "2001:db8::1"])
            ));
        }
        if rng.one_in(3) {
            item.push_str(&format!(
                r#","tier":"{}""#,
                rng.pick(&["free", "pro", "enterprise"])
            ));
        }
        if rng.one_in(3) {
            item.push_str(&format!(r#","cost":{}"#, rng.range(1, 3)));
        }
        item.push('}');
        item
    }
    let (target, body, expect): (_, _, &'static [u16]) = match rng.below(4) {
        0 | 1 => ("/v1/check", item(rng), &[200, 429]),
        2 => {
            let items: Vec<String> = (0..rng.range(1, 30)).map(|_| item(rng)).collect();
            let body = format!(r#"{{"requests":[{}]}}"#, items.join(","));
            ("/v1/check/batch", body, &[200])
        }
        _ => {
            let body = format!(
                r#"{{"user":"user-{}","endpoint":"/login","status":{},"latency_ms":{}}}"#,
                rng.below(3000),
                rng.pick(&[200, 401, 500]),
                rng.pick(&["0", "12", "3.5"])
            );
            ("/v1/report", body, &[202])
        }
    };
    let mut r = Request::new("valid", "POST", target);
    r.header(
        "Content-Type",
        rng.pick(&["application/json", "application/json; charset=utf-8"]),
    );
    r.body = body.into_bytes();
    r.length = if rng.one_in(5) {
        Length::Chunked
    } else {
        Length::Exact
    };
    r.expect = Some(expect);
    r
}

pub fn generate(rng: &mut Rng) -> Request {
    let mut request = match rng.below(100) {
        0..=7 => valid(rng),
        // JSON endpoints with hostile bodies.
        8..=49 => {
            let target = rng.pick(&["/v1/check", "/v1/check", "/v1/check/batch", "/v1/report"]);
            let mut r = Request::new("json", "POST", target);
            content_type(rng, &mut r);
            r.body = json_body(rng, target);
            if rng.one_in(5) {
                random_headers(rng, &mut r);
            }
            if rng.one_in(20) {
                r.header("Expect", "100-continue");
            }
            framing(rng, &mut r);
            r
        }
        // Forward auth with random identity and URI headers.
        50..=64 => {
            let mut r = Request::new("auth", "GET", "/v1/auth");
            for (name, p) in [
                ("X-Original-URI", 3),
                ("X-Forwarded-Uri", 5),
                ("X-Api-Key", 2),
                ("X-User-Id", 4),
                ("X-Forwarded-For", 4),
                ("X-Tier", 4),
            ] {
                if rng.one_in(p) {
                    let value = if rng.one_in(2) {
                        match name {
                            "X-Original-URI" | "X-Forwarded-Uri" => rng
                                .pick(&[
                                    "/api/export",
                                    "/api/search?q=1",
                                    "/login",
                                    "https://h/sms/send#x",
                                    "/",
                                ])
                                .as_bytes()
                                .to_vec(),
                            "X-Forwarded-For" => rng.pick(IPS).as_bytes().to_vec(),
                            "X-Tier" => rng.pick(&[&b"pro"[..], b"gold", b"enterprise"]).to_vec(),
                            _ => format!("user-{}", rng.below(3000)).into_bytes(),
                        }
                    } else {
                        header_value(rng)
                    };
                    r.header(name, value);
                }
            }
            if rng.one_in(3) {
                random_headers(rng, &mut r);
            }
            if rng.one_in(10) {
                r.method = random_method(rng).into_bytes();
            }
            r
        }
        // The admin API, with and without the right token.
        65..=74 => {
            let target = rng.pick(&[
                "/v1/admin/thresholds",
                "/v1/admin/thresholds",
                "/v1/admin/subjects/user-7",
                "/v1/admin/subjects/user-7/tier",
                "/v1/admin/subjects/%FF?endpoint=/api/search",
                "/v1/admin/reload",
            ]);
            let method = rng.pick(&["GET", "PUT", "PUT", "POST", "DELETE", "PATCH"]);
            let mut r = Request::new("admin", method, target);
            match rng.below(6) {
                0 => {}
                1 => r.header("Authorization", "Bearer wrong-token"),
                2 => r.header("Authorization", header_value(rng)),
                3 => r.header("Authorization", format!("bearer {ADMIN_TOKEN}")),
                // Reloads with the right token would reset the thresholds under our feet:
                // fine, but keep them rare.
                _ if target.ends_with("reload") && !rng.one_in(10) => {
                    r.header("Authorization", "Bearer nope")
                }
                _ => r.header("Authorization", format!("Bearer {ADMIN_TOKEN}")),
            }
            if method != "GET" {
                content_type(rng, &mut r);
                r.body = if target.ends_with("/tier") {
                    let mut b = Vec::new();
                    object(rng, &mut b, &[("tier", tier)]);
                    b
                } else {
                    json_body(rng, "thresholds")
                };
                framing(rng, &mut r);
            }
            r
        }
        // Random methods and paths.
        75..=86 => {
            let method = random_method(rng);
            let mut r = Request::new("route", &method, "/");
            r.target = path(rng);
            if rng.one_in(2) {
                content_type(rng, &mut r);
                r.body = json_body(rng, "/v1/check");
            }
            if rng.one_in(3) {
                random_headers(rng, &mut r);
            }
            if rng.one_in(8) {
                r.version = b"HTTP/1.0";
            }
            if rng.one_in(20) {
                r.headers.clear(); // no Host either
            }
            framing(rng, &mut r);
            if r.version == b"HTTP/1.0"
                && matches!(r.length, Length::Chunked | Length::BadChunked(_))
            {
                r.length = Length::Exact;
            }
            r
        }
        // Broken HTTP.
        87..=93 => {
            let method = random_method(rng);
            let target = rng.pick(PATHS);
            let mut r = Request::new("protocol", &method, target);
            if rng.one_in(2) {
                content_type(rng, &mut r);
                r.body = json_body(rng, "/v1/check");
            }
            break_protocol(rng, &mut r);
            r
        }
        // Random bytes as the whole request (handled by the caller).
        94..=96 => {
            let mut r = Request::new("garbage", "", "");
            r.wellformed = false;
            let n = rng.range(1, 3000);
            r.body = rng.bytes(n);
            r
        }
        // Very long but valid headers on a valid check.
        _ => {
            let mut r = Request::new("headers", "POST", "/v1/check");
            r.header("Content-Type", "application/json");
            for _ in 0..rng.range(1, 6) {
                let n = rng.range(2000, 6000);
                let v = rng.text(VISIBLE, n);
                r.header(rng.pick(HEADER_NAMES), v);
            }
            r.body = format!(
                r#"{{"user":"user-{}","endpoint":"/api/search"}}"#,
                rng.below(3000)
            )
            .into_bytes();
            r
        }
    };
    if request.kind != "garbage" && rng.one_in(25) {
        request.header("Connection", "close");
    }
    request
}
