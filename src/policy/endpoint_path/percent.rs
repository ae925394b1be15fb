//! Percent-encodings in a path's normal form: which to decode, which to keep in upper case, and
//! which raw bytes to encode.
//!
//! Kept apart from the handling of segments and dots: these rules are RFC 3986's alone (§2.1 to
//! §2.4), and every other step of the normal form relies on them.

use super::EncodedSlash;

/// What the `%` at `bytes[i]` starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Escape {
    /// A percent-encoding already in normal form: a reserved or non-ASCII byte, upper-case hex.
    Normal,
    /// An unreserved character or lower-case hex: rewritten.
    Changed,
    /// No percent-encoding (not two hex digits after it): becomes `%25`.
    Stray,
    /// The path ends before two characters follow (a prefix rule may end so).
    Unfinished,
}

pub(super) fn escape_at(bytes: &[u8], i: usize) -> Escape {
    let following = &bytes[i + 1..bytes.len().min(i + 3)];
    if !following.iter().all(u8::is_ascii_hexdigit) {
        return Escape::Stray;
    }
    match *following {
        [high, low] if is_unreserved(decode(high, low)) || decode(high, low) == b'/' => {
            Escape::Changed
        }
        [high, low] if high.is_ascii_lowercase() || low.is_ascii_lowercase() => Escape::Changed,
        [_, _] => Escape::Normal,
        _ => Escape::Unfinished,
    }
}

/// Pushes `segment` with unreserved characters (and `%2F`, unless `Kept`) decoded, other
/// encodings in upper case, a stray `%` as `%25` and a byte no URI may hold raw encoded.
pub(super) fn push_percent_normalised(
    out: &mut String,
    segment: &str,
    encoded_slash: EncodedSlash,
) {
    let mut rest = segment;
    while let Some(at) = rest.find('%') {
        push_encoding_raw(out, &rest[..at]);
        let bytes = &rest.as_bytes()[at..];
        match escape_at(bytes, 0) {
            Escape::Normal | Escape::Changed => {
                let (high, low) = (bytes[1], bytes[2]);
                let byte = decode(high, low);
                if is_unreserved(byte) || (byte == b'/' && encoded_slash == EncodedSlash::Decoded) {
                    out.push(char::from(byte));
                } else {
                    out.push('%');
                    out.push(char::from(high.to_ascii_uppercase()));
                    out.push(char::from(low.to_ascii_uppercase()));
                }
                // The two hex digits are ASCII: `at + 3` is a character boundary.
                rest = &rest[at + 3..];
            }
            Escape::Stray | Escape::Unfinished => {
                out.push_str("%25");
                rest = &rest[at + 1..];
            }
        }
    }
    push_encoding_raw(out, rest);
}

/// Pushes `text` (no `%` in it) with every byte a URI's path may not hold raw percent-encoded.
fn push_encoding_raw(out: &mut String, text: &str) {
    if !text.bytes().any(needs_encoding) {
        out.push_str(text);
        return;
    }
    for byte in text.bytes() {
        match needs_encoding(byte) {
            true => out.push_str(&format!("%{byte:02X}")),
            false => out.push(char::from(byte)),
        }
    }
}

/// A byte RFC 3986 allows in a path only percent-encoded: a control, a space, a non-ASCII
/// byte, a backtick or one of `"<>[]^{|}` (`\` reads as `/`, and `?` and `#` end the path). Clients
/// encode these (browsers, `fetch`, proxies), so a raw `é` and `%C3%A9` are one endpoint.
pub(super) fn needs_encoding(byte: u8) -> bool {
    !byte.is_ascii_graphic() || b"\"<>[]^`{|}".contains(&byte)
}

/// RFC 3986 §2.3: `ALPHA / DIGIT / "-" / "." / "_" / "~"`.
fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

/// The byte two hex digits encode (both checked to be hex digits).
pub(super) fn decode(high: u8, low: u8) -> u8 {
    let value = |digit: u8| char::from(digit).to_digit(16).unwrap_or(0) as u8;
    (value(high) << 4) | value(low)
}
