//! The shipped policy's tiers (ratewarden.yaml) as simulated subjects see them: what each
//! allows, so an archetype can run at a chosen share of its own binding limit.
//!
//! A path under no endpoint rule falls under the default endpoint rule (50 a minute per
//! subject), so the limit that binds is the lower of that and the tier's hourly limit: free
//! 100 an hour, pro 1,000 an hour, enterprise 50 a minute (3,000 an hour of its 10,000).

use super::script::Script;

/// The default endpoint rule of the shipped policy, per subject.
pub const DEFAULT_ENDPOINT_PER_MINUTE: f64 = 50.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tier {
    Free,
    Pro,
    Enterprise,
}

impl Tier {
    pub const ALL: [Tier; 3] = [Tier::Free, Tier::Pro, Tier::Enterprise];

    pub fn name(self) -> &'static str {
        match self {
            Tier::Free => "free",
            Tier::Pro => "pro",
            Tier::Enterprise => "enterprise",
        }
    }

    /// Requests an hour the tier's hourly limit allows.
    pub fn hourly(self) -> f64 {
        match self {
            Tier::Free => 100.0,
            Tier::Pro => 1000.0,
            Tier::Enterprise => 10_000.0,
        }
    }

    /// The steady rate (requests a second) that just meets the binding limit on paths under
    /// the default endpoint rule.
    pub fn ceiling(self) -> f64 {
        (self.hourly() / 3600.0).min(DEFAULT_ENDPOINT_PER_MINUTE / 60.0)
    }
}

/// A tier drawn with weights for free, pro and enterprise.
pub fn draw(s: &mut Script, weights: [f64; 3]) -> Tier {
    let total: f64 = weights.iter().sum();
    let mut roll = s.uniform(0.0, total);
    for (tier, weight) in Tier::ALL.into_iter().zip(weights) {
        if roll < weight {
            return tier;
        }
        roll -= weight;
    }
    Tier::Enterprise
}

/// A steady machine's share of its binding limit: log-uniform over `low..high`, so idle and
/// heavy clients are as common; one in ten brushes against the limit (95-115 %) and gets
/// some denials, as real clients do.
pub fn utilisation(s: &mut Script, low: f64, high: f64) -> f64 {
    if s.chance(0.1) {
        s.uniform(0.95, 1.15)
    } else {
        s.log_uniform(low, high)
    }
}
