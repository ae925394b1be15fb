//! One line of an nginx/Apache combined log, parsed in place.
//!
//! `$remote_addr $ident $remote_user [$time_local] "$request" $status $body_bytes_sent
//! "$http_referer" "$http_user_agent"`, then anything (Traefik and nginx configurations append
//! quoted and unquoted fields). Lines of the common log format (no referer, no user agent)
//! are read too. Quoted fields keep the escapes the server wrote (`\"`, `\x22`), so a field is
//! a slice of the line; only the request target is unescaped ([`super::escapes`]), since its
//! path is matched against endpoint rules.

use super::escapes::unescaped;
use super::time::{TimeError, parse_clf_time};
use crate::clock::Micros;
use crate::engine::path_of;
use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq)]
pub struct CombinedLine<'a> {
    /// `$remote_addr` as written (an address, or a host name under `HostnameLookups`).
    pub address: &'a str,
    /// `$remote_user`; `None` for `-`.
    pub user: Option<&'a str>,
    pub at: Micros,
    /// The request line's method; `None` when the request line is not `METHOD TARGET ...`.
    pub method: Option<&'a str>,
    /// The request target's path without query or fragment (an absolute URI's path, `/` when
    /// it has none), escapes undone; `-` for a request line without a target (empty, or a
    /// single word).
    pub endpoint: Cow<'a, str>,
    /// `None` for `-`.
    pub status: Option<u16>,
    /// `None` when absent or `-`.
    pub referer: Option<&'a str>,
    /// `None` when absent or `-`.
    pub user_agent: Option<&'a str>,
    /// The request's duration in milliseconds, from a field after the user agent (see
    /// [`latency_of`]).
    pub latency_ms: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CombinedError {
    #[error("empty line")]
    Empty,
    #[error(
        "a JSON object, not a combined log line (JSON lines are read with --format jsonl or auto)"
    )]
    JsonObject,
    #[error("missing field {0}")]
    Missing(&'static str),
    #[error("expected {expected} at byte {at}")]
    Expected { expected: &'static str, at: usize },
    #[error("unterminated {0}")]
    Unterminated(&'static str),
    #[error("bad date [{text}]: {error}")]
    Date { text: String, error: TimeError },
    #[error("bad status {0:?} (a number from 100 to 599, or -)")]
    Status(String),
}

/// Parses one combined (or common) log line; the line ending must already be removed.
pub fn parse_combined_line(line: &str) -> Result<CombinedLine<'_>, CombinedError> {
    if line.trim().is_empty() {
        return Err(CombinedError::Empty);
    }
    if line.trim_start().starts_with('{') {
        return Err(CombinedError::JsonObject);
    }
    let mut cursor = Cursor { line, at: 0 };
    let address = cursor
        .token()
        .ok_or(CombinedError::Missing("$remote_addr"))?;
    cursor.token().ok_or(CombinedError::Missing("$ident"))?;
    let user = cursor
        .token()
        .ok_or(CombinedError::Missing("$remote_user"))?;
    let date = cursor.delimited('[', ']', "[$time_local]")?;
    let at = parse_clf_time(date).map_err(|source| CombinedError::Date {
        text: date.to_owned(),
        error: source,
    })?;
    let request = cursor.quoted("\"$request\"")?;
    let status = cursor.token().ok_or(CombinedError::Missing("$status"))?;
    let status = match status {
        "-" => None,
        text => Some(
            text.parse::<u16>()
                .ok()
                .filter(|s| (100..=599).contains(s))
                .ok_or_else(|| CombinedError::Status(text.to_owned()))?,
        ),
    };
    // `$body_bytes_sent`, then the optional quoted referer and user agent.
    let _bytes = cursor.token();
    let referer = cursor.optional_quoted()?;
    let user_agent = match referer {
        Some(_) => cursor.optional_quoted()?,
        None => None,
    };
    let (method, endpoint) = endpoint_of(request);
    let latency_ms = latency_of(&line[cursor.at..]);
    Ok(CombinedLine {
        address,
        user: dash_is_none(user),
        at,
        method,
        endpoint,
        status,
        referer: referer.and_then(dash_is_none),
        user_agent: user_agent.and_then(dash_is_none),
        latency_ms,
    })
}

/// A bare number of seconds this large is a timestamp (`$msec`), not a request's duration.
const MAX_BARE_SECONDS: f64 = 86_400.0;

/// The first field of `rest` (what follows the user agent) that gives the request's
/// duration, in milliseconds: `rt=0.123` or `request_time=0.123` (seconds, nginx's
/// `$request_time` with a name), a bare number with a decimal point under a day (`0.123`,
/// seconds: `$request_time` appended as is; `$msec` is skipped), or `123ms` (Traefik's
/// duration). Quotes are ignored.
pub fn latency_of(rest: &str) -> Option<f64> {
    let number = |text: &str| {
        text.parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    rest.split_whitespace()
        .map(|field| field.trim_matches('"'))
        .find_map(|field| {
            let named = field
                .strip_prefix("rt=")
                .or_else(|| field.strip_prefix("request_time="));
            if let Some(seconds) = named {
                return number(seconds).map(|s| s * 1000.0);
            }
            if let Some(ms) = field.strip_suffix("ms") {
                return number(ms);
            }
            let bare_seconds =
                field.contains('.') && field.bytes().all(|b| b.is_ascii_digit() || b == b'.');
            // Over a day it is a time (nginx's `$msec`), not a duration.
            bare_seconds
                .then(|| number(field))
                .flatten()
                .filter(|s| *s < MAX_BARE_SECONDS)
                .map(|s| s * 1000.0)
        })
}

fn dash_is_none(text: &str) -> Option<&str> {
    (text != "-" && !text.is_empty()).then_some(text)
}

/// The method and the endpoint of a request line (`GET /a?b HTTP/1.1` → `GET`, `/a`).
fn endpoint_of(request: &str) -> (Option<&str>, Cow<'_, str>) {
    let mut parts = request.split(' ').filter(|p| !p.is_empty());
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return (None, Cow::Borrowed("-"));
    };
    // As forward auth reads a request target: an absolute form's scheme and host go.
    let endpoint = match unescaped(target) {
        Cow::Borrowed(target) => Cow::Borrowed(path_of(target)),
        Cow::Owned(target) => Cow::Owned(path_of(&target).to_owned()),
    };
    (Some(method), endpoint)
}

struct Cursor<'a> {
    line: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn skip_spaces(&mut self) {
        let rest = &self.line[self.at..];
        self.at += rest.len() - rest.trim_start_matches([' ', '\t']).len();
    }

    /// The next run of non-space characters.
    fn token(&mut self) -> Option<&'a str> {
        self.skip_spaces();
        let rest = &self.line[self.at..];
        let len = rest.find([' ', '\t']).unwrap_or(rest.len());
        self.at += len;
        (len > 0).then(|| &rest[..len])
    }

    fn delimited(
        &mut self,
        open: char,
        close: char,
        what: &'static str,
    ) -> Result<&'a str, CombinedError> {
        self.skip_spaces();
        let rest = &self.line[self.at..];
        let Some(inner) = rest.strip_prefix(open) else {
            return Err(CombinedError::Expected {
                expected: what,
                at: self.at,
            });
        };
        let end = inner.find(close).ok_or(CombinedError::Unterminated(what))?;
        self.at += open.len_utf8() + end + close.len_utf8();
        Ok(&inner[..end])
    }

    /// A `"..."` field whose `\` escapes the next character; the escapes are kept.
    fn quoted(&mut self, what: &'static str) -> Result<&'a str, CombinedError> {
        self.skip_spaces();
        let rest = &self.line[self.at..];
        let Some(inner) = rest.strip_prefix('"') else {
            return Err(CombinedError::Expected {
                expected: what,
                at: self.at,
            });
        };
        let bytes = inner.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 2,
                b'"' => {
                    self.at += 1 + i + 1;
                    return Ok(&inner[..i]);
                }
                _ => i += 1,
            }
        }
        Err(CombinedError::Unterminated(what))
    }

    /// A quoted field if the next one is quoted; `None` at the end or before an unquoted one.
    fn optional_quoted(&mut self) -> Result<Option<&'a str>, CombinedError> {
        self.skip_spaces();
        if self.line[self.at..].starts_with('"') {
            self.quoted("a quoted field").map(Some)
        } else {
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        for (request, method, endpoint) in [
            ("GET /a/b?x=1 HTTP/1.1", Some("GET"), "/a/b"),
            // nginx's escapes undone before the path is read.
            (
                "GET /api\\x5Cexport?q=\\x22 HTTP/1.1",
                Some("GET"),
                "/api\\export",
            ),
            ("GET http://h.example/p?q HTTP/1.1", Some("GET"), "/p"),
            ("GET https://h.example HTTP/1.1", Some("GET"), "/"),
            ("", None, "-"),
            ("batman", None, "-"),
            // As forward auth reads them: any scheme's absolute form, an empty path as `/`.
            ("GET ?x HTTP/1.0", Some("GET"), "/"),
            ("GET HTTP://h.example/p HTTP/1.1", Some("GET"), "/p"),
        ] {
            let (got_method, got_endpoint) = endpoint_of(request);
            assert_eq!(
                (got_method, &*got_endpoint),
                (method, endpoint),
                "{request}"
            );
        }
    }

    #[test]
    fn a_timestamp_is_no_latency() {
        assert_eq!(latency_of(" 0.123"), Some(123.0));
        assert_eq!(latency_of(" 1795613240.123 0.001"), Some(1.0));
    }
}
