//! Randomized robustness of the real binary's HTTP API: thousands of malformed or random
//! requests over raw TCP (random bodies, broken and hostile JSON, wrong types, unknown fields,
//! random headers with non-UTF-8 and long values, random methods and paths, wrong
//! Content-Types, Content-Lengths shorter than the body, chunked bodies, bodies just over
//! 64 KiB). Nothing may answer 5xx; every 4xx our code produces is RFC 9457 problem+json whose
//! `status` is the HTTP status; the process survives and still decides.
//!
//! The generator is a seeded xorshift: the seed is printed, and `RATEWARDEN_FUZZ_SEED=<seed>`
//! replays a run (`RATEWARDEN_FUZZ_REQUESTS=<n>` changes its length).
//!
//! Protocol-level rejections by hyper (a malformed request line or header, an invalid
//! Content-Length or Transfer-Encoding) happen before the request reaches axum: hyper answers a
//! bare `400 Bad Request` (or 414/431) with no Content-Type and an empty body, then closes the
//! connection. Those are not problem+json and cannot be from our middleware, which never sees
//! the request; they are counted (as "4xx bare (hyper)") and accepted, but only for requests
//! that really are malformed HTTP. A bare 4xx to a well-formed request fails the test, and so
//! does a closed connection without any response to a well-formed request.

mod common;

use common::daemon::{Connection, Daemon, Reply};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/ratewarden.yaml");
const ADMIN_TOKEN: &str = "fuzz-admin-token";
const MAX_BODY: usize = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// A tiny seeded generator (xorshift64*), so a failure replays from its seed.

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // splitmix64 of the seed: any seed, 0 included, gives a good non-zero state.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// 0 to n-1.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// lo to hi, both included.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }

    /// Characters from `alphabet`, `n` of them.
    fn text(&mut self, alphabet: &[u8], n: usize) -> Vec<u8> {
        (0..n).map(|_| self.pick(alphabet)).collect()
    }
}

const LOWER: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
const TOKEN: &[u8] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~";
const VISIBLE: &[u8] = b" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";

// ---------------------------------------------------------------------------------------------
// JSON, valid and not.

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "5",
    "1000000",
    "1000001",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "1e3",
    "1.5",
    "-0",
    "0.0",
    "1e400",
    "-1e400",
    "1e-400",
    "2.5e-3",
    "123456789012345678901234567890123456789",
    "1E308",
    "4.9e-324",
    // Not JSON:
    "NaN",
    "Infinity",
    "-Infinity",
    "01",
    "1.",
    ".5",
    "0x10",
    "+1",
    "1e",
    "--1",
];

fn number(rng: &mut Rng, out: &mut Vec<u8>) {
    if rng.one_in(8) {
        // A long run of digits: far past any integer or float.
        let n = rng.range(20, 600);
        out.push(b'1');
        out.extend(rng.text(b"0123456789", n));
        if rng.one_in(2) {
            out.extend_from_slice(b".5e");
            let n = rng.range(1, 8);
            out.extend(rng.text(b"0123456789", n));
        }
    } else {
        out.extend_from_slice(rng.pick(NUMBERS).as_bytes());
    }
}

/// The inside of a JSON string (no quotes): plain, unicode, escapes, and some invalid bits.
fn string_body(rng: &mut Rng, out: &mut Vec<u8>) {
    let pieces = rng.range(1, 4);
    for _ in 0..pieces {
        match rng.below(16) {
            0..=4 => {
                let n = rng.range(1, 12);
                out.extend(rng.text(LOWER, n))
            }
            5 => out.extend_from_slice("ünïcødé 日本語 😀 \u{202E}rtl \u{FEFF}".as_bytes()),
            6 => out.extend_from_slice(br"\u0000"),
            7 => out.extend_from_slice(br#"\n\t\"\\\/\b\f\r"#),
            8 => out.extend_from_slice(br"\ud83d\ude00"),
            9 => out.extend_from_slice(br"\ud800"), // a lone surrogate: not JSON
            10 => out.extend_from_slice(br"\uZZZZ"), // not JSON
            11 => out.push(0),                      // a raw control character: not JSON
            12 => out.extend_from_slice(&[0xFF, 0xFE, 0xC0, 0x80]), // not UTF-8
            13 => {
                let n = rng.pick(&[511, 512, 513, 2047, 2048, 2049, 5000]);
                out.extend(std::iter::repeat_n(b'x', n))
            }
            14 => out.extend_from_slice(b"/api/search"),
            _ => {
                let n = rng.range(1, 16);
                out.extend(
                    rng.text(VISIBLE, n)
                        .into_iter()
                        .filter(|&b| b != b'"' && b != b'\\'),
                )
            }
        }
    }
}

fn string(rng: &mut Rng, out: &mut Vec<u8>) {
    out.push(b'"');
    string_body(rng, out);
    if !rng.one_in(40) {
        out.push(b'"'); // else unterminated
    }
}

fn quoted(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(serde_json::to_string(text).unwrap().as_bytes());
}

/// Any JSON value (mostly valid), nested at most `depth` more levels.
fn value(rng: &mut Rng, out: &mut Vec<u8>, depth: usize) {
    match rng.below(if depth == 0 { 6 } else { 8 }) {
        0 => out.extend_from_slice(b"null"),
        1 => out.extend_from_slice(rng.pick(&[&b"true"[..], b"false", b"tru", b"nul"])),
        2 | 3 => number(rng, out),
        4 | 5 => string(rng, out),
        6 => {
            out.push(b'[');
            for i in 0..rng.below(4) {
                if i > 0 {
                    out.push(b',');
                }
                value(rng, out, depth - 1);
            }
            out.push(b']');
        }
        _ => {
            out.push(b'{');
            for i in 0..rng.below(4) {
                if i > 0 {
                    out.push(b',');
                }
                string(rng, out);
                out.push(b':');
                value(rng, out, depth - 1);
            }
            out.push(b'}');
        }
    }
}

/// `depth` levels of arrays or objects, closed or not, optionally around a value.
fn nested(rng: &mut Rng, out: &mut Vec<u8>, depth: usize) {
    let objects = rng.one_in(2);
    for _ in 0..depth {
        out.extend_from_slice(if objects { br#"{"user":"# } else { b"[" });
    }
    out.extend_from_slice(b"1");
    if rng.one_in(2) {
        for _ in 0..depth {
            out.push(if objects { b'}' } else { b']' });
        }
    }
}

const FIELD_TYPOS: &[&str] = &[
    "cots",
    "User",
    "user ",
    "",
    "endpoint\u{0}",
    "ünknown",
    "requests",
    "status",
    "extra",
    "__proto__",
    "constructor",
    "Cost",
    "ip_address",
    "latency",
];

/// One object member: `"name":value`.
fn member(out: &mut Vec<u8>, name: &str, val: impl FnOnce(&mut Vec<u8>)) {
    if out.last() != Some(&b'{') {
        out.push(b',');
    }
    quoted(out, name);
    out.push(b':');
    val(out);
}

/// Members in random order: each (name, generator of a well-typed value); sometimes a field
/// is left out, sometimes it gets a value of a random type, sometimes an unknown field or a
/// duplicate is added.
/// Writes a well-typed JSON value for one field.
type FieldValue = fn(&mut Rng, &mut Vec<u8>);

fn object(rng: &mut Rng, out: &mut Vec<u8>, fields: &[(&str, FieldValue)]) {
    out.push(b'{');
    let mut order: Vec<usize> = (0..fields.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let wrong_types = rng.one_in(4);
    for i in order {
        let (name, good) = fields[i];
        // Required-looking fields are present more often than optional ones.
        if rng.below(10) < if i < 2 { 9 } else { 5 } {
            if wrong_types && rng.one_in(3) {
                member(out, name, |o| value(rng, o, 2));
            } else {
                member(out, name, |o| good(rng, o));
            }
        }
        if rng.one_in(60) {
            member(out, name, |o| good(rng, o)); // a duplicate field
        }
    }
    if rng.one_in(8) {
        let name = if rng.one_in(2) {
            rng.pick(FIELD_TYPOS).to_string()
        } else {
            String::from_utf8_lossy(&rng.text(TOKEN, 6)).into_owned()
        };
        member(out, &name, |o| value(rng, o, 1));
    }
    out.push(b'}');
}

fn user(rng: &mut Rng, out: &mut Vec<u8>) {
    match rng.below(10) {
        0..=6 => quoted(out, &format!("user-{}", rng.below(3000))),
        7 => quoted(out, ""),
        _ => string(rng, out),
    }
}

const ENDPOINTS: &[&str] = &[
    "/api/search",
    "/api/export",
    "/sms/send",
    "/login",
    "/api/",
    "/api",
    "/",
    "",
    "/api/search?q=1",
    "*",
    "/unmatched",
];

fn endpoint(rng: &mut Rng, out: &mut Vec<u8>) {
    if rng.one_in(5) {
        string(rng, out)
    } else {
        quoted(out, rng.pick(ENDPOINTS))
    }
}

fn tier(rng: &mut Rng, out: &mut Vec<u8>) {
    quoted(
        out,
        rng.pick(&["free", "pro", "enterprise", "gold", "", "FREE", "free "]),
    )
}

const IPS: &[&str] = &[
    "203.0.113.7",
    "2001:db8::1",
    "::ffff:192.0.2.1",
    "::",
    "0.0.0.0",
    "255.255.255.255",
    "256.1.1.1",
    "1.2.3",
    "fe80::1%eth0",
    "",
    "localhost",
    "1.2.3.4:80",
    "[::1]",
];

fn ip(rng: &mut Rng, out: &mut Vec<u8>) {
    if rng.one_in(3) {
        quoted(out, &format!("10.0.{}.{}", rng.below(4), rng.below(256)))
    } else {
        quoted(out, rng.pick(IPS))
    }
}

fn cost(rng: &mut Rng, out: &mut Vec<u8>) {
    if rng.one_in(2) {
        out.extend_from_slice(rng.pick(&[&b"1"[..], b"2", b"3", b"10"]))
    } else {
        number(rng, out)
    }
}

fn status(rng: &mut Rng, out: &mut Vec<u8>) {
    if rng.one_in(2) {
        out.extend_from_slice(rng.pick(&[&b"200"[..], b"401", b"404", b"500", b"99", b"600"]))
    } else {
        number(rng, out)
    }
}

fn latency(rng: &mut Rng, out: &mut Vec<u8>) {
    number(rng, out)
}

fn check_object(rng: &mut Rng, out: &mut Vec<u8>) {
    object(
        rng,
        out,
        &[
            ("user", user),
            ("endpoint", endpoint),
            ("tier", tier),
            ("ip", ip),
            ("cost", cost),
        ],
    )
}

fn report_object(rng: &mut Rng, out: &mut Vec<u8>) {
    object(
        rng,
        out,
        &[
            ("user", user),
            ("endpoint", endpoint),
            ("status", status),
            ("ip", ip),
            ("latency_ms", latency),
        ],
    )
}

fn threshold(rng: &mut Rng, out: &mut Vec<u8>) {
    match rng.below(4) {
        0 => out.extend_from_slice(rng.pick(&[&b"0.5"[..], b"0.8", b"1", b"0", b"-1", b"2"])),
        1 => out.extend_from_slice(b"null"),
        2 => out.extend_from_slice(rng.pick(&[&b"true"[..], b"false"])),
        _ => number(rng, out),
    }
}

fn thresholds_object(rng: &mut Rng, out: &mut Vec<u8>) {
    object(
        rng,
        out,
        &[
            ("anomaly_threshold", threshold),
            ("anomaly_factor", threshold),
            ("anomaly_shadow", threshold),
            ("load_high", threshold),
            ("load_low", threshold),
            ("load_high_factor", threshold),
            ("load_low_factor", threshold),
            ("load_factor_override", threshold),
        ],
    )
}

fn batch_object(rng: &mut Rng, out: &mut Vec<u8>) {
    out.extend_from_slice(br#"{"requests":"#);
    match rng.below(12) {
        0 => value(rng, out, 2), // a wrong type, most likely
        1 => {
            // At and just over the 1000-item limit, small valid items.
            let n = rng.pick(&[1000, 1001]);
            out.push(b'[');
            for i in 0..n {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(
                    format!(r#"{{"user":"b{}","endpoint":"/x"}}"#, rng.below(100)).as_bytes(),
                );
            }
            out.push(b']');
        }
        _ => {
            out.push(b'[');
            for i in 0..rng.below(12) {
                if i > 0 {
                    out.push(b',');
                }
                check_object(rng, out);
            }
            out.push(b']');
        }
    }
    if rng.one_in(10) {
        out.extend_from_slice(br#","request":[]"#);
    }
    out.push(b'}');
}

/// A body for a JSON endpoint: mostly a plausible object for it, else hostile bytes.
fn json_body(rng: &mut Rng, path: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let structured = |rng: &mut Rng, out: &mut Vec<u8>| {
        // Now and then the body of another endpoint.
        let target = if rng.one_in(10) {
            rng.pick(&["/v1/check", "/v1/check/batch", "/v1/report", "thresholds"])
        } else {
            path
        };
        if target.contains("batch") {
            batch_object(rng, out)
        } else if target.contains("report") {
            report_object(rng, out)
        } else if target.contains("thresholds") {
            thresholds_object(rng, out)
        } else {
            check_object(rng, out)
        }
    };
    match rng.below(100) {
        0..=54 => structured(rng, &mut out),
        55..=62 => {
            structured(rng, &mut out);
            let cut = rng.below(out.len());
            out.truncate(cut);
        }
        63..=67 => {
            let depth = rng.pick(&[2, 64, 127, 128, 129, 1000, 10_000, 20_000]);
            nested(rng, &mut out, depth);
        }
        68..=70 => {
            out.extend_from_slice(br#"{"user":"n","endpoint":"/","cost":"#);
            let depth = rng.range(1, 5000);
            nested(rng, &mut out, depth);
            out.push(b'}');
        }
        71..=75 => {
            let n = rng.range(0, 2000);
            out = rng.bytes(n);
        }
        76..=80 => value(rng, &mut out, 3),
        81..=83 => {
            out.extend_from_slice(rng.pick(&[&b""[..], b" ", b"\r\n\t ", b"\0", b"{}", b"[]"]))
        }
        84..=86 => {
            structured(rng, &mut out);
            out.extend_from_slice(rng.pick(&[&b" {}"[..], b"x", b"\0", b",", b"]"]));
        }
        87..=88 => {
            // A byte-order mark, or UTF-16.
            let mut inner = Vec::new();
            check_object(rng, &mut inner);
            if rng.one_in(2) {
                out.extend_from_slice(b"\xEF\xBB\xBF");
                out.extend(inner);
            } else {
                out.extend_from_slice(b"\xFF\xFE");
                out.extend(inner.iter().flat_map(|&b| [b, 0]));
            }
        }
        89..=95 => {
            // Just over 64 KiB: whitespace padding, a huge string, or random bytes.
            let total = MAX_BODY + rng.range(1, 200);
            match rng.below(3) {
                0 => {
                    out.extend_from_slice(br#"{"user":"big","endpoint":"/api/search"}"#);
                    out.resize(total, b' ');
                }
                1 => {
                    out.extend_from_slice(br#"{"endpoint":"/","user":""#);
                    out.resize(total - 2, b'u');
                    out.extend_from_slice(b"\"}");
                }
                _ => out = rng.bytes(total),
            }
        }
        _ => {
            // Exactly 64 KiB, or just under: within the limit, so it is read and judged.
            out.extend_from_slice(br#"{"user":"edge","endpoint":"/api/search"}"#);
            out.resize(MAX_BODY - rng.below(2), b' ');
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Requests.

/// How the body's length is framed.
#[derive(Debug)]
enum Length {
    Exact,
    /// `Content-Length` shorter than the body: the rest is left on the connection.
    Short(usize),
    /// No `Content-Length` at all (on a POST: an empty body, the rest left on the connection).
    Omit,
    /// An invalid `Content-Length` value (never one larger than the body).
    Bogus(&'static [u8]),
    /// `Transfer-Encoding: chunked`, properly encoded.
    Chunked,
    /// `Transfer-Encoding: chunked` with a broken chunk size.
    BadChunked(&'static [u8]),
    /// `Transfer-Encoding` other than chunked (400 for a request).
    OtherEncoding,
}

struct Request {
    method: Vec<u8>,
    target: Vec<u8>,
    version: &'static [u8],
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    body: Vec<u8>,
    length: Length,
    /// Whether this is well-formed HTTP/1.1 that hyper must hand to axum.
    wellformed: bool,
    /// For a request valid in every way: the statuses it may get.
    expect: Option<&'static [u16]>,
    kind: &'static str,
}

impl Request {
    fn new(kind: &'static str, method: &str, target: &str) -> Request {
        Request {
            method: method.as_bytes().to_vec(),
            target: target.as_bytes().to_vec(),
            version: b"HTTP/1.1",
            headers: vec![(b"Host".to_vec(), b"ratewarden".to_vec())],
            body: Vec::new(),
            length: Length::Exact,
            wellformed: true,
            expect: None,
            kind,
        }
    }

    /// The body length the server is told of, when it is told one.
    fn payload_len(&self) -> Option<usize> {
        match self.length {
            Length::Exact | Length::Chunked => Some(self.body.len()),
            Length::Short(n) => Some(n),
            Length::Omit => Some(0),
            Length::BadChunked(_) => Some(self.body.len() + 32),
            Length::Bogus(_) | Length::OtherEncoding => None,
        }
    }

    fn header(&mut self, name: &str, value: impl Into<Vec<u8>>) {
        self.headers.push((name.as_bytes().to_vec(), value.into()));
    }

    /// The bytes on the wire, and whether to send them on a connection of their own (left
    /// data or a broken framing make the connection unusable afterwards).
    fn encode(&self) -> (Vec<u8>, bool) {
        let mut raw = Vec::with_capacity(self.body.len() + 512);
        raw.extend_from_slice(&self.method);
        raw.push(b' ');
        raw.extend_from_slice(&self.target);
        raw.push(b' ');
        raw.extend_from_slice(self.version);
        raw.extend_from_slice(b"\r\n");
        for (name, value) in &self.headers {
            raw.extend_from_slice(name);
            raw.extend_from_slice(b": ");
            raw.extend_from_slice(value);
            raw.extend_from_slice(b"\r\n");
        }
        let mut own_connection = false;
        let body: Vec<u8> = match &self.length {
            Length::Exact => {
                if !self.body.is_empty() || self.method == b"POST" || self.method == b"PUT" {
                    raw.extend_from_slice(
                        format!("Content-Length: {}\r\n", self.body.len()).as_bytes(),
                    );
                }
                self.body.clone()
            }
            Length::Short(n) => {
                raw.extend_from_slice(format!("Content-Length: {n}\r\n").as_bytes());
                own_connection = true;
                self.body.clone()
            }
            Length::Omit => {
                own_connection = !self.body.is_empty();
                self.body.clone()
            }
            Length::Bogus(value) => {
                raw.extend_from_slice(b"Content-Length: ");
                raw.extend_from_slice(value);
                raw.extend_from_slice(b"\r\n");
                own_connection = true;
                self.body.clone()
            }
            Length::Chunked => {
                raw.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
                let mut encoded = Vec::new();
                let mut rest = &self.body[..];
                let mut size = 1;
                while !rest.is_empty() {
                    let n = size.min(rest.len());
                    encoded.extend_from_slice(format!("{n:x}\r\n").as_bytes());
                    encoded.extend_from_slice(&rest[..n]);
                    encoded.extend_from_slice(b"\r\n");
                    rest = &rest[n..];
                    size = size * 7 + 3;
                }
                encoded.extend_from_slice(b"0\r\n\r\n");
                encoded
            }
            Length::BadChunked(first) => {
                raw.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
                own_connection = true;
                let mut encoded = first.to_vec();
                encoded.extend_from_slice(&self.body);
                encoded
            }
            Length::OtherEncoding => {
                raw.extend_from_slice(b"Transfer-Encoding: gzip\r\n");
                own_connection = true;
                self.body.clone()
            }
        };
        raw.extend_from_slice(b"\r\n");
        raw.extend_from_slice(&body);
        (raw, own_connection || self.version != b"HTTP/1.1")
    }
}

const PATHS: &[&str] = &[
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

fn path(rng: &mut Rng) -> Vec<u8> {
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

const HEADER_NAMES: &[&str] = &[
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
fn header_value(rng: &mut Rng) -> Vec<u8> {
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
fn random_headers(rng: &mut Rng, request: &mut Request) {
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
fn break_protocol(rng: &mut Rng, request: &mut Request) {
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

fn random_method(rng: &mut Rng) -> String {
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
fn framing(rng: &mut Rng, request: &mut Request) {
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

fn content_type(rng: &mut Rng, request: &mut Request) {
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

fn generate(rng: &mut Rng) -> Request {
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

// ---------------------------------------------------------------------------------------------
// Sending and judging.

enum Outcome {
    Reply(Reply),
    /// The server closed the connection without a response.
    Closed,
    /// The server reset the connection (typically: it closed with unread bytes left).
    Reset,
}

fn transport(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
    )
}

fn outcome_of(e: io::Error) -> io::Result<Outcome> {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => Ok(Outcome::Closed),
        _ if transport(&e) => Ok(Outcome::Reset),
        _ => Err(e),
    }
}

/// Sends one request, on the kept connection when it can carry it; a kept connection that
/// the server had already closed is retried once on a new one, as any client would.
fn send(
    addr: SocketAddr,
    kept: &mut Option<Connection>,
    raw: &[u8],
    head: bool,
    own_connection: bool,
    half_close: bool,
) -> io::Result<Outcome> {
    if !own_connection {
        if let Some(connection) = kept.as_mut() {
            match connection.exchange(raw, head) {
                Ok(reply) => {
                    if reply.closes() {
                        *kept = None;
                    }
                    return Ok(Outcome::Reply(reply));
                }
                Err(e) if transport(&e) => *kept = None,
                Err(e) => {
                    *kept = None;
                    return Err(e);
                }
            }
        }
    }
    let mut connection = Connection::open(addr)?;
    let written = connection.write(raw);
    if half_close {
        let _ = connection.shutdown_write();
    }
    match (connection.read_reply(head), written) {
        (Ok(reply), _) => {
            if !own_connection && !half_close && !reply.closes() {
                *kept = Some(connection);
            }
            Ok(Outcome::Reply(reply))
        }
        (Err(e), Err(w)) if transport(&e) => outcome_of(w),
        (Err(e), _) => outcome_of(e),
    }
}

/// What is wrong with a response, if anything.
fn judge(request: &Request, head: bool, reply: &Reply) -> Result<&'static str, String> {
    let status = reply.status;
    if status >= 500 {
        return Err(format!("status {status}"));
    }
    if let Some(expect) = request.expect {
        if !expect.contains(&status) {
            return Err(format!("{status} to a valid request (expected {expect:?})"));
        }
    }
    if status == 413 && request.payload_len().is_some_and(|n| n <= MAX_BODY) {
        return Err(format!(
            "413 for a body of at most {MAX_BODY} bytes ({:?})",
            request.payload_len()
        ));
    }
    if !(400..500).contains(&status) {
        return Ok("");
    }
    let content_type = reply.header("content-type");
    if content_type.is_none() && reply.body.is_empty() {
        // hyper's own rejection of malformed HTTP (see the module comment).
        return if request.wellformed {
            Err(format!("bare {status} (no body) to a well-formed request"))
        } else {
            Ok(" bare (hyper)")
        };
    }
    if !content_type.is_some_and(|ct| ct.starts_with("application/problem+json")) {
        return Err(format!("{status} with Content-Type {content_type:?}"));
    }
    if head {
        return Ok("");
    }
    let problem: Value = serde_json::from_slice(&reply.body)
        .map_err(|e| format!("{status} with a body that is not JSON ({e})"))?;
    for member in ["type", "title", "detail"] {
        if !problem.get(member).is_some_and(Value::is_string) {
            return Err(format!("{status} problem without a string `{member}`"));
        }
    }
    // A detail that only repeats the title names nothing (the fallback of the middleware that
    // turns other 4xx into problems).
    if problem["detail"]
        .as_str()
        .is_some_and(|d| d.trim().is_empty() || d == problem["title"])
    {
        return Err(format!("{status} problem whose detail names nothing"));
    }
    if problem.get("status").and_then(Value::as_u64) != Some(u64::from(status)) {
        return Err(format!(
            "{status} problem whose `status` is {:?}",
            problem.get("status")
        ));
    }
    Ok("")
}

/// The start and end of `bytes`, escaped.
fn printable(bytes: &[u8], max: usize) -> String {
    if bytes.len() <= max {
        return bytes.escape_ascii().to_string();
    }
    format!(
        "{} ... ({} bytes) ... {}",
        bytes[..max * 2 / 3].escape_ascii(),
        bytes.len(),
        bytes[bytes.len() - max / 3..].escape_ascii()
    )
}

struct Stats {
    sent: usize,
    outcomes: BTreeMap<String, usize>,
    by_kind: BTreeMap<(&'static str, String), usize>,
    /// Problem details (their first 70 characters), printed with `RATEWARDEN_FUZZ_DETAILS=1`.
    details: BTreeMap<String, usize>,
    failures: Vec<String>,
}

fn fuzz(addr: SocketAddr, seed: u64, count: usize) -> Stats {
    let mut rng = Rng::new(seed);
    let mut stats = Stats {
        sent: 0,
        outcomes: BTreeMap::new(),
        by_kind: BTreeMap::new(),
        details: BTreeMap::new(),
        failures: Vec::new(),
    };
    let mut kept: Option<Connection> = None;
    for i in 0..count {
        let request = generate(&mut rng);
        let (raw, own_connection, half_close) = if request.kind == "garbage" {
            // Random bytes then end of file: hyper rejects them or sees an incomplete head.
            (request.body.clone(), true, true)
        } else {
            let (raw, own) = request.encode();
            (raw, own || !request.wellformed, false)
        };
        let head = request.method.eq_ignore_ascii_case(b"HEAD") && request.kind != "garbage";
        stats.sent += 1;
        let label = match send(addr, &mut kept, &raw, head, own_connection, half_close) {
            Ok(Outcome::Reply(reply)) => match judge(&request, head, &reply) {
                Ok(note) if reply.status >= 400 && !head && note.is_empty() => {
                    let problem: Value = serde_json::from_slice(&reply.body).unwrap_or_default();
                    let detail: String = problem["detail"]
                        .as_str()
                        .unwrap_or("")
                        .chars()
                        .take(70)
                        .collect();
                    *stats
                        .details
                        .entry(format!("{} {detail}", reply.status))
                        .or_default() += 1;
                    format!("{}{note}", reply.status)
                }
                Ok(note) => format!("{}{note}", reply.status),
                Err(problem) => {
                    stats.failures.push(format!(
                        "request #{i} ({}, {:?}): {problem}\n  sent: {}\n  got: {} {:?} {}",
                        request.kind,
                        request.length,
                        printable(&raw, 600),
                        reply.status,
                        reply.headers,
                        printable(&reply.body, 600)
                    ));
                    format!("{} (failed)", reply.status)
                }
            },
            Ok(Outcome::Closed) | Ok(Outcome::Reset) if !request.wellformed => {
                "closed (malformed request)".to_owned()
            }
            Ok(Outcome::Closed) => {
                stats.failures.push(format!(
                    "request #{i} ({}): closed without a response\n  sent: {}",
                    request.kind,
                    printable(&raw, 600)
                ));
                "closed (failed)".to_owned()
            }
            Ok(Outcome::Reset) => {
                // A reset after a request whose framing left bytes unread is the server
                // closing (hyper does not linger); anything else is a failure.
                if own_connection {
                    "reset (bytes left unread)".to_owned()
                } else {
                    stats.failures.push(format!(
                        "request #{i} ({}): connection reset\n  sent: {}",
                        request.kind,
                        printable(&raw, 600)
                    ));
                    "reset (failed)".to_owned()
                }
            }
            Err(e) => {
                stats.failures.push(format!(
                    "request #{i} ({}): {e}\n  sent: {}",
                    request.kind,
                    printable(&raw, 600)
                ));
                if e.kind() == io::ErrorKind::ConnectionRefused {
                    break; // the daemon is gone: the checks below say so
                }
                format!("error {:?}", e.kind())
            }
        };
        *stats
            .by_kind
            .entry((request.kind, label.clone()))
            .or_default() += 1;
        *stats.outcomes.entry(label).or_default() += 1;
    }
    stats
}

fn seed_and_count() -> (u64, usize) {
    let seed = std::env::var("RATEWARDEN_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let count = std::env::var("RATEWARDEN_FUZZ_REQUESTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    (seed, count)
}

/// Runs the fuzzer against a started daemon, then checks that it still serves.
fn run(name: &str, mut daemon: Daemon, seed: u64, count: usize) {
    println!("{name}: seed {seed} (replay with RATEWARDEN_FUZZ_SEED={seed}), {count} requests");
    let started = Instant::now();
    let stats = fuzz(daemon.addr, seed, count);
    let elapsed = started.elapsed();
    println!(
        "{name}: {} requests in {:.2} s; outcomes:",
        stats.sent,
        elapsed.as_secs_f64()
    );
    for (label, n) in &stats.outcomes {
        println!("  {label:<32} {n}");
    }
    if std::env::var_os("RATEWARDEN_FUZZ_DETAILS").is_some() {
        println!("{name}: problem details:");
        for (detail, n) in &stats.details {
            println!("  {n:>6} {detail}");
        }
    }
    println!("{name}: by kind of request:");
    for ((kind, label), n) in &stats.by_kind {
        println!("  {kind:<9} {label:<32} {n}");
    }

    let panics: Vec<&String> = daemon
        .drain_log()
        .iter()
        .filter(|l| l.contains("panicked"))
        .collect();
    assert!(
        panics.is_empty(),
        "{name} (seed {seed}): panics: {panics:#?}"
    );
    assert!(
        daemon.is_running(),
        "{name} (seed {seed}): the daemon exited; log:\n{}",
        daemon.seen.join("\n")
    );
    let (status, body) = daemon.get("/healthz");
    assert_eq!(status, 200, "{name} (seed {seed}): /healthz: {body}");
    // The fuzzer may have changed the live thresholds: put the file's values back (a no-op
    // 404 while the admin API is not there).
    daemon.request(
        "POST",
        "/v1/admin/reload",
        &[("Authorization", &format!("Bearer {ADMIN_TOKEN}"))],
        "",
    );
    let (status, _, body) = daemon.post_json(
        "/v1/check",
        r#"{"user":"after-the-fuzz","endpoint":"/api/search"}"#,
    );
    assert_eq!(status, 200, "{name} (seed {seed}): a valid check: {body}");
    assert!(
        stats.failures.is_empty(),
        "{name} (seed {seed}): {} of {} requests failed; the first ones:\n{}",
        stats.failures.len(),
        stats.sent,
        stats.failures[..stats.failures.len().min(failures_shown())].join("\n")
    );
    assert!(
        elapsed < Duration::from_secs(45),
        "{name}: too slow: {elapsed:?}"
    );
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

#[test]
fn thousands_of_random_requests_never_get_a_5xx_or_a_non_problem_4xx() {
    let (seed, count) = seed_and_count();
    let daemon = Daemon::start(
        Path::new(SHIPPED),
        &[("RATEWARDEN_ADMIN_TOKEN", ADMIN_TOKEN)],
    );
    run("shipped policy", daemon, seed, count);
}

/// The same against a policy that trusts `X-Forwarded-For` and `X-Tier`, so forward auth
/// parses them.
#[test]
fn random_requests_with_trusted_forwarding_headers() {
    let (seed, count) = seed_and_count();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    let shipped = std::fs::read_to_string(SHIPPED).unwrap();
    let trusting = shipped
        .replace("trust_forwarded: false", "trust_forwarded: true")
        .replace("trust_tier_header: false", "trust_tier_header: true");
    assert_ne!(trusting, shipped);
    std::fs::write(&policy, trusting).unwrap();
    let daemon = Daemon::start(&policy, &[("RATEWARDEN_ADMIN_TOKEN", ADMIN_TOKEN)]);
    run("trusting policy", daemon, seed, (count / 4).max(500));
}

/// How many failures to print (`RATEWARDEN_FUZZ_SHOW`, default 8).
fn failures_shown() -> usize {
    std::env::var("RATEWARDEN_FUZZ_SHOW")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8)
}
