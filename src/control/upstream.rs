//! The `upstream` load source: each interval, the reported latency percentile and 5xx share
//! against their targets give a pressure (1.0: at target), and the factor moves towards
//! `factor / pressure`, smoothed, between `high_factor` and `low_factor`.
//!
//! Hysteresis, as for the CPU: the factor falls as soon as the pressure is above 1, but rises
//! again only once the pressure is at `1 - MARGIN` or below, so a service hovering at its
//! target does not see its limits flap. An interval with fewer than `min_reports` reports leaves
//! the factor as it was and carries its reports over to the next: limits that shrank the
//! traffic (and with it the reports) must still hear when the service recovers.

use crate::engine::{IntervalOutcomes, Thresholds};
use crate::policy::UpstreamTargets;

/// How far below target the pressure must fall before the factor rises again.
pub const MARGIN: f64 = 0.05;

/// What one interval's outcomes measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UpstreamSignal {
    /// The latency at the target percentile, in milliseconds (none without latencies).
    pub latency_ms: Option<f64>,
    /// The share of 5xx statuses.
    pub error_share: f64,
    /// The larger of latency / target and error share / target.
    pub pressure: f64,
}

impl UpstreamSignal {
    /// `None` when the interval had too few reports to say anything.
    pub fn measure(outcomes: &mut IntervalOutcomes, targets: &UpstreamTargets) -> Option<Self> {
        if outcomes.reports < targets.min_reports {
            return None;
        }
        let latency_ms = percentile(&mut outcomes.latencies_ms, targets.percentile);
        // Counts far below 2^53: exact as floats.
        let error_share = outcomes.errors as f64 / outcomes.reports as f64;
        // Whole microseconds: exact as floats, so a target of 100ms is exactly 100.0.
        let target_ms = targets.latency_target.as_micros() as f64 / 1000.0;
        let latency_pressure = latency_ms.map_or(0.0, |ms| ms / target_ms);
        Some(Self {
            latency_ms,
            error_share,
            pressure: latency_pressure.max(error_share / targets.error_target),
        })
    }
}

/// The nearest-rank percentile (`p` in (0, 1]) of `values`, sorted in place.
pub fn percentile(values: &mut [f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable_by(f64::total_cmp);
    // The rank rounds up; the small slack keeps 0.9 × 10 at rank 9 despite binary fractions.
    let rank = (p * values.len() as f64 - 1e-9).ceil().max(1.0);
    let index = (rank as usize).min(values.len()) - 1;
    values.get(index).copied()
}

/// The factor the `upstream` source has reached.
#[derive(Debug, Clone)]
pub struct UpstreamGradient {
    factor: f64,
    /// Reports of the intervals since the last signal, too few to say anything yet.
    carried: IntervalOutcomes,
}

impl Default for UpstreamGradient {
    fn default() -> Self {
        Self {
            factor: 1.0,
            carried: IntervalOutcomes::default(),
        }
    }
}

impl UpstreamGradient {
    pub fn factor(&self) -> f64 {
        self.factor
    }

    /// This interval's signal from its reports and those carried over: `None`, and the
    /// reports kept for the next interval, while there are fewer than `min_reports`.
    pub fn measure(
        &mut self,
        outcomes: IntervalOutcomes,
        targets: &UpstreamTargets,
    ) -> Option<UpstreamSignal> {
        self.carried.merge(outcomes);
        let signal = UpstreamSignal::measure(&mut self.carried, targets);
        if signal.is_some() {
            self.carried = IntervalOutcomes::default();
        }
        signal
    }

    /// One interval: moves the factor by `smoothing` of the way to where the pressure says.
    pub fn update(
        &mut self,
        signal: Option<UpstreamSignal>,
        smoothing: f64,
        t: &Thresholds,
    ) -> f64 {
        let Some(signal) = signal else {
            return self.factor;
        };
        let lowest = t.load_high_factor.min(1.0);
        let highest = t.load_low_factor.max(1.0);
        if signal.pressure > 1.0 || signal.pressure <= 1.0 - MARGIN {
            let aim = if signal.pressure > 0.0 {
                (self.factor / signal.pressure).clamp(lowest, highest)
            } else {
                highest
            };
            self.factor += smoothing * (aim - self.factor);
        }
        // A reload or admin change may have moved the bounds.
        self.factor = self.factor.clamp(lowest, highest);
        self.factor
    }
}
