//! Reading JSON request bodies with errors that name the problem: wrong content type, oversized
//! body, malformed JSON, unknown or mistyped fields (with their path).

use super::problem::Problem;
use axum::body::Body;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;

/// The largest request body accepted.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A JSON body parsed into `T`, or a 4xx problem saying what is wrong with it.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = Problem;

    async fn from_request(request: Request, _state: &S) -> Result<Self, Problem> {
        let content_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap_or("(not text)").to_owned());
        match content_type.as_deref() {
            Some(ct) if is_json(ct) => {}
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
        let bytes = axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES)
            .await
            .map_err(|_| too_large())?;
        parse(&bytes).map(JsonBody)
    }
}

fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
}

pub fn too_large() -> Problem {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("request body exceeds {MAX_BODY_BYTES} bytes"),
    )
}

/// Parses JSON, naming the field (as a path such as `requests[2].cost`) a type error is in.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Problem> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Problem::bad_request(
            "request body is empty (expected a JSON object)",
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            Problem::bad_request(format!("malformed JSON: {inner}"))
        } else if path == "." {
            Problem::bad_request(format!("invalid request: {}", plain(&inner)))
        } else if inner.to_string().starts_with("unknown field") {
            // The path ends with the unknown field itself; the message names it already.
            match path.rsplit_once('.') {
                Some((parent, _)) => Problem::bad_request(format!("{parent}: {}", plain(&inner))),
                None => Problem::bad_request(plain(&inner)),
            }
        } else {
            Problem::bad_request(format!("field `{path}`: {}", plain(&inner)))
        }
    })?;
    de.end()
        .map_err(|e| Problem::bad_request(format!("malformed JSON: {e}")))?;
    Ok(value)
}

/// serde_json's message without its ` at line 1 column 9` suffix (the path says where).
fn plain(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// An empty body for responses that have none.
pub fn empty() -> Body {
    Body::empty()
}
