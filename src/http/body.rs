//! Reading JSON request bodies with errors that name the problem: wrong content type, oversized
//! body, malformed JSON, unknown or mistyped fields (with their path).

use super::problem::Problem;
use axum::body::Body;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use serde::de::{Deserialize, DeserializeOwned, Deserializer, IgnoredAny, SeqAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// The largest request body accepted, but for a batch.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The largest batch body accepted: room for 1000 check requests with every field at its
/// longest (a user of 512 bytes, an endpoint of 2 KiB) written without `\u` escapes, so a
/// batch of plain JSON is refused for its item count, not for its size.
pub const MAX_BATCH_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The route whose bodies may be as large as [`MAX_BATCH_BODY_BYTES`].
pub const BATCH_PATH: &str = "/v1/check/batch";

/// The largest body accepted on `path`.
pub fn body_limit(path: &str) -> usize {
    if path == BATCH_PATH {
        MAX_BATCH_BODY_BYTES
    } else {
        MAX_BODY_BYTES
    }
}

/// A JSON body parsed into `T`, or a 4xx problem saying what is wrong with it; bodies over
/// `LIMIT` bytes are refused with 413.
pub struct JsonBody<T, const LIMIT: usize = MAX_BODY_BYTES>(pub T);

impl<S: Send + Sync, T: DeserializeOwned, const LIMIT: usize> FromRequest<S>
    for JsonBody<T, LIMIT>
{
    type Rejection = Problem;

    async fn from_request(request: Request, _state: &S) -> Result<Self, Problem> {
        check_headers(request.headers())?;
        let content_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap_or("(not text)").to_owned());
        match content_type.as_deref() {
            Some(ct) if is_json(ct) => {
                if let Some(charset) = charset(ct).filter(|c| !is_utf8(c)) {
                    return Err(Problem::new(
                        StatusCode::UNSUPPORTED_MEDIA_TYPE,
                        format!(
                            "Content-Type charset must be utf-8 (JSON is UTF-8), not {charset:?}"
                        ),
                    ));
                }
            }
            Some(other) => {
                return Err(Problem::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    format!("Content-Type must be application/json, not {other:?}"),
                ));
            }
            None => {
                return Err(Problem::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "Content-Type must be application/json (the header is missing)",
                ));
            }
        }
        let bytes = axum::body::to_bytes(request.into_body(), LIMIT)
            .await
            .map_err(|e| unreadable(&e, LIMIT))?;
        parse(&bytes).map(JsonBody)
    }
}

/// Refuses what would make the body read as something it is not: a body encoding we do not
/// decode (a gzipped body read as JSON fails as "malformed"), or a `Content-Type` sent twice
/// (which copy counts would be a guess).
fn check_headers(headers: &axum::http::HeaderMap) -> Result<(), Problem> {
    if headers
        .get_all(header::CONTENT_TYPE)
        .iter()
        .nth(1)
        .is_some()
    {
        return Err(Problem::bad_request(
            "header Content-Type is sent more than once: send one",
        ));
    }
    for value in headers.get_all(header::CONTENT_ENCODING) {
        let text = value.to_str().unwrap_or("(not text)");
        let coded = text
            .split(',')
            .map(str::trim)
            .any(|coding| !coding.is_empty() && !coding.eq_ignore_ascii_case("identity"));
        if coded {
            return Err(Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("Content-Encoding {text:?} is not supported: send the body uncompressed"),
            ));
        }
    }
    Ok(())
}

/// The `charset` parameter of a media type, unquoted.
fn charset(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches('"'))
    })
}

fn is_utf8(charset: &str) -> bool {
    charset.eq_ignore_ascii_case("utf-8") || charset.eq_ignore_ascii_case("utf8")
}

fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
}

/// A body that could not be read: 413 when it is over the limit, else 400 with the transport's
/// reason (a malformed chunked encoding, a connection cut short), not a misleading 413.
pub fn unreadable(error: &axum::Error, limit: usize) -> Problem {
    // The limit error is `http_body_util::LengthLimitError` (from `to_bytes` here or from
    // `RequestBodyLimitLayer`), possibly wrapped in `axum::Error`s; that crate is not a
    // dependency of ours, so it is recognised by its message.
    let mut reasons: Vec<String> = Vec::new();
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = next {
        let text = e.to_string();
        if text == "length limit exceeded" {
            return too_large(limit);
        }
        if reasons.last() != Some(&text) {
            reasons.push(text);
        }
        next = e.source();
    }
    Problem::bad_request(format!(
        "the request body could not be read: {}",
        reasons.join(": ")
    ))
}

pub fn too_large(limit: usize) -> Problem {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("request body exceeds {limit} bytes"),
    )
}

/// Parses JSON, naming the field (as a path such as `requests[2].cost`) a type error is in.
/// `T` must be a struct: it is read from a JSON object only (see [`Object`]).
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Problem> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Problem::bad_request(
            "request body is empty (expected a JSON object)",
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: Object<T> = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let parent = parent(e.path());
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            Problem::bad_request(format!("malformed JSON: {}", syntax(&inner)))
        } else if path == "." {
            Problem::bad_request(format!("invalid request: {}", plain(&inner)))
        } else if inner.to_string().starts_with("unknown field") {
            // The path ends with the unknown field itself; the message names it already.
            match parent.is_empty() {
                false => Problem::bad_request(format!("{parent}: {}", plain(&inner))),
                true => Problem::bad_request(plain(&inner)),
            }
        } else {
            Problem::bad_request(format!("field `{path}`: {}", plain(&inner)))
        }
    })?;
    de.end()
        .map_err(|e| Problem::bad_request(format!("malformed JSON: {}", syntax(&e))))?;
    Ok(value.0)
}

/// serde_json's words for a syntax error, but for a lone UTF-16 surrogate (`"\ud800"`), which
/// it reports as a broken escape ("unexpected end of hex escape").
fn syntax(error: &serde_json::Error) -> String {
    let text = error.to_string();
    const SURROGATE: [&str; 2] = [
        "unexpected end of hex escape",
        "lone leading surrogate in hex escape",
    ];
    match SURROGATE.iter().find_map(|words| text.strip_prefix(words)) {
        Some(at) => format!("a \\u escape is a lone UTF-16 surrogate, not a character{at}"),
        None => text,
    }
}

/// A derived struct read from a JSON object only. Serde's derived structs also accept an
/// array of their fields in order, which would let `["alice", "/x"]` pass for a check.
pub struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(MapOnly(deserializer)).map(Object)
    }
}

/// A JSON list of objects of which at most `MAX` are kept, and how many it held: the items past
/// `MAX` are counted without being built, so a 4 MiB batch of `{}`s (a million of them) costs
/// no more memory than a full one before it is refused for its length.
#[derive(Debug)]
pub struct Capped<T, const MAX: usize> {
    pub items: Vec<T>,
    pub held: usize,
}

impl<'de, T: Deserialize<'de>, const MAX: usize> Deserialize<'de> for Capped<T, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(CappedVisitor(PhantomData))
    }
}

struct CappedVisitor<T, const MAX: usize>(PhantomData<T>);

impl<'de, T: Deserialize<'de>, const MAX: usize> Visitor<'de> for CappedVisitor<T, MAX> {
    type Value = Capped<T, MAX>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX));
        while items.len() < MAX {
            match seq.next_element::<Object<T>>()? {
                Some(item) => items.push(item.0),
                None => break,
            }
        }
        let mut held = items.len();
        while seq.next_element::<IgnoredAny>()?.is_some() {
            held += 1;
        }
        Ok(Capped { items, held })
    }
}

/// Reads a struct as a map (never as a sequence); everything else as the inner deserializer.
struct MapOnly<D>(D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for MapOnly<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// The path of the object that holds the last segment (`requests[2]` for `requests[2].cots`),
/// empty at the top level. Built from the segments, as a key may contain a `.` itself.
fn parent(path: &serde_path_to_error::Path) -> String {
    let segments: Vec<&serde_path_to_error::Segment> = path.iter().collect();
    let mut out = String::new();
    for segment in &segments[..segments.len().saturating_sub(1)] {
        match segment {
            serde_path_to_error::Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            other => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&other.to_string());
            }
        }
    }
    out
}

/// serde_json's message without its ` at line 1 column 9` suffix (the path says where), and
/// in JSON's words rather than Rust's (`expected struct CheckBody`, `expected i64`).
fn plain(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let text = match text.rfind(" at line ") {
        Some(i) => &text[..i],
        None => &text,
    };
    if let Some(i) = text.find("expected struct ") {
        return format!("{}expected a JSON object", &text[..i]);
    }
    for (rust, json) in [
        ("expected i64", "expected an integer"),
        ("expected u64", "expected an integer of 0 or more"),
        ("expected f64", "expected a number"),
    ] {
        if let Some(head) = text.strip_suffix(rust) {
            return format!("{head}{json}");
        }
    }
    text.to_owned()
}

/// An empty body for responses that have none.
pub fn empty() -> Body {
    Body::empty()
}
