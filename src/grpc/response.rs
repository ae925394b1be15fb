//! Decisions back as `rls.proto` wants them: one status per descriptor, the overall code, and
//! the same rate limit headers as the HTTP API in `response_headers_to_add`.

use crate::engine::Decision;
use crate::envoy_config::Unit;
use crate::http::headers;
use axum::http::HeaderMap;
use envoy_types::pb::envoy::config::core::v3::HeaderValue;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::{
    Code, DescriptorStatus, RateLimit, rate_limit::Unit as WireUnit,
};
use envoy_types::pb::google::protobuf::Duration as WireDuration;

/// What one descriptor came to.
#[derive(Debug)]
pub enum Answer {
    Decided(Box<Decision>),
    /// `unlimited: true`: passes, with no limit (remaining is `u32::MAX`, as in
    /// envoyproxy/ratelimit).
    Unlimited,
    /// Matched nothing, named no subject, or was replaced: passes with no limit.
    NoLimit,
    /// A limit of 0 requests: over limit, always.
    Blocked {
        name: String,
        unit: Unit,
    },
}

pub fn wire_unit(unit: Unit) -> WireUnit {
    match unit {
        Unit::Second => WireUnit::Second,
        Unit::Minute => WireUnit::Minute,
        Unit::Hour => WireUnit::Hour,
        Unit::Day => WireUnit::Day,
        Unit::Week => WireUnit::Week,
        Unit::Month => WireUnit::Month,
        Unit::Year => WireUnit::Year,
    }
}

/// The status of one descriptor.
pub fn status(answer: &Answer) -> DescriptorStatus {
    let ok = |remaining: u32| DescriptorStatus {
        code: Code::Ok as i32,
        limit_remaining: remaining,
        ..Default::default()
    };
    let d = match answer {
        Answer::Unlimited => return ok(u32::MAX),
        Answer::NoLimit => return ok(0),
        Answer::Blocked { name, unit } => {
            return DescriptorStatus {
                code: Code::OverLimit as i32,
                current_limit: Some(RateLimit {
                    name: name.clone(),
                    requests_per_unit: 0,
                    unit: wire_unit(*unit) as i32,
                }),
                ..Default::default()
            };
        }
        Answer::Decided(d) => d,
    };
    let code = if d.allowed { Code::Ok } else { Code::OverLimit };
    // Shadow limits and a store that failed open show no limit, as on HTTP.
    let current_limit = match (d.headline_limit(), d.limit) {
        (Some(limit), Some(effective)) => Some(RateLimit {
            name: limit.name.clone(),
            requests_per_unit: clamp(effective),
            // A policy window that is not one whole unit (5m, say) has no unit to name.
            unit: Unit::of_window(limit.window).map_or(WireUnit::Unknown, wire_unit) as i32,
        }),
        _ => None,
    };
    DescriptorStatus {
        code: code as i32,
        limit_remaining: d.remaining.map_or(0, clamp),
        duration_until_reset: current_limit.as_ref().map(|_| duration(d.reset_after)),
        current_limit,
        ..Default::default()
    }
}

fn clamp(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn duration(micros: u64) -> WireDuration {
    WireDuration {
        seconds: i64::try_from(micros / 1_000_000).unwrap_or(i64::MAX),
        // Below 10^9: fits.
        nanos: ((micros % 1_000_000) * 1_000) as i32,
    }
}

/// The headers HTTP would send for these decisions taken as one request: those of the limit
/// with the least remaining quota (ties: the shorter window), and `Retry-After` when denied
/// (none when `blocked`: a limit of 0 never lets the request pass).
pub fn headers(decisions: &[&Decision], admitted: bool, blocked: bool) -> Vec<HeaderValue> {
    let window = |d: &Decision| d.headline_limit().map_or(0, |l| l.window_micros());
    let Some(head) = decisions
        .iter()
        .filter(|d| d.limit.is_some())
        .min_by_key(|d| (d.remaining, window(d)))
        .or(decisions.iter().find(|d| !d.allowed))
        .or(decisions.first())
    else {
        return Vec::new();
    };
    let mut shown = (*head).clone();
    shown.allowed = admitted;
    shown.retry_after = if admitted {
        Some(0)
    } else if blocked {
        None
    } else {
        // The time the whole request could pass: the latest of its denials.
        decisions
            .iter()
            .filter(|d| !d.allowed)
            .map(|d| d.retry_after)
            .try_fold(0, |acc, r| r.map(|r| acc.max(r)))
    };
    let mut map = HeaderMap::new();
    headers::add(&shown, &mut map);
    map.iter()
        .filter_map(|(name, value)| {
            Some(HeaderValue {
                key: name.as_str().to_owned(),
                value: value.to_str().ok()?.to_owned(),
                ..Default::default()
            })
        })
        .collect()
}
