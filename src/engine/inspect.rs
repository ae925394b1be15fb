//! The admin view of a subject: tier, standing, scale, and each applicable limit's base and
//! effective capacity and usage, read with dry runs of the engine's own plan, so it shows
//! exactly what the next check would be judged against, and consumes nothing.

use super::planner::EndpointChoice;
use super::{CheckError, CheckRequest, Engine, Plan};
use crate::clock::Micros;
use crate::features::SubjectFeatures;
use crate::limit::Algorithm;
use crate::limit::KeyHash;
use crate::policy::KeyScope;
use crate::store::{Applied, Store, StoreError};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

/// Whose view, and of which limits.
#[derive(Debug, Clone, Copy)]
pub struct SubjectQuery<'a> {
    /// The subject's keyed hash ([`Engine::subject_of`] a user id, or a hash the flagged list
    /// gave): the view needs no raw id.
    pub subject: KeyHash,
    /// The endpoint whose rule's limits are listed with the tier's; `None`: `default_endpoint`.
    pub endpoint: Option<&'a str>,
    /// A client address, for the usage of `key: ip` rules (without it they show no usage).
    pub ip: Option<IpAddr>,
    /// The tier a check names (its `tier` field or `X-Tier`), which no store knows; `None`:
    /// the stored tier, else the default.
    pub tier: Option<&'a str>,
}

/// Where the tier in force came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TierSource {
    Stored,
    Default,
    /// Named by the view's query, as a check names it.
    Query,
}

/// Why a subject gets what it gets.
#[derive(Debug, Clone)]
pub struct SubjectInspection {
    pub subject: KeyHash,
    pub tier: String,
    pub tier_source: TierSource,
    /// What the tier store holds for the subject, whether or not the policy has that tier.
    pub stored_tier: Option<String>,
    /// The endpoint rule as written in the policy (`default` for `default_endpoint`).
    pub endpoint_rule: String,
    pub abuse_score: Option<f64>,
    pub flagged: bool,
    pub load_factor: f64,
    /// The factor of the endpoint rule's own load source, which its limits scale by instead
    /// of `load_factor`; `None` when the rule has none.
    pub rule_load_factor: Option<f64>,
    /// The load factor for this tier times the applied anomaly factor.
    pub scale: f64,
    /// The last control cycle's view of the subject; `None` without activity in the window.
    pub observed: Option<SubjectFeatures>,
    /// The live anomaly threshold, and the requests in the window scoring takes.
    pub threshold: f64,
    pub min_requests: u64,
    /// When the flag in force began, and the end of its hold (`None` when not flagged).
    pub flag_start: Option<Micros>,
    pub held_until: Option<Micros>,
    /// Until when the admin API allowlisted the subject, if it is now.
    pub allowlisted_until: Option<Micros>,
    /// The tier's limits, then the endpoint rule's.
    pub limits: Vec<LimitUsage>,
}

/// One applicable limit and the subject's usage of it.
#[derive(Debug, Clone)]
pub struct LimitUsage {
    /// In the tier (else in the endpoint rule).
    pub in_tier: bool,
    pub name: String,
    pub algorithm: Algorithm,
    /// The capacity the policy states (the burst for token_bucket and gcra).
    pub base: u64,
    /// The capacity after scaling, what the next request is checked against.
    pub effective: u64,
    /// Quota consumed and not yet restored, read against whichever of `base` and `effective`
    /// is larger (`None` for a `key: ip` limit without an address).
    pub used: Option<u64>,
    /// Quota left now, against `effective`.
    pub remaining: Option<u64>,
    pub window: Duration,
    pub key: KeyScope,
    pub shadow: bool,
    /// The load factor this limit is scaled by: the rule's own, the policy's, or 1 when it
    /// is exempt (`adaptive: false`).
    pub load_factor: f64,
}

/// Why a subject cannot be shown.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    #[error(transparent)]
    Undecidable(#[from] CheckError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl<S: Store> Engine<S> {
    /// The view of one subject. Consumes nothing.
    pub async fn inspect_subject(
        &self,
        query: SubjectQuery<'_>,
    ) -> Result<SubjectInspection, InspectError> {
        let stored = self.stored_tier_by_hash(query.subject).await;
        // A `key: ip` rule needs an address to be planned. Without one a placeholder address
        // stands in, and the usage of the rule's limits is left out (`None`) rather than shown
        // for the placeholder: their base and effective capacities do not depend on it.
        // The user id is never read: the plan counts under `query.subject`.
        let mut request = CheckRequest::new("", query.endpoint.unwrap_or(""));
        request.ip = Some(query.ip.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
        request.tier = query.tier;
        let endpoint = match query.endpoint {
            Some(_) => EndpointChoice::Matching,
            None => EndpointChoice::Default,
        };
        let plan = self.plan_as(query.subject, &request, stored.as_deref(), endpoint)?;
        let applied = self.dry_run(&plan).await?;
        // Usage against the base capacities too, when scaling changed any of them: see `used`.
        let scaled = (0..applied.checks.len()).any(|i| plan.scales(i).enforced != 1.0);
        let at_base = if scaled {
            let mut unscaled = plan.clone();
            unscaled.load_factor = 1.0;
            unscaled.rule_load_factor = unscaled.rule_load_factor.map(|_| 1.0);
            unscaled.anomaly_factor = 1.0;
            Some(self.dry_run(&unscaled).await?)
        } else {
            None
        };
        let limits = usage(&plan, &applied, at_base.as_ref(), query.ip.is_some());
        let resolved = &plan.resolved;
        let tier = resolved.tier();
        let tier_source = match stored.as_deref() {
            _ if query.tier.is_some() => TierSource::Query,
            Some(name) if name == tier.name => TierSource::Stored,
            _ => TierSource::Default,
        };
        Ok(SubjectInspection {
            subject: plan.user,
            tier: tier.name.clone(),
            tier_source,
            stored_tier: stored.map(|tier| tier.to_string()),
            endpoint_rule: resolved.rule().pattern.display(),
            abuse_score: plan.abuse_score,
            flagged: plan.flagged,
            load_factor: plan.load_factor,
            rule_load_factor: plan.rule_load_factor,
            scale: plan.reported_scale(),
            observed: self.scale.observed(plan.user),
            threshold: self.scale.thresholds().anomaly_threshold,
            min_requests: resolved.policy.adaptive.anomaly.min_requests.get(),
            flag_start: plan
                .flagged
                .then(|| self.scale.exemptions().flag_start(plan.user))
                .flatten(),
            held_until: plan
                .flagged
                .then(|| self.scale.standing(plan.user).map(|s| s.held_until))
                .flatten(),
            allowlisted_until: self.allowlisted_until(plan.user),
            limits,
        })
    }

    /// The plan a check of `request` would be decided under, with `stored_tier` as the tier
    /// store's answer. For tests and tools that compare the store's view of a plan; the APIs
    /// use the use cases, which plan for themselves.
    pub fn plan_check(
        &self,
        request: &CheckRequest<'_>,
        stored_tier: Option<&str>,
    ) -> Result<Plan, CheckError> {
        self.plan(request, stored_tier, EndpointChoice::Matching)
    }

    /// Evaluates a plan in the store without consuming anything: each limit's outcome for one
    /// more request of the plan's cost.
    pub async fn dry_run(&self, plan: &Plan) -> Result<Applied, StoreError> {
        self.store.apply(&plan.store_request(true)).await
    }
}

fn usage(
    plan: &Plan,
    applied: &Applied,
    at_base: Option<&Applied>,
    ip_usage_known: bool,
) -> Vec<LimitUsage> {
    let resolved = &plan.resolved;
    let rule = resolved.rule();
    let tier_count = resolved.tier_limit_count();
    resolved
        .limits()
        .enumerate()
        .zip(&applied.checks)
        .map(|((i, limit), result)| {
            let in_tier = i < tier_count;
            let by_ip = !in_tier && rule.key == KeyScope::Ip;
            let base = limit.base_rate().capacity();
            let effective = result.outcome.limit;
            let (used, remaining) = if by_ip && !ip_usage_known {
                (None, None)
            } else {
                let remaining = remaining_now(plan, applied, i);
                let mut used = effective.saturating_sub(remaining);
                if let Some(at_base) = at_base {
                    used = used.max(base.saturating_sub(remaining_now(plan, at_base, i)));
                }
                (Some(used), Some(remaining))
            };
            LimitUsage {
                in_tier,
                name: limit.name.clone(),
                algorithm: limit.algorithm,
                base,
                effective,
                used,
                remaining,
                window: limit.window,
                key: if by_ip { KeyScope::Ip } else { KeyScope::User },
                shadow: limit.shadow,
                load_factor: if resolved.is_adaptive(i) {
                    plan.load_factor_of(i)
                } else {
                    1.0
                },
            }
        })
        .collect()
}

/// What is left of the `i`-th limit now. The dry run evaluates one more request of the plan's
/// cost, and an allowed outcome's `remaining` is what would be left after it: add the cost
/// back. A denied outcome's `remaining` is unchanged (a denial consumes nothing).
fn remaining_now(plan: &Plan, applied: &Applied, i: usize) -> u64 {
    let outcome = applied.checks[i].outcome;
    if outcome.allowed {
        outcome.remaining.saturating_add(plan.cost)
    } else {
        outcome.remaining
    }
}
