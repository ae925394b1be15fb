//! The `upstream` load source: each interval, the reported latency percentile and 5xx share
//! against their targets give a pressure (1.0: at target), and the factor moves towards
//! `factor / pressure`, smoothed, between `high_factor` and `low_factor`.
//!
//! The factor moves only when the last `AGREEING` measured intervals agree: it falls when all
//! of them were above target, towards `factor / ` the smallest of their pressures, and rises
//! when all were at `1 - MARGIN` or below, towards `factor / ` the largest. Near saturation one
//! interval's percentile swings widely (a queue builds and drains within a second; raising the
//! limits lets every subject's burst through at once), and reacting to each swing makes the
//! factor oscillate: overshoots that miss the target, undershoots that waste capacity. Waiting
//! for agreement and moving by the mildest reading holds a steady factor; a real overload still
//! moves it after `AGREEING` intervals. The margin is the hysteresis the CPU has too: a service
//! hovering at its target does not see its limits flap.
//!
//! An interval with fewer than `min_reports` reports leaves the factor as it was and carries
//! its reports over to the next: limits that shrank the traffic (and with it the reports) must
//! still hear when the service recovers.

use crate::engine::{IntervalOutcomes, Thresholds};
use crate::policy::UpstreamTargets;
use std::collections::VecDeque;

/// How far below target the pressure must fall before the factor rises again.
pub const MARGIN: f64 = 0.05;

/// How many measured intervals in a row must agree before the factor moves.
pub const AGREEING: usize = 3;

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
    /// The pressures of the last `AGREEING` measured intervals, oldest first.
    recent: VecDeque<f64>,
}

impl Default for UpstreamGradient {
    fn default() -> Self {
        Self {
            factor: 1.0,
            carried: IntervalOutcomes::default(),
            recent: VecDeque::with_capacity(AGREEING),
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

    /// One interval: once the last `AGREEING` pressures agree, moves the factor by
    /// `smoothing` of the way to where the mildest of them says.
    pub fn update(
        &mut self,
        signal: Option<UpstreamSignal>,
        smoothing: f64,
        t: &Thresholds,
    ) -> f64 {
        let lowest = t.load_high_factor.min(1.0);
        let highest = t.load_low_factor.max(1.0);
        if let Some(signal) = signal {
            if self.recent.len() == AGREEING {
                self.recent.pop_front();
            }
            self.recent.push_back(signal.pressure);
            if let Some(pressure) = self.agreed_pressure() {
                let aim = if pressure > 0.0 {
                    (self.factor / pressure).clamp(lowest, highest)
                } else {
                    highest
                };
                self.factor += smoothing * (aim - self.factor);
            }
        }
        // A reload or admin change may have moved the bounds.
        self.factor = self.factor.clamp(lowest, highest);
        self.factor
    }

    /// The mildest of the last `AGREEING` pressures when all are above target, or all at
    /// `1 - MARGIN` or below; `None` while they disagree or are too few.
    fn agreed_pressure(&self) -> Option<f64> {
        if self.recent.len() < AGREEING {
            return None;
        }
        let smallest = self.recent.iter().copied().fold(f64::INFINITY, f64::min);
        let largest = self.recent.iter().copied().fold(0.0, f64::max);
        if smallest > 1.0 {
            Some(smallest)
        } else if largest <= 1.0 - MARGIN {
            Some(largest)
        } else {
            None
        }
    }
}
