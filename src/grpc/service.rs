//! `ShouldRateLimit`: checks a request's wire form, hands its descriptors to the engine (as
//! native check requests, or as descriptors of an envoyproxy/ratelimit domain), and answers
//! with the decisions.

use super::native;
use super::response::{self, Answer};
use crate::engine::{Cost, Described, DescriptorRequest, Engine, LimitOverride, MAX_COST};
use crate::envoy_config::Unit;
use crate::metrics::{Api, Metrics};
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::Code;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::RateLimitService;
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};
use std::num::NonZeroU64;
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// The most descriptors one call may carry.
const MAX_DESCRIPTORS: usize = 1000;

/// The rate limit service, over the daemon's one engine and metrics.
#[derive(Clone)]
pub struct RateLimitGrpc {
    engine: Arc<Engine>,
    metrics: Arc<Metrics>,
}

impl RateLimitGrpc {
    pub fn new(engine: Arc<Engine>, metrics: Arc<Metrics>) -> Self {
        Self { engine, metrics }
    }
}

#[tonic::async_trait]
impl RateLimitService for RateLimitGrpc {
    async fn should_rate_limit(
        &self,
        request: Request<RateLimitRequest>,
    ) -> Result<Response<RateLimitResponse>, Status> {
        let started = quanta::Instant::now();
        let request = request.into_inner();
        let descriptors = read(&request).map_err(Status::invalid_argument)?;
        let policy = self.engine.policy();
        let (answers, admitted) = match policy
            .envoy
            .as_ref()
            .and_then(|c| c.domain(&request.domain))
        {
            Some(domain) => {
                let described = self.engine.plan_descriptors(&policy, domain, &descriptors);
                self.decide(described, &domain.name).await
            }
            None => {
                let described = self.plan_native(&descriptors).await?;
                self.decide(described, "native").await
            }
        };
        let decisions: Vec<&crate::engine::Decision> = answers
            .iter()
            .filter_map(|a| match a {
                Answer::Decided(d) => Some(&**d),
                _ => None,
            })
            .collect();
        let blocked = answers.iter().any(|a| matches!(a, Answer::Blocked { .. }));
        self.metrics.observe_decision(Api::Grpc, started.elapsed());
        // Counted once per call, as HTTP counts a request: by the descriptor that denied (or
        // would have, in shadow), else the one with the least remaining.
        let deciding = decisions
            .iter()
            .find(|d| !d.allowed)
            .or(decisions.iter().find(|d| d.shadow))
            .or(decisions
                .iter()
                .filter(|d| d.limit.is_some())
                .min_by_key(|d| d.remaining));
        if let Some(d) = deciding {
            self.metrics.record_decision(d);
        }
        Ok(Response::new(RateLimitResponse {
            overall_code: if admitted { Code::Ok } else { Code::OverLimit } as i32,
            statuses: answers.iter().map(response::status).collect(),
            response_headers_to_add: response::headers(&decisions, admitted, blocked),
            ..Default::default()
        }))
    }
}

impl RateLimitGrpc {
    /// Native descriptors as planned check requests (`Unmatched` for one without a subject).
    async fn plan_native(
        &self,
        descriptors: &[DescriptorRequest<'_>],
    ) -> Result<Vec<Described>, Status> {
        let mut described = Vec::with_capacity(descriptors.len());
        for (i, descriptor) in descriptors.iter().enumerate() {
            let Some(native) = native::request(&descriptor.entries, descriptor.cost, i)
                .map_err(Status::invalid_argument)?
            else {
                described.push(Described::Unmatched);
                continue;
            };
            let check = &native.request;
            let stored = match check.tier {
                Some(_) => None,
                None => self.engine.stored_tier(check.user).await,
            };
            let plan = if native.has_endpoint {
                self.engine.plan(check, stored.as_deref())
            } else {
                self.engine.plan_default_endpoint(check, stored.as_deref())
            }
            .map_err(|e| Status::invalid_argument(format!("descriptors[{i}]: {e}")))?;
            described.push(Described::Limited(Box::new(plan)));
        }
        Ok(described)
    }

    /// Decides the limited descriptors together; the others pass.
    async fn decide(&self, described: Vec<Described>, domain: &str) -> (Vec<Answer>, bool) {
        let mut plans = Vec::new();
        let mut blocked = false;
        let mut answers: Vec<Option<Answer>> = Vec::with_capacity(described.len());
        for d in described {
            answers.push(match d {
                Described::Blocked { name, unit } => {
                    blocked = true;
                    Some(Answer::Blocked { name, unit })
                }
                Described::Limited(plan) => {
                    plans.push(*plan);
                    None
                }
                Described::Unlimited => Some(Answer::Unlimited),
                Described::Replaced => Some(Answer::NoLimit),
                Described::Unmatched => {
                    self.metrics
                        .envoy_unmatched
                        .with_label_values(&[domain])
                        .inc();
                    Some(Answer::NoLimit)
                }
            });
        }
        if plans.is_empty() {
            return (answers.into_iter().flatten().collect(), !blocked);
        }
        let together = self.engine.decide_together(plans, blocked).await;
        let mut decisions = together.decisions.into_iter();
        let answers = answers
            .into_iter()
            .map(|a| match a {
                Some(a) => a,
                None => decisions
                    .next()
                    .map_or(Answer::NoLimit, |d| Answer::Decided(Box::new(d))),
            })
            .collect();
        (answers, together.admitted)
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
