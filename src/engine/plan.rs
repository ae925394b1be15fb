//! A request turned into store checks: which key each limit counts under and at what scale.

use super::resolve::Resolved;
use crate::limit::{KeyHash, Limit, LimitId, Rate};
use crate::policy::KeyScope;
use crate::store::{Check, Request};

/// Everything the engine settled before asking the store.
#[derive(Debug, Clone)]
pub struct Plan {
    pub resolved: Resolved,
    pub user: KeyHash,
    /// The key of `key: ip` endpoint limits.
    pub ip: Option<KeyHash>,
    pub cost: u64,
    pub load_factor: f64,
    /// The factor of the endpoint rule's own load source, which its limits scale by instead
    /// of `load_factor`; `None` when the rule has no source of its own.
    pub rule_load_factor: Option<f64>,
    /// The anomaly factor of this subject (1.0 when not flagged).
    pub anomaly_factor: f64,
    /// `false` under `anomaly.shadow`: the factor is only evaluated, never applied.
    pub anomaly_enforced: bool,
    pub abuse_score: Option<f64>,
    /// The smallest load factor and anomaly factor above 0 that the live thresholds and the
    /// policy file allow: the slowest rate a limit can be refilled at later.
    pub slowest_load: f64,
    pub slowest_anomaly: f64,
    /// Flagged by the last control cycle's score under the live threshold, or held.
    pub flagged: bool,
    /// What the decision records in the subject's features (`user`'s activity: keyed hashes
    /// of the endpoint and address); `None` for counters that are not a subject (envoy config).
    pub trace: Option<FeatureTrace>,
}

/// A decision's trace in its subject's features.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureTrace {
    pub endpoint: u64,
    pub ip: Option<u64>,
}

/// The scales of one limit: the one enforced, and the two counterfactuals.
#[derive(Debug, Clone, Copy)]
pub struct Scales {
    pub enforced: f64,
    /// As if the load factor were 1.0.
    pub without_load: f64,
    /// Without the anomaly factor when it is enforced; with it when it is shadowed.
    pub anomaly_counterfactual: f64,
}

impl Plan {
    /// The load factor limit `i` scales by, adaptive or not: the rule's own for the endpoint
    /// rule's limits when it has a source, else the policy-wide one.
    pub fn load_factor_of(&self, i: usize) -> f64 {
        match self.rule_load_factor {
            Some(factor) if i >= self.resolved.tier_limit_count() => factor,
            _ => self.load_factor,
        }
    }

    /// Whether any limit is scaled by a load factor other than 1.
    pub fn load_scaled(&self) -> bool {
        self.load_factor != 1.0 || self.rule_load_factor.is_some_and(|f| f != 1.0)
    }

    pub fn scales(&self, i: usize) -> Scales {
        let load = if self.resolved.is_adaptive(i) {
            self.load_factor_of(i)
        } else {
            1.0
        };
        let anomaly = self.anomaly_factor;
        if self.anomaly_enforced {
            Scales {
                enforced: load * anomaly,
                without_load: anomaly,
                anomaly_counterfactual: load,
            }
        } else {
            Scales {
                enforced: load,
                without_load: 1.0,
                anomaly_counterfactual: load * anomaly,
            }
        }
    }

    /// The smallest scale above 0 limit `i` can be checked at.
    pub fn slowest_scale(&self, i: usize) -> f64 {
        let load = if self.resolved.is_adaptive(i) {
            self.slowest_load
        } else {
            1.0
        };
        load * self.slowest_anomaly
    }

    /// The scale reported to clients: the tier's load factor times the applied anomaly factor.
    pub fn reported_scale(&self) -> f64 {
        let adaptive = match &self.resolved.descriptor {
            Some(d) => d.limit.adaptive,
            None => self.resolved.tier().adaptive,
        };
        let load = if adaptive { self.load_factor } else { 1.0 };
        if self.anomaly_enforced {
            load * self.anomaly_factor
        } else {
            load
        }
    }

    /// The rate limit `i` is checked at, if it is one of the request's.
    pub fn rate_of(&self, i: usize) -> Option<Rate> {
        let limit = self.resolved.limit(i)?;
        Some(self.enforced_rate(limit, self.scales(i).enforced))
    }

    fn enforced_rate(&self, limit: &Limit, scale: f64) -> Rate {
        let mut rate = limit.rate(scale);
        let base = limit.base_rate();
        if self.cost > base.capacity() {
            // A cost above the base limit never passes, even while a load factor above 1
            // lifts the effective limit over it.
            rate.requests = rate.requests.min(base.requests);
            rate.burst = rate.burst.min(base.burst);
        }
        rate
    }

    pub fn store_request(&self, dry_run: bool) -> Request<'_> {
        let tier_count = self.resolved.tier_limit_count();
        let by_ip = self.resolved.descriptor.is_none() && self.resolved.rule().key == KeyScope::Ip;
        let checks = self
            .resolved
            .limits()
            .enumerate()
            .map(|(i, limit)| {
                let scales = self.scales(i);
                let rate = self.enforced_rate(limit, scales.enforced);
                let base = limit.base_rate();
                let probe =
                    |scale: f64| -> Option<Rate> { Some(limit.rate(scale)).filter(|r| *r != rate) };
                let subject = match self.ip {
                    Some(ip) if by_ip && i >= tier_count => ip,
                    _ => self.user,
                };
                Check {
                    subject,
                    limit: LimitId {
                        name: &limit.id,
                        hash: limit.id_hash,
                    },
                    rate,
                    cost: self.cost,
                    enforce: !limit.shadow,
                    probes: [
                        probe(scales.without_load),
                        probe(scales.anomaly_counterfactual),
                    ],
                    // Nothing reads a shadow limit as written: its usage is no feature.
                    written: Some(base).filter(|b| *b != rate && !limit.shadow),
                    slowest: limit.rate(self.slowest_scale(i)).requests.max(1),
                }
            })
            .collect();
        Request { checks, dry_run }
    }
}
