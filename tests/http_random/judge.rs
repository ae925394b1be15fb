//! What is wrong with a response, if anything: a 5xx, an unexpected status, or a 4xx that is
//! not RFC 9457 problem+json naming what is wrong.
//!
//! The contract every error of the API keeps, whatever was sent.

use crate::common::daemon::Reply;
use crate::request::Request;
use crate::{MAX_BATCH_BODY, MAX_BODY};
use serde_json::Value;

/// What is wrong with a response, if anything.
pub fn judge(request: &Request, head: bool, reply: &Reply) -> Result<&'static str, String> {
    let status = reply.status;
    if status >= 500 {
        return Err(format!("status {status}"));
    }
    if let Some(expect) = request.expect {
        if !expect.contains(&status) {
            return Err(format!("{status} to a valid request (expected {expect:?})"));
        }
    }
    let cap = if request.target.starts_with(b"/v1/check/batch") {
        MAX_BATCH_BODY
    } else {
        MAX_BODY
    };
    if status == 413 && request.payload_len().is_some_and(|n| n <= cap) {
        return Err(format!(
            "413 for a body of at most {cap} bytes ({:?})",
            request.payload_len()
        ));
    }
    if !(400..500).contains(&status) {
        return Ok("");
    }
    let content_type = reply.header("content-type");
    if content_type.is_none() && reply.body.is_empty() {
        // hyper's own rejection of malformed HTTP (see the comment atop http_random.rs).
        return if request.wellformed {
            Err(format!("bare {status} (no body) to a well-formed request"))
        } else {
            Ok(" bare (hyper)")
        };
    }
    if !content_type.is_some_and(|ct| ct.starts_with("application/problem+json")) {
        return Err(format!("{status} with Content-Type {content_type:?}"));
    }
    if head {
        return Ok("");
    }
    let problem: Value = serde_json::from_slice(&reply.body)
        .map_err(|e| format!("{status} with a body that is not JSON ({e})"))?;
    for member in ["type", "title", "detail"] {
        if !problem.get(member).is_some_and(Value::is_string) {
            return Err(format!("{status} problem without a string `{member}`"));
        }
    }
    // A detail that only repeats the title names nothing (the fallback of the middleware that
    // turns other 4xx into problems).
    if problem["detail"]
        .as_str()
        .is_some_and(|d| d.trim().is_empty() || d == problem["title"])
    {
        return Err(format!("{status} problem whose detail names nothing"));
    }
    if problem.get("status").and_then(Value::as_u64) != Some(u64::from(status)) {
        return Err(format!(
            "{status} problem whose `status` is {:?}",
            problem.get("status")
        ));
    }
    Ok("")
}
