//! Which tier and endpoint rule apply to a request, kept with the policy they came from.

use crate::policy::{EndpointRule, Limit, Policy, Tier};
use std::sync::Arc;

/// The tier and endpoint rule of one request, in the policy snapshot it was decided under.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub policy: Arc<Policy>,
    pub tier: usize,
    /// Index into `endpoints`, `None` for `default_endpoint`.
    pub rule: Option<usize>,
}

impl Resolved {
    pub fn new(policy: Arc<Policy>, tier: usize, endpoint: &str) -> Self {
        let rule = policy
            .endpoints
            .iter()
            .position(|r| r.pattern.matches(endpoint));
        Self { policy, tier, rule }
    }

    /// The tier with `default_endpoint`, whatever the endpoint rules would match (the admin
    /// view of a subject's default limits: no path is sure to match no rule, `/*` matches all).
    pub fn default_endpoint(policy: Arc<Policy>, tier: usize) -> Self {
        Self {
            policy,
            tier,
            rule: None,
        }
    }

    pub fn tier(&self) -> &Tier {
        &self.policy.tiers[self.tier]
    }

    pub fn rule(&self) -> &EndpointRule {
        self.rule
            .and_then(|i| self.policy.endpoints.get(i))
            .unwrap_or(&self.policy.default_endpoint)
    }

    /// The tier's limits, then the rule's: the order of a store request's checks.
    pub fn limits(&self) -> impl Iterator<Item = &Limit> {
        self.tier().limits.iter().chain(self.rule().limits.iter())
    }

    pub fn tier_limit_count(&self) -> usize {
        self.tier().limits.len()
    }

    /// The `i`-th limit in [`Resolved::limits`] order.
    pub fn limit(&self, i: usize) -> Option<&Limit> {
        let tier = self.tier_limit_count();
        if i < tier {
            self.tier().limits.get(i)
        } else {
            self.rule().limits.get(i - tier)
        }
    }

    /// Whether the `i`-th limit follows the load factor.
    pub fn is_adaptive(&self, i: usize) -> bool {
        let in_rule = i >= self.tier_limit_count();
        self.tier().adaptive
            && (!in_rule || self.rule().adaptive)
            && self.limit(i).is_some_and(|l| l.adaptive)
    }
}
