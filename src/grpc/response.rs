//! Decisions back as `rls.proto` wants them: one status per descriptor, the overall code, and
//! the same rate limit headers as the HTTP API in `response_headers_to_add`.

use crate::engine::{DescriptorOutcome, DescriptorsDecision};
use crate::envoy_config::Unit;
use crate::ratelimit_headers;
use envoy_types::pb::envoy::config::core::v3::HeaderValue;
use envoy_types::pb::envoy::service::ratelimit::v3::RateLimitResponse;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::{
    Code, DescriptorStatus, RateLimit, rate_limit::Unit as WireUnit,
};
use envoy_types::pb::google::protobuf::Duration as WireDuration;

/// The response to a call the engine decided.
pub fn of(decision: &DescriptorsDecision) -> RateLimitResponse {
    RateLimitResponse {
        overall_code: if decision.admitted {
            Code::Ok
        } else {
            Code::OverLimit
        } as i32,
        statuses: decision.outcomes.iter().map(status).collect(),
        response_headers_to_add: decision
            .headline
            .as_ref()
            .map(|d| {
                ratelimit_headers::render(d)
                    .into_iter()
                    .map(|(name, value)| HeaderValue {
                        key: name.to_owned(),
                        value,
                        ..Default::default()
                    })
                    .collect()
            })
            .unwrap_or_default(),
        ..Default::default()
    }
}

fn wire_unit(unit: Unit) -> WireUnit {
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
fn status(outcome: &DescriptorOutcome) -> DescriptorStatus {
    let ok = |remaining: u32| DescriptorStatus {
        code: Code::Ok as i32,
        limit_remaining: remaining,
        ..Default::default()
    };
    let d = match outcome {
        // remaining is `u32::MAX` for `unlimited: true`, as in envoyproxy/ratelimit.
        DescriptorOutcome::Unlimited => return ok(u32::MAX),
        DescriptorOutcome::NoLimit => return ok(0),
        // Shadow answers show no limit, as on HTTP.
        DescriptorOutcome::ShadowBlocked { .. } => return ok(0),
        DescriptorOutcome::Blocked { name, unit } => {
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
        // No limit to name: the descriptor was never weighed against one.
        DescriptorOutcome::Refused(_) => {
            return DescriptorStatus {
                code: Code::OverLimit as i32,
                ..Default::default()
            };
        }
        DescriptorOutcome::Decided(d) => d,
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
