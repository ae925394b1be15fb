//! Planning: a request resolved against the policy in force (tier, endpoint rule, keys) and
//! scaled by the load factor and its subject's anomaly standing.

use super::{CheckError, CheckRequest, Cost, Engine, FeatureTrace, Plan, Resolved, Thresholds};
use crate::limit::KeyHash;
use crate::policy::KeyScope;
use crate::store::Store;

/// Which endpoint rule a plan uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EndpointChoice {
    /// The rule `request.endpoint` matches.
    Matching,
    /// `default_endpoint`, whatever the request's endpoint would match (a native descriptor
    /// or an admin view that names no endpoint).
    Default,
}

impl<S: Store> Engine<S> {
    /// Resolves tier, rule, keys and scales for a request. A tier named by the request must
    /// exist; a stored tier the policy no longer has falls back to the default tier.
    pub(super) fn plan(
        &self,
        request: &CheckRequest<'_>,
        stored_tier: Option<&str>,
        endpoint: EndpointChoice,
    ) -> Result<Plan, CheckError> {
        let plan = self.plan_uncounted(request, stored_tier, endpoint)?;
        self.note_unknown_stored_tier(request, stored_tier);
        Ok(plan)
    }

    /// As [`Engine::plan`], without counting a stored tier the policy lost: for a batch, which
    /// counts once every item is planned (a batch refused at an item decides none).
    pub(super) fn plan_uncounted(
        &self,
        request: &CheckRequest<'_>,
        stored_tier: Option<&str>,
        endpoint: EndpointChoice,
    ) -> Result<Plan, CheckError> {
        let user = self.hasher.user(request.user);
        self.plan_as(user, request, stored_tier, endpoint)
    }

    /// Counts a request decided under the default tier because its stored tier is one the
    /// policy no longer has (a reload removed or renamed it), and says so once per name: its
    /// subjects quietly getting the default tier is what an operator who renamed a paid tier
    /// needs to hear about. The name is the store's: one no policy could have (empty, or with
    /// a character a tier name may not hold) is counted as `invalid`, so the label holds only
    /// tier names, as the policy's own labels do.
    pub(super) fn note_unknown_stored_tier(
        &self,
        request: &CheckRequest<'_>,
        stored_tier: Option<&str>,
    ) {
        let (None, Some(stored)) = (request.tier, stored_tier) else {
            return;
        };
        let policy = self.policy();
        if policy.tier_index(stored).is_some() {
            return;
        }
        let plain = !stored.is_empty()
            && stored
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        let label = if plain { stored } else { "invalid" };
        let counter = self
            .metrics
            .unknown_stored_tiers
            .with_label_values(&[label]);
        if counter.get() == 0 {
            let default = &policy.tiers[policy.default_tier].name;
            tracing::warn!(
                tier = label,
                "a subject's stored tier {label:?} is not in the policy: its requests get \
                 default_tier {default:?} (counted by ratewarden_unknown_stored_tier_total)"
            );
        }
        counter.inc();
    }

    /// As [`Engine::plan`], for the subject `user` (already hashed) instead of the request's.
    pub(super) fn plan_as(
        &self,
        user: KeyHash,
        request: &CheckRequest<'_>,
        stored_tier: Option<&str>,
        endpoint: EndpointChoice,
    ) -> Result<Plan, CheckError> {
        let policy = self.policy();
        let tier = match request.tier {
            Some(name) => policy
                .tier_index(name)
                .ok_or_else(|| CheckError::UnknownTier(name.to_owned()))?,
            None => stored_tier
                .and_then(|name| policy.tier_index(name))
                .unwrap_or(policy.default_tier),
        };
        let resolved = match endpoint {
            EndpointChoice::Matching => Resolved::new(policy, tier, &request.endpoint),
            EndpointChoice::Default => Resolved::default_endpoint(policy, tier),
        };
        let rule = resolved.rule();
        let ip = match (rule.key, request.ip) {
            (KeyScope::Ip, Some(ip)) => Some(self.hasher.ip(ip)),
            (KeyScope::Ip, None) if !rule.limits.is_empty() => {
                return Err(CheckError::MissingIp {
                    rule: rule.path_in_file.clone(),
                    path: rule.pattern.display(),
                });
            }
            _ => None,
        };
        let trace = FeatureTrace {
            endpoint: self.hasher.feature_endpoint(&request.endpoint),
            ip: request.ip.map(|ip| self.hasher.feature_ip(ip)),
        };
        Ok(self.scaled_plan(resolved, user, ip, Some(user), request.cost, Some(trace)))
    }

    /// A plan counting under `key`, scaled by the load factor and by the anomaly standing of
    /// `subject` (none for a request without one).
    pub(super) fn scaled_plan(
        &self,
        resolved: Resolved,
        key: KeyHash,
        ip: Option<KeyHash>,
        subject: Option<KeyHash>,
        cost: Cost,
        trace: Option<FeatureTrace>,
    ) -> Plan {
        let standing = subject.and_then(|s| self.scale.standing(s));
        let thresholds = self.scale.thresholds();
        // The file's values too: an admin change undone by a reload must not shorten a TTL.
        let file = Thresholds::from_policy(&resolved.policy);
        let now = self.clock.now();
        let flagged = standing.is_some_and(|s| s.flagged(thresholds.anomaly_threshold, now))
            && !subject.is_some_and(|s| self.scale.exemptions().is_exempt(s, now));
        let rule_load_factor = self.rule_load_factor(&resolved, thresholds.load_factor_override);
        Plan {
            rule_load_factor,
            resolved,
            user: key,
            ip,
            cost: cost.get(),
            load_factor: thresholds
                .load_factor_override
                .unwrap_or_else(|| self.scale.measured_load_factor()),
            anomaly_factor: if flagged {
                thresholds.anomaly_factor
            } else {
                1.0
            },
            anomaly_enforced: !thresholds.anomaly_shadow,
            abuse_score: standing.map(|s| s.abuse_score),
            slowest_load: thresholds
                .slowest_load_factor()
                .min(file.slowest_load_factor()),
            slowest_anomaly: match subject {
                Some(_) => thresholds
                    .slowest_anomaly_factor()
                    .min(file.slowest_anomaly_factor()),
                None => 1.0,
            },
            flagged,
            trace,
        }
    }

    /// The factor of the request's endpoint rule when it has its own load source (1.0 until
    /// a cycle measured it); the override wins over it as over the policy-wide factor.
    fn rule_load_factor(&self, resolved: &Resolved, override_factor: Option<f64>) -> Option<f64> {
        if resolved.descriptor.is_some() {
            return None;
        }
        let index = resolved.rule?;
        let rule = resolved.policy.endpoints.get(index)?;
        rule.load_source.as_ref()?;
        Some(override_factor.unwrap_or_else(|| {
            self.scale
                .measured_rule_load_factor(index, &rule.pattern)
                .unwrap_or(1.0)
        }))
    }
}
