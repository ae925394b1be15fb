//! Which tier and endpoint rule apply to a request (or which envoyproxy/ratelimit limit applies
//! to a descriptor), kept with the policy they came from.

use crate::limit::Limit;
use crate::policy::{EndpointPath, EndpointRule, Policy, Tier};
use std::sync::Arc;

/// The tier and endpoint rule of one request, in the policy snapshot it was decided under.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub policy: Arc<Policy>,
    pub tier: usize,
    /// Index into `endpoints`, `None` for `default_endpoint`.
    pub rule: Option<usize>,
    /// Set for a descriptor of an envoyproxy/ratelimit domain: its one limit is checked instead
    /// of the tier's and the rule's.
    pub descriptor: Option<DescriptorLimit>,
}

/// The limit of a descriptor in an envoyproxy/ratelimit domain.
#[derive(Debug, Clone)]
pub struct DescriptorLimit {
    pub domain: Arc<str>,
    pub limit: Arc<Limit>,
}

impl Resolved {
    pub fn new(policy: Arc<Policy>, tier: usize, endpoint: &EndpointPath<'_>) -> Self {
        let rule = policy
            .endpoints
            .iter()
            .position(|r| r.pattern.matches(endpoint));
        Self {
            policy,
            tier,
            rule,
            descriptor: None,
        }
    }

    /// An envoyproxy/ratelimit descriptor's limit (`tier` is the default tier, unused).
    pub fn descriptor(policy: Arc<Policy>, domain: Arc<str>, limit: Arc<Limit>) -> Self {
        Self {
            tier: policy.default_tier,
            policy,
            rule: None,
            descriptor: Some(DescriptorLimit { domain, limit }),
        }
    }

    /// The tier with `default_endpoint`, whatever the endpoint rules would match (the admin
    /// view of a subject's default limits: no path is sure to match no rule, `/*` matches all).
    pub fn default_endpoint(policy: Arc<Policy>, tier: usize) -> Self {
        Self {
            policy,
            tier,
            rule: None,
            descriptor: None,
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

    /// What metrics call the scope of the limits: the tier, or the descriptor's domain.
    pub fn scope_name(&self) -> &str {
        match &self.descriptor {
            Some(d) => &d.domain,
            None => &self.tier().name,
        }
    }

    /// The tier's limits, then the rule's: the order of a store request's checks. A
    /// descriptor's one limit alone.
    pub fn limits(&self) -> impl Iterator<Item = &Limit> {
        let (tier, rule): (&[Limit], &[Limit]) = match self.descriptor {
            Some(_) => (&[], &[]),
            None => (&self.tier().limits, &self.rule().limits),
        };
        self.descriptor
            .iter()
            .map(|d| d.limit.as_ref())
            .chain(tier)
            .chain(rule)
    }

    pub fn tier_limit_count(&self) -> usize {
        match self.descriptor {
            Some(_) => 0,
            None => self.tier().limits.len(),
        }
    }

    /// The `i`-th limit in [`Resolved::limits`] order.
    pub fn limit(&self, i: usize) -> Option<&Limit> {
        if let Some(d) = &self.descriptor {
            return (i == 0).then_some(d.limit.as_ref());
        }
        let tier = self.tier_limit_count();
        if i < tier {
            self.tier().limits.get(i)
        } else {
            self.rule().limits.get(i - tier)
        }
    }

    /// Whether the `i`-th limit follows the load factor.
    pub fn is_adaptive(&self, i: usize) -> bool {
        if let Some(d) = &self.descriptor {
            return i == 0 && d.limit.adaptive;
        }
        let in_rule = i >= self.tier_limit_count();
        self.tier().adaptive
            && (!in_rule || self.rule().adaptive)
            && self.limit(i).is_some_and(|l| l.adaptive)
    }
}
