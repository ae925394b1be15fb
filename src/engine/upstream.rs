//! The protected service's outcomes since the last control cycle, as `/v1/report` carries
//! them: how many, how many were 5xx, and their latencies. The control loop drains them each
//! interval into the `upstream` load source; the request path never reads them.
//!
//! An endpoint rule with its own `upstream` source gets its reports to itself: a saturated
//! export backend must not shrink the limits of a search that is fine.

use crate::policy::{EndpointPath, PathPattern};
use hashbrown::HashMap;
use parking_lot::Mutex;

/// Latencies kept per interval: past it, a uniform sample of them (reservoir sampling), so a
/// spike late in a busy interval weighs as much as one early. Enough for a stable p99, and a
/// bound on memory whatever the report rate.
pub const MAX_LATENCIES_PER_INTERVAL: usize = 100_000;

/// One reported outcome of a request the service answered.
#[derive(Debug, Clone)]
pub struct Outcome<'a> {
    pub user: &'a str,
    /// Normalised as for a check, so a report counts where the check did.
    pub endpoint: EndpointPath<'a>,
    pub status: u16,
    /// The service's latency in milliseconds, when the caller measured it (finite, at least 0).
    pub latency_ms: Option<f64>,
}

impl<'a> Outcome<'a> {
    /// An outcome without a measured latency.
    pub fn new(user: &'a str, endpoint: &'a str, status: u16) -> Self {
        Self {
            user,
            endpoint: EndpointPath::new(endpoint),
            status,
            latency_ms: None,
        }
    }
}

/// The outcomes of one interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IntervalOutcomes {
    pub reports: u64,
    /// Reports with a 5xx status.
    pub errors: u64,
    /// Milliseconds: every latency reported, or a uniform sample of
    /// [`MAX_LATENCIES_PER_INTERVAL`] of them when more were.
    pub latencies_ms: Vec<f64>,
    /// How many latencies were offered, kept or not.
    pub latencies_seen: u64,
}

impl IntervalOutcomes {
    /// Adds `later`'s outcomes to these (its latencies offered to the sample one by one).
    pub fn merge(&mut self, later: IntervalOutcomes) {
        self.reports += later.reports;
        self.errors += later.errors;
        for ms in later.latencies_ms {
            self.offer(ms);
        }
    }

    /// Algorithm R: the `n`th latency replaces a random kept one with chance `MAX / n`. The
    /// "random" index is a hash of `n`: reports are trusted, so no caller aims at it.
    fn offer(&mut self, ms: f64) {
        self.latencies_seen += 1;
        if self.latencies_ms.len() < MAX_LATENCIES_PER_INTERVAL {
            self.latencies_ms.push(ms);
            return;
        }
        let slot = splitmix64(self.latencies_seen) % self.latencies_seen;
        if let Some(kept) = usize::try_from(slot)
            .ok()
            .and_then(|i| self.latencies_ms.get_mut(i))
        {
            *kept = ms;
        }
    }

    pub fn add(&mut self, status: u16, latency_ms: Option<f64>) {
        self.reports += 1;
        if (500..600).contains(&status) {
            self.errors += 1;
        }
        if let Some(ms) = latency_ms.filter(|ms| ms.is_finite() && *ms >= 0.0) {
            self.offer(ms);
        }
    }
}

/// A well-mixed 64-bit hash of `n` (SplitMix64's finaliser).
fn splitmix64(n: u64) -> u64 {
    let mut z = n.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One interval's outcomes: the policy-wide ones, and those of each rule with its own
/// `upstream` source, by the rule's index in `endpoints` (with its pattern, so that outcomes
/// recorded under a policy a reload replaced are not credited to another rule).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScopedOutcomes {
    pub global: IntervalOutcomes,
    pub rules: HashMap<usize, (PathPattern, IntervalOutcomes)>,
}

impl ScopedOutcomes {
    /// The outcomes of rule `index`, if they were recorded for `pattern`.
    pub fn take_rule(&mut self, index: usize, pattern: &PathPattern) -> IntervalOutcomes {
        match self.rules.remove(&index) {
            Some((recorded, outcomes)) if &recorded == pattern => outcomes,
            _ => IntervalOutcomes::default(),
        }
    }
}

#[derive(Debug, Default)]
pub struct UpstreamOutcomes {
    pending: Mutex<ScopedOutcomes>,
}

impl UpstreamOutcomes {
    /// Records an outcome for the policy (`rule` none) or for the rule at that index.
    pub fn record(
        &self,
        rule: Option<(usize, &PathPattern)>,
        status: u16,
        latency_ms: Option<f64>,
    ) {
        let mut pending = self.pending.lock();
        match rule {
            None => pending.global.add(status, latency_ms),
            Some((index, pattern)) => pending
                .rules
                .entry(index)
                .or_insert_with(|| (pattern.clone(), IntervalOutcomes::default()))
                .1
                .add(status, latency_ms),
        }
    }

    /// The outcomes since the last drain; the next interval starts empty.
    pub fn drain(&self) -> ScopedOutcomes {
        std::mem::take(&mut *self.pending.lock())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_spike_in_a_busy_interval_is_sampled_as_often_as_an_early_one() {
        let mut interval = IntervalOutcomes::default();
        let total = 3 * MAX_LATENCIES_PER_INTERVAL;
        for i in 0..total {
            let slow = i >= 2 * MAX_LATENCIES_PER_INTERVAL;
            interval.add(200, Some(if slow { 1000.0 } else { 1.0 }));
        }
        assert_eq!(interval.latencies_ms.len(), MAX_LATENCIES_PER_INTERVAL);
        assert_eq!(interval.latencies_seen, total as u64);
        let slow = interval.latencies_ms.iter().filter(|&&ms| ms > 1.0).count();
        let share = slow as f64 / MAX_LATENCIES_PER_INTERVAL as f64;
        assert!((0.31..0.36).contains(&share), "{share}");
    }
}
