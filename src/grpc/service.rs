//! `ShouldRateLimit`: checks a request's wire form, hands its descriptors to the engine, and
//! answers with its decision in `rls.proto`'s terms.

use super::response;
use crate::engine::{Cost, DescriptorRequest, Engine, LimitOverride, MAX_COST};
use crate::envoy_config::Unit;
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::RateLimitService;
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};
use std::num::NonZeroU64;
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// The most descriptors one call may carry.
const MAX_DESCRIPTORS: usize = 1000;

/// The rate limit service, over the daemon's one engine.
#[derive(Clone)]
pub struct RateLimitGrpc {
    engine: Arc<Engine>,
}

impl RateLimitGrpc {
    pub fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }
}

#[tonic::async_trait]
impl RateLimitService for RateLimitGrpc {
    async fn should_rate_limit(
        &self,
        request: Request<RateLimitRequest>,
    ) -> Result<Response<RateLimitResponse>, Status> {
        let request = request.into_inner();
        let descriptors = read(&request).map_err(Status::invalid_argument)?;
        let decision = self
            .engine
            .check_descriptors(&request.domain, &descriptors)
            .await;
        Ok(Response::new(response::of(&decision)))
    }
}

/// The request's descriptors in domain terms, or what is malformed.
fn read(request: &RateLimitRequest) -> Result<Vec<DescriptorRequest<'_>>, String> {
    if request.domain.is_empty() {
        return Err("domain must not be empty".to_owned());
    }
    if request.descriptors.is_empty() {
        return Err("descriptors must not be empty".to_owned());
    }
    if request.descriptors.len() > MAX_DESCRIPTORS {
        return Err(format!("at most {MAX_DESCRIPTORS} descriptors per request"));
    }
    let request_cost = match request.hits_addend {
        // rls.proto: 0 means 1.
        0 => Cost::ONE,
        n => Cost::new(u64::from(n))
            .ok_or_else(|| format!("hits_addend must be between 1 and {MAX_COST}, not {n}"))?,
    };
    request
        .descriptors
        .iter()
        .enumerate()
        .map(|(i, d)| descriptor(d, i, request_cost))
        .collect()
}

fn descriptor(
    d: &RateLimitDescriptor,
    i: usize,
    request_cost: Cost,
) -> Result<DescriptorRequest<'_>, String> {
    let at = format!("descriptors[{i}]");
    if d.entries.is_empty() {
        return Err(format!("{at} has no entries"));
    }
    let mut entries = Vec::with_capacity(d.entries.len());
    for (j, entry) in d.entries.iter().enumerate() {
        if entry.key.is_empty() {
            return Err(format!("{at}.entries[{j}] has an empty key"));
        }
        entries.push((entry.key.as_str(), entry.value.as_str()));
    }
    let cost = match &d.hits_addend {
        None => request_cost,
        Some(n) => Cost::new(n.value).ok_or_else(|| {
            format!(
                "{at}.hits_addend must be between 1 and {MAX_COST}, not {}",
                n.value
            )
        })?,
    };
    let limit = match &d.limit {
        None => None,
        Some(o) => {
            let requests_per_unit = NonZeroU64::new(u64::from(o.requests_per_unit));
            // type.v3.RateLimitUnit: SECOND 1, MINUTE 2, HOUR 3, DAY 4, MONTH 5, YEAR 6 (WEEK 7
            // in newer Envoys).
            let unit = match o.unit {
                1 => Unit::Second,
                2 => Unit::Minute,
                3 => Unit::Hour,
                4 => Unit::Day,
                5 => Unit::Month,
                6 => Unit::Year,
                7 => Unit::Week,
                other => {
                    return Err(format!(
                        "{at}.limit.unit must be SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR, not {other}"
                    ));
                }
            };
            Some(LimitOverride {
                requests_per_unit,
                unit,
            })
        }
    };
    Ok(DescriptorRequest {
        entries,
        cost,
        limit,
    })
}
