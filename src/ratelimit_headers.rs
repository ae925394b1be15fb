//! Rate limit headers of a decision: the IETF draft's `RateLimit-Policy` and `RateLimit`
//! (structured fields), the common `X-RateLimit-*`, and `Retry-After` on a denial.
//!
//! Rendered once here as plain (name, value) pairs, so the HTTP API and Envoy's gRPC service
//! (which hands them to Envoy in `response_headers_to_add`) send the very same headers.

use crate::engine::Decision;
use sfv::{Integer, KeyRef, ListSerializer, StringRef};

pub const RATELIMIT_POLICY: &str = "ratelimit-policy";
pub const RATELIMIT: &str = "ratelimit";
pub const X_LIMIT: &str = "x-ratelimit-limit";
pub const X_REMAINING: &str = "x-ratelimit-remaining";
pub const X_RESET: &str = "x-ratelimit-reset";
pub const RETRY_AFTER: &str = "retry-after";

/// Whole seconds, rounded up.
pub fn ceil_secs(micros: u64) -> u64 {
    micros.div_ceil(1_000_000)
}

/// The headers of the limit a decision is shown by (none when no enforced limit applies or the
/// store failed open), and `Retry-After` when it is denied with a time to name. Names are
/// lower case; values are visible ASCII.
pub fn render(decision: &Decision) -> Vec<(&'static str, String)> {
    let mut headers = Vec::with_capacity(6);
    if let (Some(limit), Some(remaining), Some(headline)) = (
        decision.limit,
        decision.remaining,
        decision.headline_limit(),
    ) {
        let window = ceil_secs(headline.window_micros()).max(1);
        let reset = ceil_secs(decision.reset_after);
        let name = printable(&headline.name);
        if let Some(value) = structured(&name, ("q", limit), ("w", window)) {
            headers.push((RATELIMIT_POLICY, value));
        }
        if let Some(value) = structured(&name, ("r", remaining), ("t", reset)) {
            headers.push((RATELIMIT, value));
        }
        headers.push((X_LIMIT, limit.to_string()));
        headers.push((X_REMAINING, remaining.to_string()));
        headers.push((X_RESET, reset.to_string()));
    }
    if let (false, Some(retry)) = (decision.allowed, decision.retry_after) {
        headers.push((RETRY_AFTER, ceil_secs(retry).to_string()));
    }
    headers
}

/// `"name";a=1;b=2` as a one-member structured-field list.
fn structured(name: &str, first: (&str, u64), second: (&str, u64)) -> Option<String> {
    let mut list = ListSerializer::new();
    fn key(k: &str) -> Option<&KeyRef> {
        KeyRef::from_str(k).ok()
    }
    let int = |n: u64| Integer::try_from(n).unwrap_or(Integer::MAX);
    list.bare_item(StringRef::from_str(name).ok()?)
        .parameter(key(first.0)?, int(first.1))
        .parameter(key(second.0)?, int(second.1));
    list.finish()
}

/// Limit names as a structured-field string allows (printable ASCII).
fn printable(name: &str) -> String {
    name.chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
        .collect()
}
