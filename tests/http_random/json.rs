//! JSON, valid and not: numbers, strings, any value, deep nesting and objects of given fields.
//!
//! Mostly valid, so requests get past the JSON parser and reach validation; the invalid bits
//! (lone surrogates, raw control characters, non-UTF-8, numbers past any range) test the parser.

use crate::rng::{LOWER, Rng, TOKEN, VISIBLE};

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

pub fn number(rng: &mut Rng, out: &mut Vec<u8>) {
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

pub fn string(rng: &mut Rng, out: &mut Vec<u8>) {
    out.push(b'"');
    string_body(rng, out);
    if !rng.one_in(40) {
        out.push(b'"'); // else unterminated
    }
}

pub fn quoted(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(serde_json::to_string(text).unwrap().as_bytes());
}

/// Any JSON value (mostly valid), nested at most `depth` more levels.
pub fn value(rng: &mut Rng, out: &mut Vec<u8>, depth: usize) {
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
pub fn nested(rng: &mut Rng, out: &mut Vec<u8>, depth: usize) {
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
pub type FieldValue = fn(&mut Rng, &mut Vec<u8>);

pub fn object(rng: &mut Rng, out: &mut Vec<u8>, fields: &[(&str, FieldValue)]) {
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
