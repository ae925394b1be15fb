//! A decision counted in the metrics: the labels it is counted under, chosen here so every API
//! counts alike.

use super::{Decision, Engine, Reason};
use crate::metrics::{DecisionLabels, Outcome};
use crate::store::Store;

impl<S: Store> Engine<S> {
    /// Counts one decision: outcome, reason, bursts, near-limit.
    pub(super) fn count(&self, decision: &Decision) {
        self.metrics.record_decision(&labels(decision));
    }

    /// Counts an Envoy call no limit was checked for: allowed (no descriptor had a limit),
    /// denied by a limit of 0 requests, which no request ever passes (`quota`, as a cost over
    /// the base limit), or shadow-denied by one in shadow mode. `scope` is the `tier` label:
    /// the domain, or `native`.
    pub(super) fn count_without_decision(&self, rule: &str, scope: &str, outcome: Outcome) {
        self.metrics.record_decision(&DecisionLabels {
            rule,
            tier: scope,
            outcome,
            reason: matches!(outcome, Outcome::Denied).then_some(Reason::Quota.label()),
            burst: false,
            near_limit: None,
        });
    }
}

fn labels(decision: &Decision) -> DecisionLabels<'_> {
    DecisionLabels {
        rule: decision
            .deciding_limit()
            .map_or("none", |l| l.name.as_str()),
        tier: decision.tier_name(),
        outcome: match (decision.allowed, decision.shadow) {
            (false, _) => Outcome::Denied,
            (true, true) => Outcome::ShadowDenied,
            (true, false) => Outcome::Allowed,
        },
        reason: decision.reason.map(Reason::label),
        burst: decision.reason == Some(Reason::Burst),
        near_limit: decision.near_limit.then(|| {
            decision
                .headline_limit()
                .map_or("none", |l| l.name.as_str())
        }),
    }
}
