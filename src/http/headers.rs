//! Rate limit headers: the IETF draft's `RateLimit-Policy` and `RateLimit` (structured fields),
//! the common `X-RateLimit-*`, and `Retry-After` on a denial.

use crate::engine::Decision;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use sfv::{Integer, KeyRef, ListSerializer, StringRef};

pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
pub const X_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
pub const X_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
pub const X_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// Whole seconds, rounded up.
pub fn ceil_secs(micros: u64) -> u64 {
    micros.div_ceil(1_000_000)
}

/// Adds the headers of the limit a decision is shown by (none when no enforced limit applies
/// or the store failed open).
pub fn add(decision: &Decision, headers: &mut HeaderMap) {
    let (Some(limit), Some(remaining), Some(headline)) = (
        decision.limit,
        decision.remaining,
        decision.headline_limit(),
    ) else {
        add_retry_after(decision, headers);
        return;
    };
    let window = ceil_secs(headline.window_micros()).max(1);
    let reset = ceil_secs(decision.reset_after);
    let name = printable(&headline.name);
    if let Some(value) = structured(&name, ("q", limit), ("w", window)) {
        headers.insert(RATELIMIT_POLICY, value);
    }
    if let Some(value) = structured(&name, ("r", remaining), ("t", reset)) {
        headers.insert(RATELIMIT, value);
    }
    headers.insert(X_LIMIT, HeaderValue::from(limit));
    headers.insert(X_REMAINING, HeaderValue::from(remaining));
    headers.insert(X_RESET, HeaderValue::from(reset));
    add_retry_after(decision, headers);
}

fn add_retry_after(decision: &Decision, headers: &mut HeaderMap) {
    if let (false, Some(retry)) = (decision.allowed, decision.retry_after) {
        headers.insert(
            axum::http::header::RETRY_AFTER,
            HeaderValue::from(ceil_secs(retry)),
        );
    }
}

/// `"name";a=1;b=2` as a one-member structured-field list.
fn structured(name: &str, first: (&str, u64), second: (&str, u64)) -> Option<HeaderValue> {
    let mut list = ListSerializer::new();
    fn key(k: &str) -> Option<&KeyRef> {
        KeyRef::from_str(k).ok()
    }
    let int = |n: u64| Integer::try_from(n).unwrap_or(Integer::MAX);
    list.bare_item(StringRef::from_str(name).ok()?)
        .parameter(key(first.0)?, int(first.1))
        .parameter(key(second.0)?, int(second.1));
    HeaderValue::from_str(&list.finish()?).ok()
}

/// Limit names as a structured-field string allows (printable ASCII).
fn printable(name: &str) -> String {
    name.chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
        .collect()
}
