//! The scale factors the request path reads: the load factor, per-subject abuse standing, and
//! the live thresholds. The control loop writes them; tests and the admin API set them here.
//!
//! Reads are lock-free (atomics and `ArcSwap`), since every decision makes them.

use super::Exemptions;
use super::live_load::LiveLoad;
use crate::clock::Micros;
use crate::features::{ObservedSubjects, SubjectFeatures};
use crate::limit::KeyHash;
use crate::policy::{PathPattern, Policy};
use arc_swap::ArcSwap;
use hashbrown::HashMap;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The live tuning values (the admin API's `/v1/admin/thresholds`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    pub anomaly_threshold: f64,
    pub anomaly_factor: f64,
    pub anomaly_shadow: bool,
    pub load_high: f64,
    pub load_low: f64,
    pub load_high_factor: f64,
    pub load_low_factor: f64,
    pub load_factor_override: Option<f64>,
}

/// The values a policy that sets none of them has.
impl Default for Thresholds {
    fn default() -> Self {
        Self {
            anomaly_threshold: 0.8,
            anomaly_factor: 0.1,
            anomaly_shadow: false,
            load_high: 0.8,
            load_low: 0.3,
            load_high_factor: 0.5,
            load_low_factor: 1.5,
            load_factor_override: None,
        }
    }
}

impl Thresholds {
    pub fn from_policy(policy: &Policy) -> Self {
        let a = &policy.adaptive;
        Self {
            anomaly_threshold: a.anomaly.threshold,
            anomaly_factor: a.anomaly.factor,
            anomaly_shadow: a.anomaly.shadow,
            load_high: a.load.high,
            load_low: a.load.low,
            load_high_factor: a.load.high_factor,
            load_low_factor: a.load.low_factor,
            load_factor_override: a.load.factor_override,
        }
    }
}

impl Thresholds {
    /// The smallest load factor above 0 these values can put in force: 1, either factor, or
    /// the override (a factor of 0 denies everything, and needs no usage remembered).
    pub fn slowest_load_factor(&self) -> f64 {
        let override_factor = self.load_factor_override.filter(|f| *f > 0.0);
        [self.load_high_factor, self.load_low_factor]
            .into_iter()
            .chain(override_factor)
            .fold(1.0, f64::min)
    }

    /// The smallest anomaly factor above 0 a subject can be scaled by (shadowed or not: the
    /// shadow can be lifted).
    pub fn slowest_anomaly_factor(&self) -> f64 {
        if self.anomaly_factor > 0.0 {
            self.anomaly_factor.min(1.0)
        } else {
            1.0
        }
    }
}

/// The load factor of an endpoint rule with its own source.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleLoadFactor {
    pub pattern: PathPattern,
    pub load: LiveLoad,
}

/// What the last control cycle concluded about one subject.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SubjectStanding {
    pub abuse_score: f64,
    /// The end of the subject's flag's `hold` (0: no flag held).
    pub held_until: Micros,
    /// Outside the model's training range with no second signal agreeing: the score alone
    /// flags nothing.
    pub novel: bool,
}

impl SubjectStanding {
    /// Flagged at `now` under the live `threshold`: the score is at or over it (and not
    /// novel), or a flag is still held. The threshold is read per decision, so an admin
    /// change applies at once.
    pub fn flagged(&self, threshold: f64, now: Micros) -> bool {
        (self.abuse_score >= threshold && !self.novel) || now < self.held_until
    }
}

pub struct ScaleFactors {
    /// Serialises read-modify-write changes of the thresholds (admin `PUT`s, reloads that
    /// reset them), so no change is lost or undone by a concurrent one.
    writes: parking_lot::Mutex<()>,
    /// What the control loop measured, read against the live thresholds by each decision.
    measured_load: ArcSwap<LiveLoad>,
    /// The factors of the endpoint rules with their own load source, by index in `endpoints`.
    rule_load: ArcSwap<Vec<Option<RuleLoadFactor>>>,
    thresholds: ArcSwap<Thresholds>,
    standings: ArcSwap<HashMap<KeyHash, SubjectStanding>>,
    /// Features of the subjects active in the anomaly window (the admin view shows them),
    /// sorted by subject: as the cycle computes them, with no empty slots; read per admin call.
    observed: ArcSwap<ObservedSubjects>,
    /// Flags the admin API cleared and subjects it allowlisted; when flags began.
    exemptions: Exemptions,
}

impl ScaleFactors {
    pub fn new(thresholds: Thresholds) -> Self {
        Self {
            writes: parking_lot::Mutex::new(()),
            measured_load: ArcSwap::from_pointee(LiveLoad::Fixed(1.0)),
            rule_load: ArcSwap::default(),
            thresholds: ArcSwap::from_pointee(thresholds),
            standings: ArcSwap::default(),
            observed: ArcSwap::default(),
            exemptions: Exemptions::default(),
        }
    }

    /// The load factor in force: the override when an operator pinned one.
    pub fn load_factor(&self) -> f64 {
        let thresholds = self.thresholds.load();
        thresholds
            .load_factor_override
            .unwrap_or_else(|| self.measured_load.load().factor(&thresholds))
    }

    /// The factor computed from the system's load (what the control loop measured).
    /// (read against the live thresholds: a change of them applies from the next decision).
    pub fn measured_load_factor(&self) -> f64 {
        self.measured_load.load().factor(&self.thresholds.load())
    }

    /// Publishes what the control loop measured.
    pub fn set_load(&self, load: LiveLoad) {
        self.measured_load.store(Arc::new(load));
    }

    /// Sets the measured factor as it stands (a pinned factor; tests).
    pub fn set_load_factor(&self, factor: f64) {
        self.set_load(LiveLoad::Fixed(factor));
    }

    /// The measured factor of the rule at `index` in `endpoints`, when the last cycle measured
    /// one for a rule of that pattern: at that index, or elsewhere when a reload has moved the
    /// rule since (patterns are unique within a policy).
    pub fn measured_rule_load_factor(&self, index: usize, pattern: &PathPattern) -> Option<f64> {
        let rules = self.rule_load.load();
        let rule = match rules.get(index) {
            Some(Some(rule)) if &rule.pattern == pattern => Some(rule),
            _ => rules.iter().flatten().find(|rule| &rule.pattern == pattern),
        }?;
        Some(rule.load.factor(&self.thresholds.load()))
    }

    /// Replaces the rules' factors at once (one control cycle's result).
    pub fn publish_rule_load_factors(&self, factors: Vec<Option<RuleLoadFactor>>) {
        self.rule_load.store(Arc::new(factors));
    }

    /// Held while reading, changing and storing the thresholds.
    pub fn lock_writes(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.writes.lock()
    }

    pub fn thresholds(&self) -> Thresholds {
        **self.thresholds.load()
    }

    pub fn set_thresholds(&self, thresholds: Thresholds) {
        self.thresholds.store(Arc::new(thresholds));
    }

    pub fn exemptions(&self) -> &Exemptions {
        &self.exemptions
    }

    pub fn standing(&self, subject: KeyHash) -> Option<SubjectStanding> {
        let standings = self.standings.load();
        if standings.is_empty() {
            return None;
        }
        standings.get(&subject).copied()
    }

    /// Replaces every subject's standing at once (one control cycle's result).
    pub fn publish_standings(&self, standings: HashMap<KeyHash, SubjectStanding>) {
        self.standings.store(Arc::new(standings));
    }

    /// Sets one subject's standing, keeping the others.
    pub fn set_standing(&self, subject: KeyHash, standing: SubjectStanding) {
        self.standings.rcu(|old| {
            let mut next = HashMap::clone(old);
            next.insert(subject, standing);
            next
        });
    }

    /// Every subject's standing from the last cycle (`replay` notes when subjects are flagged).
    pub fn standings(&self) -> Arc<HashMap<KeyHash, SubjectStanding>> {
        self.standings.load_full()
    }

    pub fn observed(&self, subject: KeyHash) -> Option<SubjectFeatures> {
        self.observed.load().get(&subject).copied()
    }

    pub fn publish_observed(&self, observed: ObservedSubjects) {
        self.observed.store(Arc::new(observed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_thresholds_are_those_of_a_policy_that_sets_none() {
        let yaml = "default_tier: free\ntiers:\n  free:\n    limits: []\n";
        let policy = Policy::from_yaml(yaml, std::path::Path::new(".")).expect("a policy");
        assert_eq!(Thresholds::from_policy(&policy), Thresholds::default());
    }

    #[test]
    fn a_rule_moved_by_a_reload_keeps_its_measured_factor() {
        let scale = ScaleFactors::new(Thresholds::default());
        let export = PathPattern::Prefix("/api/export".to_owned());
        scale.publish_rule_load_factors(vec![Some(RuleLoadFactor {
            pattern: export.clone(),
            load: LiveLoad::Bounded(0.6),
        })]);
        assert_eq!(scale.measured_rule_load_factor(0, &export), Some(0.6));
        // A rule inserted before it: the cycle's list still has it at 0 until the next cycle.
        assert_eq!(scale.measured_rule_load_factor(1, &export), Some(0.6));
        let other = PathPattern::Exact("/login".to_owned());
        assert_eq!(scale.measured_rule_load_factor(0, &other), None);
    }
}
