//! Descriptors of an envoyproxy/ratelimit domain turned into plans: which configured limit
//! each falls under, `replaces` between them, request overrides, and the counter key.
//!
//! The counter is per descriptor value: a keyed hash of the domain and every entry's key and
//! value, so neither values nor addresses reach the store.

use super::{Cost, Engine, Plan, Resolved};
use crate::envoy_config::{Domain, Rule, Unit};
use crate::limit::Algorithm;
use crate::limit::KeyHash;
use crate::limit::Limit;
use crate::policy::Policy;
use crate::store::Store;
use std::collections::HashSet;
use std::num::NonZeroU64;
use std::sync::Arc;

/// Entry keys that name the subject, in order of preference (anomaly scaling follows it).
const SUBJECT_KEYS: [&str; 3] = ["user", "api_key", "remote_address"];

/// One descriptor of a request, in domain terms.
#[derive(Debug, Clone)]
pub struct DescriptorRequest<'a> {
    /// (key, value) pairs, in order.
    pub entries: Vec<(&'a str, &'a str)>,
    pub cost: Cost,
    /// A limit the caller sets for this descriptor (`limit` in `rls.proto`).
    pub limit: Option<LimitOverride>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitOverride {
    /// `None` for 0: nothing passes.
    pub requests_per_unit: Option<NonZeroU64>,
    pub unit: Unit,
}

/// What a descriptor comes to once planned.
#[derive(Debug)]
pub(super) enum DescriptorPlan {
    Limited(Box<Plan>),
    /// `unlimited: true`.
    Unlimited,
    /// A limit of 0 requests: it never passes (and nothing of the request is consumed).
    Blocked {
        name: String,
        unit: Unit,
    },
    /// A native descriptor whose values the policy cannot decide on (an unknown tier, an
    /// ambiguous path): it never passes, and nothing of the request is consumed. Failing the
    /// call instead would let Envoy, which by default lets a request through when the service
    /// errs, pass a client who sends such values.
    Refused(String),
    /// A limit of 0 requests in `shadow_mode`: it would deny, and passes.
    ShadowBlocked {
        name: String,
    },
    /// No configured descriptor matches.
    Unmatched,
    /// Its limit is replaced by another limit of the same request (`replaces`).
    Replaced,
}

impl<S: Store> Engine<S> {
    /// Plans every descriptor of one request to `domain`, under `policy` (the snapshot the
    /// domain was found in).
    pub(super) fn plan_envoy_descriptors(
        &self,
        policy: &Arc<Policy>,
        domain: &Domain,
        descriptors: &[DescriptorRequest<'_>],
    ) -> Vec<DescriptorPlan> {
        let found: Vec<Option<Found>> = descriptors.iter().map(|d| find(domain, d)).collect();
        let replaced: HashSet<&str> = found
            .iter()
            .flatten()
            .flat_map(|f| f.replaces.iter().map(String::as_str))
            .collect();
        found
            .iter()
            .zip(descriptors)
            .map(|(found, descriptor)| {
                let Some(f) = found else {
                    return DescriptorPlan::Unmatched;
                };
                if f.name.is_some_and(|n| replaced.contains(n)) {
                    return DescriptorPlan::Replaced;
                }
                let limit = match &f.kind {
                    Kind::Unlimited => return DescriptorPlan::Unlimited,
                    Kind::Blocked {
                        name, shadow: true, ..
                    } => return DescriptorPlan::ShadowBlocked { name: name.clone() },
                    Kind::Blocked { name, unit, .. } => {
                        return DescriptorPlan::Blocked {
                            name: name.clone(),
                            unit: *unit,
                        };
                    }
                    Kind::Limited(limit) => limit.clone(),
                };
                let key = self.counter_key(&domain.name, descriptor, &f.shared);
                let subject = SUBJECT_KEYS.iter().find_map(|wanted| {
                    descriptor
                        .entries
                        .iter()
                        .find(|(k, _)| k == wanted)
                        .map(|(_, v)| self.hasher.user(v))
                });
                let resolved = Resolved::descriptor(policy.clone(), domain.name.clone(), limit);
                DescriptorPlan::Limited(Box::new(self.scaled_plan(
                    resolved,
                    key,
                    None,
                    subject,
                    descriptor.cost,
                    // Envoy-config counters are not a subject: not traced in features.
                    None,
                )))
            })
            .collect()
    }

    /// The keyed hash of the domain and the entries (a shared prefix in place of its values).
    fn counter_key(
        &self,
        domain: &str,
        descriptor: &DescriptorRequest<'_>,
        shared: &[Option<String>],
    ) -> KeyHash {
        let mut text = String::new();
        for (i, (key, value)) in descriptor.entries.iter().enumerate() {
            let value = match shared.get(i) {
                Some(Some(prefix)) => prefix.as_str(),
                _ => value,
            };
            text.push_str(key);
            text.push('\0');
            text.push_str(value);
            text.push('\0');
        }
        self.hasher.other(domain, &text)
    }
}

/// A descriptor's match, before `replaces` is settled.
struct Found<'a> {
    kind: Kind,
    /// The limit's `name` in the file (what `replaces` names).
    name: Option<&'a str>,
    replaces: &'a [String],
    shared: Vec<Option<String>>,
}

enum Kind {
    Unlimited,
    Blocked {
        name: String,
        unit: Unit,
        shadow: bool,
    },
    Limited(Arc<Limit>),
}

fn find<'a>(domain: &'a Domain, descriptor: &DescriptorRequest<'_>) -> Option<Found<'a>> {
    let matched = domain.lookup(&descriptor.entries);
    let shared = matched
        .as_ref()
        .map(|m| m.shared.iter().map(|s| s.map(str::to_owned)).collect())
        .unwrap_or_default();
    if let Some(o) = descriptor.limit {
        // As in envoyproxy/ratelimit, the caller's limit applies whether or not a configured
        // descriptor matches; it is never in shadow mode. It keeps a matched limit's
        // algorithm and name.
        let configured = matched.as_ref().and_then(|m| match m.rule {
            Rule::Limited(rule) => Some(&*rule.limit),
            _ => None,
        });
        let kind = match o.requests_per_unit {
            Some(requests) => Kind::Limited(Arc::new(override_limit(
                &domain.name,
                configured,
                requests,
                o.unit,
            ))),
            None => Kind::Blocked {
                name: configured.map_or_else(|| "override".to_owned(), |l| l.name.clone()),
                unit: o.unit,
                shadow: false,
            },
        };
        return Some(Found {
            kind,
            name: None,
            replaces: &[],
            shared,
        });
    }
    let matched = matched?;
    Some(match matched.rule {
        Rule::Unlimited => Found {
            kind: Kind::Unlimited,
            name: None,
            replaces: &[],
            shared,
        },
        Rule::Blocked(rule) => Found {
            kind: Kind::Blocked {
                name: rule.shown.clone(),
                unit: rule.unit,
                shadow: rule.shadow,
            },
            name: rule.name.as_deref(),
            replaces: &rule.replaces,
            shared,
        },
        Rule::Limited(rule) => Found {
            kind: Kind::Limited(rule.limit.clone()),
            name: rule.name.as_deref(),
            replaces: &rule.replaces,
            shared,
        },
    })
}

fn override_limit(
    domain: &str,
    configured: Option<&Limit>,
    requests: NonZeroU64,
    unit: Unit,
) -> Limit {
    let algorithm = configured.map_or(Algorithm::FixedWindow, |l| l.algorithm);
    let name = configured.map_or_else(|| "override".to_owned(), |l| l.name.clone());
    let id = format!(
        "o:{:016x}",
        crate::limit::hash_limit_id(&format!("{domain}\0{}\0{algorithm}", unit.name()))
    );
    Limit {
        id_hash: crate::limit::hash_limit_id(&id),
        id,
        label: format!("envoy:{domain}/{name}"),
        name,
        algorithm,
        requests,
        window: unit.window(),
        burst: requests,
        shadow: false,
        adaptive: configured.is_none_or(|l| l.adaptive),
    }
}
