//! One line of replay's JSON-lines format (what `ratewarden simulate` writes), parsed into
//! values that cannot be invalid: a time, a non-empty user and endpoint, a cost the engine
//! accepts, a status an upstream can answer.
//!
//! Fields the format does not name are ignored (`simulate` adds `archetype`); `headers`, an
//! object of request headers, is this project's addition for `--subject header:NAME`, and
//! `latency_ms`, the upstream's latency, for the `upstream` load source.

use super::time::{TimeError, from_seconds, parse_rfc3339};
use crate::clock::Micros;
use crate::engine::{Cost, MAX_COST};
use crate::simulate::{Label, json_line_problem};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::net::IpAddr;

#[derive(Debug, Clone, PartialEq)]
pub struct JsonLine<'a> {
    pub at: Micros,
    pub user: Cow<'a, str>,
    pub endpoint: Cow<'a, str>,
    /// The `ip` field as written, and as an address.
    pub ip: Option<(Cow<'a, str>, IpAddr)>,
    pub tier: Option<Cow<'a, str>>,
    pub status: Option<u16>,
    /// The upstream's latency in milliseconds (`latency_ms`), finite and at least 0.
    pub latency_ms: Option<f64>,
    pub cost: Cost,
    pub label: Option<Label>,
    pub headers: BTreeMap<Cow<'a, str>, Cow<'a, str>>,
}

impl JsonLine<'_> {
    /// The value of request header `name` (case-insensitive), if the line carries it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_ref())
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JsonlError {
    #[error("empty line")]
    Empty,
    #[error("{0}")]
    Json(String),
    #[error("`ts`: {0}")]
    Time(#[from] TimeError),
    #[error("`{0}` is empty")]
    EmptyField(&'static str),
    #[error("`ip` {0:?} is not an IPv4 or IPv6 address")]
    Ip(String),
    #[error("`cost` must be between 1 and {MAX_COST} (it is {0})")]
    Cost(u64),
    #[error("`status` must be between 100 and 599 (it is {0})")]
    Status(u16),
    #[error("`latency_ms` must be a number of milliseconds, at least 0 (it is {0})")]
    Latency(f64),
}

#[derive(Deserialize)]
struct Raw<'a> {
    #[serde(borrow)]
    ts: RawTime<'a>,
    #[serde(borrow)]
    user: Cow<'a, str>,
    #[serde(borrow)]
    endpoint: Cow<'a, str>,
    #[serde(default, borrow)]
    ip: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tier: Option<Cow<'a, str>>,
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    latency_ms: Option<f64>,
    #[serde(default)]
    cost: Option<u64>,
    #[serde(default)]
    label: Option<Label>,
    /// Read leniently ([`headers_of`]): a field only `--subject header:NAME` reads must not
    /// cost a line its request.
    #[serde(default)]
    headers: Option<serde_json::Value>,
}

/// The request headers of a line: each string value; a list's strings joined with `, `, as
/// HTTP combines a repeated header. Other values, and `headers` that is no object, carry none.
fn headers_of(value: Option<serde_json::Value>) -> BTreeMap<Cow<'static, str>, Cow<'static, str>> {
    use serde_json::Value;
    let Some(Value::Object(fields)) = value else {
        return BTreeMap::new();
    };
    fields
        .into_iter()
        .filter_map(|(name, value)| {
            let text = match value {
                Value::String(text) => text,
                Value::Array(items) => {
                    let texts: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                    if texts.is_empty() {
                        return None;
                    }
                    texts.join(", ")
                }
                _ => return None,
            };
            Some((Cow::Owned(name), Cow::Owned(text)))
        })
        .collect()
}

/// `ts`: a number of seconds, or a string (RFC 3339); anything else is named as such.
enum RawTime<'a> {
    Seconds(f64),
    Text(Cow<'a, str>),
}

impl<'de: 'a, 'a> Deserialize<'de> for RawTime<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RawTime<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("seconds since the epoch (a number) or an RFC 3339 time (a string)")
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(RawTime::Seconds(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(RawTime::Seconds(v as f64))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(RawTime::Seconds(v as f64))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(RawTime::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(RawTime::Text(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// Parses one JSON-lines record; the line ending must already be removed.
pub fn parse_jsonl_line(line: &str) -> Result<JsonLine<'_>, JsonlError> {
    if line.trim().is_empty() {
        return Err(JsonlError::Empty);
    }
    let raw: Raw = serde_json::from_str(line)
        .map_err(|e| JsonlError::Json(json_line_problem::<Raw>(line, e)))?;
    let at = match &raw.ts {
        RawTime::Seconds(s) => from_seconds(*s)?,
        RawTime::Text(t) => parse_rfc3339(t)?,
    };
    if raw.user.is_empty() {
        return Err(JsonlError::EmptyField("user"));
    }
    if raw.endpoint.is_empty() {
        return Err(JsonlError::EmptyField("endpoint"));
    }
    let ip = match raw.ip {
        None => None,
        Some(text) => {
            let addr = text
                .parse::<IpAddr>()
                .map_err(|_| JsonlError::Ip(text.to_string()))?;
            Some((text, addr))
        }
    };
    let cost = match raw.cost {
        None => Cost::ONE,
        Some(n) => Cost::new(n).ok_or(JsonlError::Cost(n))?,
    };
    if let Some(status) = raw.status.filter(|s| !(100..=599).contains(s)) {
        return Err(JsonlError::Status(status));
    }
    if let Some(ms) = raw.latency_ms.filter(|ms| !(ms.is_finite() && *ms >= 0.0)) {
        return Err(JsonlError::Latency(ms));
    }
    Ok(JsonLine {
        at,
        user: raw.user,
        endpoint: raw.endpoint,
        ip,
        tier: raw.tier,
        status: raw.status,
        latency_ms: raw.latency_ms,
        cost,
        label: raw.label,
        headers: headers_of(raw.headers),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// JSON access logs often write a header as a list of values; a line must not be lost for
    /// a header nothing reads.
    #[test]
    fn headers_of_any_shape_never_cost_a_line() {
        let line = |headers: &str| {
            format!(r#"{{"ts": 1795334400, "user": "u", "endpoint": "/a", "headers": {headers}}}"#)
        };
        let parsed = |headers: &str| parse_jsonl_line(&line(headers)).map(|l| l.headers.len());
        for odd in [
            "null",
            "\"x\"",
            "5",
            "[1]",
            r#"{"X-Count": 5, "Accept": []}"#,
        ] {
            assert_eq!(parsed(odd), Ok(0), "{odd}");
        }
        let text = line(r#"{"Accept": ["a", "b"], "X-Api-Key": "k1", "X-N": [1, "c"]}"#);
        let record = parse_jsonl_line(&text).unwrap();
        assert_eq!(record.header("accept"), Some("a, b"));
        assert_eq!(record.header("x-api-key"), Some("k1"));
        assert_eq!(record.header("x-n"), Some("c"));
    }
}
