//! Bodies for the JSON endpoints: checks, batches, reports and threshold patches.
//!
//! Each field gets values near its edges (unknown tiers, odd addresses, costs and statuses out
//! of range), and the body as a whole is sometimes truncated, padded past 64 KiB or replaced by
//! bytes, so validation and the body limit are both exercised.

use crate::MAX_BODY;
use crate::json::{nested, number, object, quoted, string, value};
use crate::rng::Rng;

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

pub fn tier(rng: &mut Rng, out: &mut Vec<u8>) {
    quoted(
        out,
        rng.pick(&["free", "pro", "enterprise", "gold", "", "FREE", "free "]),
    )
}

pub const IPS: &[&str] = &[
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
pub fn json_body(rng: &mut Rng, path: &str) -> Vec<u8> {
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
