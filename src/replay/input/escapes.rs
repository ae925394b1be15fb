//! The escapes nginx and Apache write into a logged request line, undone.
//!
//! nginx writes `"`, `\`, control and non-ASCII bytes of `$request` as `\x22`, `\x5C`, `\x09`,
//! `\xC3`; Apache writes `\"` and `\\` too. Read as written, `/api\x5Cexport` would reach the
//! path normaliser as `/api` and `/x5Cexport` (a `\` reads as `/`), not as the `/api\export`
//! the server saw and the daemon counts against `/api/export`. A byte that is not printable
//! ASCII comes back percent-encoded, as a client or a proxy such as Caddy sends it.

use std::borrow::Cow;
use std::fmt::Write;

/// `target` with its escapes undone; borrowed when it has none.
pub fn unescaped(target: &str) -> Cow<'_, str> {
    if !target.contains('\\') {
        return Cow::Borrowed(target);
    }
    let bytes = target.as_bytes();
    let mut raw = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1).copied()) {
            (b'\\', Some(b'x' | b'X')) => match hex_byte(bytes.get(i + 2..i + 4)) {
                Some(byte) => {
                    raw.push(byte);
                    i += 4;
                }
                None => {
                    raw.push(b'\\');
                    i += 1;
                }
            },
            (b'\\', Some(escaped @ (b'"' | b'\\'))) => {
                raw.push(escaped);
                i += 2;
            }
            (byte, _) => {
                raw.push(byte);
                i += 1;
            }
        }
    }
    let mut out = String::with_capacity(raw.len());
    for byte in raw {
        if (0x21..0x7f).contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    Cow::Owned(out)
}

fn hex_byte(digits: Option<&[u8]>) -> Option<u8> {
    let text = std::str::from_utf8(digits?).ok()?;
    u8::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::unescaped;

    #[test]
    fn nginx_and_apache_escapes_are_undone() {
        for (logged, served) in [
            ("/api\\x5Cexport", "/api\\export"),
            ("/a\\x22b", "/a\"b"),
            ("/a\\\"b", "/a\"b"),
            ("/a\\\\b", "/a\\b"),
            ("/caf\\xC3\\xA9", "/caf%C3%A9"),
            ("/tab\\x09x", "/tab%09x"),
            ("/\\xff\\xfe", "/%FF%FE"),
            ("/sp\\x20ace", "/sp%20ace"),
            // Not an escape: kept as the `\` it is.
            ("/a\\xZZ", "/a\\xZZ"),
            ("/a\\", "/a\\"),
        ] {
            assert_eq!(unescaped(logged), served, "{logged}");
        }
        assert!(matches!(
            unescaped("/plain/path"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
