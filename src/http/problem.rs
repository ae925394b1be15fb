//! RFC 9457 problem details: every 4xx and 5xx this API sends is one of these.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};

pub const CONTENT_TYPE: &str = "application/problem+json";

/// How much of a problem's `detail` its header copy holds: escaped, at most about 1.5 KiB.
pub const HEADER_DETAIL_BYTES: usize = 512;

/// The IETF ratelimit-headers draft's problem types for denials.
pub const QUOTA_EXCEEDED: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";
pub const ABNORMAL_USAGE: &str =
    "https://iana.org/assignments/http-problem-types#abnormal-usage-detected";
pub const REDUCED_CAPACITY: &str =
    "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity";

/// A problem: `type`, `title`, `status`, `detail`, and any extension members.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Problem {
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Extension members (`violated-policies`, `errors`, ...).
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub extra: Map<String, Value>,
}

impl Problem {
    /// A problem with no specific type (`about:blank`), titled by its status.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            kind: "about:blank".to_owned(),
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            status: status.as_u16(),
            detail: detail.into(),
            extra: Map::new(),
        }
    }

    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail)
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// The problem as one line of JSON in visible ASCII (non-ASCII escaped as `\uXXXX`), for a
    /// header: nginx's `auth_request` drops a subrequest's body but keeps its headers.
    /// The `detail` is cut to [`HEADER_DETAIL_BYTES`] (ending in `...`): a long path quoted in
    /// it would otherwise pass the 4 KiB nginx reads of an upstream's headers, and nginx would
    /// answer 502 instead of the problem.
    pub fn header_value(&self) -> Option<HeaderValue> {
        let cut;
        let shown = if self.detail.len() > HEADER_DETAIL_BYTES {
            let end = (0..=HEADER_DETAIL_BYTES)
                .rev()
                .find(|&i| self.detail.is_char_boundary(i))
                .unwrap_or(0);
            cut = Self {
                detail: format!("{}...", &self.detail[..end]),
                ..self.clone()
            };
            &cut
        } else {
            self
        };
        let json = serde_json::to_string(shown).ok()?;
        let mut ascii = String::with_capacity(json.len());
        for c in json.chars() {
            if c.is_ascii() {
                ascii.push(c);
            } else {
                for unit in c.encode_utf16(&mut [0; 2]) {
                    ascii.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
        HeaderValue::from_str(&ascii).ok()
    }

    pub fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = self.status_code();
        let mut response = (status, Json(self)).into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
        response
    }
}

#[cfg(test)]
mod tests {
    use super::{HEADER_DETAIL_BYTES, Problem};

    #[test]
    fn the_header_copy_cuts_a_long_detail_on_a_character_boundary() {
        // Two-byte characters from an odd offset: byte 512 falls inside one.
        let detail = format!("x{}", "é".repeat(600));
        let value = Problem::bad_request(detail)
            .header_value()
            .expect("a header value");
        let json: serde_json::Value =
            serde_json::from_slice(value.as_bytes()).expect("the header is JSON");
        let shown = json["detail"].as_str().unwrap_or_default();
        let kept = shown.strip_suffix("...").expect("cut, ending in ...");
        assert_eq!(kept, format!("x{}", "é".repeat(255)));
        assert!(kept.len() <= HEADER_DETAIL_BYTES);
        assert!(value.len() < 2048, "{} bytes", value.len());
        // A short detail is whole.
        let value = Problem::bad_request("short")
            .header_value()
            .expect("a header value");
        assert!(
            value
                .to_str()
                .unwrap_or_default()
                .contains(r#""detail":"short""#)
        );
    }
}
