//! Random parts of a request: paths, methods, headers, Content-Types and body framing.
//!
//! Kept apart from the request kinds that combine them, so each kind picks only the mutations
//! that keep its meaning (a malformed request is marked so, a valid one stays valid).

use crate::request::{Length, Request};
use crate::rng::{LOWER, Rng, TOKEN, VISIBLE};

pub const PATHS: &[&str] = &[
    "/v1/check",
    "/v1/check/batch",
    "/v1/auth",
    "/v1/report",
    "/v1/admin/thresholds",
    "/v1/admin/subjects/user-1",
    "/v1/admin/subjects/user-1/tier",
    "/v1/admin/reload",
    "/healthz",
    "/readyz",
    "/metrics",
    "/openapi.json",
    "/",
    "/v1",
    "/v1/check/",
    "/v1//check",
    "/V1/CHECK",
    "/v1/check?x=1&y",
    "/v1/check/batch/extra",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/v1/admin/subjects/%FF%FE%00",
    "/v1/admin/subjects/%E6%97%A5",
    "/v1/admin/subjects/",
    "/v1/check%00",
    "/v1/check#frag",
    "*",
    "http://ratewarden/v1/check",
    "/v1/auth?u=%ZZ",
];

pub fn path(rng: &mut Rng) -> Vec<u8> {
    match rng.below(10) {
        0..=6 => rng.pick(PATHS).as_bytes().to_vec(),
        7 => {
            // Random segments, percent-encoded bytes included.
            let mut p = Vec::new();
            for _ in 0..rng.range(1, 5) {
                p.extend_from_slice(b"/");
                for _ in 0..rng.range(0, 12) {
                    if rng.one_in(4) {
                        p.extend_from_slice(format!("%{:02X}", rng.below(256)).as_bytes());
                    } else {
                        p.push(rng.pick(b"abcxyz0189-._~!$&'()*+,;=:@"));
                    }
                }
            }
            p
        }
        8 => {
            let mut p = b"/v1/admin/subjects/".to_vec();
            let n = rng.range(1000, 6000);
            p.extend(rng.text(LOWER, n));
            p
        }
        _ => {
            let mut p = b"/v1/check?".to_vec();
            let n = rng.range(1, 3000);
            p.extend(rng.text(b"abc=&%20+", n));
            p
        }
    }
}

const CONTENT_TYPES: &[&[u8]] = &[
    b"application/json; charset=utf-8",
    b"APPLICATION/JSON",
    b"application/json;charset=\"utf-8\"",
    b"application/json;;;",
    b" application/json ",
    b"text/plain",
    b"application/x-www-form-urlencoded",
    b"application/problem+json",
    b"multipart/form-data; boundary=x",
    b"",
    b"json",
    b"application/jsonx",
    b"application/json\xFF\xFE",
    b"*/*",
];

pub const HEADER_NAMES: &[&str] = &[
    "X-Api-Key",
    "X-User-Id",
    "X-Original-URI",
    "X-Forwarded-Uri",
    "X-Forwarded-For",
    "X-Tier",
    "Authorization",
    "Accept",
    "Accept-Encoding",
    "Content-Encoding",
    "Cookie",
    "User-Agent",
    "X-Request-Id",
    "Origin",
    "Range",
    "If-None-Match",
    "Expect",
    "Connection",
    "Forwarded",
    "Accept-Charset",
];

/// A header value: text, the obs-text bytes HTTP allows (0x80 to 0xFF), long, or empty.
pub fn header_value(rng: &mut Rng) -> Vec<u8> {
    match rng.below(10) {
        0..=3 => {
            let n = rng.range(1, 40);
            rng.text(VISIBLE, n)
        }
        4 => (0..rng.range(1, 30))
            .map(|_| 0x80 + rng.below(0x80) as u8)
            .collect(),
        5 => {
            let n = rng.range(1000, 4000);
            rng.text(VISIBLE, n)
        }
        6 => Vec::new(),
        7 => rng
            .pick(&[
                &b"/api/export"[..],
                b"/api/search?q=1",
                b"https://example.com/login",
                b"203.0.113.9, 10.0.0.1",
                b"pro",
                b"Bearer fuzz-admin-token",
                b"Bearer wrong",
                b"100-continue",
                b"close",
                b"keep-alive",
                b"?",
                b"://",
            ])
            .to_vec(),
        8 => format!("user-{}", rng.below(3000)).into_bytes(),
        _ => {
            // Text with tabs and obs-text mixed in.
            let mut v = rng.text(VISIBLE, 5);
            v.extend_from_slice(b"\t\xC3\xA9\t");
            v.extend(rng.text(VISIBLE, 5));
            v
        }
    }
}

/// Random headers, all valid HTTP (obs-text included).
pub fn random_headers(rng: &mut Rng, request: &mut Request) {
    for _ in 0..rng.range(0, 8) {
        let name = if rng.one_in(4) {
            let n = rng.range(1, 20);
            String::from_utf8(rng.text(TOKEN, n)).unwrap()
        } else {
            rng.pick(HEADER_NAMES).to_string()
        };
        // Framing headers are chosen elsewhere, so the server never waits for more.
        if ["content-length", "transfer-encoding", "host", "upgrade"]
            .contains(&name.to_ascii_lowercase().as_str())
        {
            continue;
        }
        let value = header_value(rng);
        request.header(&name, value);
    }
}

/// Breaks the request as HTTP: hyper rejects it before axum sees it.
pub fn break_protocol(rng: &mut Rng, request: &mut Request) {
    request.wellformed = false;
    match rng.below(9) {
        0 => request.method = b"GE T".to_vec(),
        1 => request.method = rng.pick(&[&b"G(T"[..], b"POST\x01", b"\xC3\xA9T"]).to_vec(),
        2 => {
            request.version = rng.pick(&[
                &b"HTTP/2.0"[..],
                b"HTTP/1.2",
                b"HTTP/1.x",
                b"HTTX/1.1",
                b"http/1.1",
            ])
        }
        3 => {
            let mut target = request.target.clone();
            target.extend_from_slice(rng.pick(&[
                &b"\xFF\xFE"[..],
                "日本".as_bytes(),
                b"a b",
                b"\x7F",
            ]));
            request.target = target;
        }
        4 => request.header("Bad Name", "x"),
        5 => request.header(
            "X-Api-Key",
            rng.pick(&[&b"a\0b"[..], b"a\rb", b"\x01\x02", b"a\x7Fb"])
                .to_vec(),
        ),
        6 => request.headers.push((b"X-\xFF".to_vec(), b"x".to_vec())),
        7 => request.headers.push((Vec::new(), b"no name".to_vec())),
        // A header line without a colon.
        _ => request
            .headers
            .push((b"NoColon\r\nX-After".to_vec(), b"x".to_vec())),
    }
}

pub fn random_method(rng: &mut Rng) -> String {
    match rng.below(14) {
        0..=2 => "GET".into(),
        3..=5 => "POST".into(),
        6 => "PUT".into(),
        7 => "DELETE".into(),
        8 => "PATCH".into(),
        9 => "HEAD".into(),
        10 => "OPTIONS".into(),
        11 => "TRACE".into(),
        12 => (rng.pick(&["get", "FOO", "POST2", "M-SEARCH", "PROPFIND"])).into(),
        _ => {
            let n = rng.range(1, 40);
            String::from_utf8(rng.text(TOKEN, n)).unwrap()
        }
    }
}

/// The framing of a body: mostly exact, sometimes short, chunked or broken.
pub fn framing(rng: &mut Rng, request: &mut Request) {
    request.length = match rng.below(100) {
        0..=79 => Length::Exact,
        80..=86 if !request.body.is_empty() => Length::Short(rng.below(request.body.len())),
        87..=89 => Length::Omit,
        90..=93 => Length::Chunked,
        94..=95 => {
            request.wellformed = false;
            Length::Bogus(rng.pick(&[
                &b"abc"[..],
                b"-1",
                b"1.5",
                b"0x10",
                b"+3",
                b"",
                b"18446744073709551616",
                b"1, 2",
            ]))
        }
        96..=97 => Length::BadChunked(rng.pick(&[
            &b"zz\r\n"[..],
            b"fffffffffffffffffffffff\r\n",
            b"-1\r\n",
            b"\r\n",
        ])),
        98 => {
            request.wellformed = false;
            Length::OtherEncoding
        }
        _ => Length::Exact,
    };
    // A GET/HEAD body without a length is simply the next request: keep the test's meaning.
    if matches!(request.length, Length::Omit) && request.body.is_empty() {
        request.length = Length::Exact;
    }
    if matches!(request.length, Length::Short(_))
        && ["HEAD"].contains(&String::from_utf8_lossy(&request.method).as_ref())
    {
        request.length = Length::Exact;
    }
}

pub fn content_type(rng: &mut Rng, request: &mut Request) {
    match rng.below(10) {
        0..=5 => request.header("Content-Type", "application/json"),
        6 => {}
        7 => {
            let long = [b"application/json; x=".to_vec(), rng.text(LOWER, 3000)].concat();
            request.header("Content-Type", long)
        }
        _ => request.header("Content-Type", rng.pick(CONTENT_TYPES).to_vec()),
    }
    if rng.one_in(40) {
        request.header("Content-Type", "text/plain"); // a second one
    }
}
