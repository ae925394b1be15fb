//! A subject's traffic summed over a span: counters that add up, and distinct-value sketches
//! that merge, so buckets of a window (and several daemons' shares) combine into one.

use super::{ADDRESS_SPREAD_DOUBT, FEATURE_COUNT, Features, MAX_CV, MAX_DEMAND};
use crate::clock::Micros;

/// A distinct-count sketch over 64-bit hashes: exact up to 8 values, then a HyperLogLog of 64
/// registers (about 13 % error) in 33 bytes, inline.
pub type Sketch = super::sketch::DistinctSketch;

/// What the limits made of one request, as the features read it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LimitOutcome {
    /// Denied by the limits as written (not by load or anomaly scaling alone).
    pub denied: bool,
    /// The share of the subject's most-used limit (as written) in use after the request.
    pub usage: f64,
    /// For a denial, the share of the denying limit's allowance over the anomaly window the
    /// request asked for beyond it (see [`Features::limit_demand`]).
    pub overflow: f64,
}

/// Counts that add up when spans are combined (buckets of a window, several daemons' shares).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counters {
    pub requests: u64,
    pub denied: u64,
    pub reports: u64,
    /// Reported 4xx statuses, and among them authentication failures (401, 403) and 404s.
    pub client_errors: u64,
    pub auth_failures: u64,
    pub not_found: u64,
    /// The sum over requests of the share of the subject's most-used limit (as written) in use
    /// after each: divided by `requests`, how close to its own limits the subject runs.
    pub usage_sum: f32,
    /// The sum over denied requests of the share of the denying limit's allowance each asked
    /// for beyond it (see [`Features::limit_demand`]). Both sums are f32: shares of at most 1
    /// summed over an interval need no finer grain, and the pair takes the room of one f64 (a
    /// control cycle copies these counters for every active subject).
    pub overflow_sum: f32,
    /// The first and last request (µs since the epoch); `first` is `u64::MAX` before any.
    pub first: Micros,
    pub last: Micros,
    /// Gaps between consecutive requests: how many, their sum and sum of squares (seconds).
    pub gaps: u64,
    pub gap_sum: f64,
    pub gap_sum_sq: f64,
    /// The longest of those gaps (seconds): [`features_of`] leaves it out, so one pause is not
    /// read as the subject's rhythm.
    pub longest_gap: f64,
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            requests: 0,
            denied: 0,
            reports: 0,
            client_errors: 0,
            auth_failures: 0,
            not_found: 0,
            usage_sum: 0.0,
            overflow_sum: 0.0,
            first: Micros::MAX,
            last: 0,
            gaps: 0,
            gap_sum: 0.0,
            gap_sum_sq: 0.0,
            longest_gap: 0.0,
        }
    }
}

impl Counters {
    /// Counts one decision; `gap` is the time since the subject's previous request, if known.
    pub fn record_request(&mut self, at: Micros, gap: Option<Micros>, outcome: LimitOutcome) {
        self.requests += 1;
        self.denied += u64::from(outcome.denied);
        if outcome.usage.is_finite() {
            self.usage_sum += outcome.usage.clamp(0.0, 1.0) as f32;
        }
        if outcome.denied && outcome.overflow.is_finite() {
            self.overflow_sum += outcome.overflow.clamp(0.0, 1.0) as f32;
        }
        self.first = self.first.min(at);
        self.last = self.last.max(at);
        if let Some(gap) = gap {
            // In f32 steps, as window rows keep the longest gap: its square, taken out of the
            // sum of squares again, is then exactly the square that went in.
            let seconds = f64::from((gap as f64 / 1e6) as f32);
            self.gaps += 1;
            self.gap_sum += seconds;
            self.gap_sum_sq += seconds * seconds;
            self.longest_gap = self.longest_gap.max(seconds);
        }
    }

    /// Counts one upstream status. 4xx are the client errors abuse causes, split by kind:
    /// authentication failures (401, 403), not found (404), and the rest (400, 409, 422, ...).
    pub fn record_status(&mut self, status: u16) {
        self.reports += 1;
        self.client_errors += u64::from((400..500).contains(&status));
        self.auth_failures += u64::from(matches!(status, 401 | 403));
        self.not_found += u64::from(status == 404);
    }

    /// Saturating: in fleet mode `other` was decoded from another daemon's upload in the store,
    /// and no value found there may panic the control loop.
    pub fn add(&mut self, other: &Counters) {
        self.requests = self.requests.saturating_add(other.requests);
        self.denied = self.denied.saturating_add(other.denied);
        self.reports = self.reports.saturating_add(other.reports);
        self.client_errors = self.client_errors.saturating_add(other.client_errors);
        self.auth_failures = self.auth_failures.saturating_add(other.auth_failures);
        self.not_found = self.not_found.saturating_add(other.not_found);
        self.usage_sum += other.usage_sum;
        self.overflow_sum += other.overflow_sum;
        self.first = self.first.min(other.first);
        self.last = self.last.max(other.last);
        self.gaps = self.gaps.saturating_add(other.gaps);
        self.gap_sum += other.gap_sum;
        self.gap_sum_sq += other.gap_sum_sq;
        if other.longest_gap.is_finite() {
            self.longest_gap = self.longest_gap.max(other.longest_gap);
        }
    }
}

/// Counters plus the distinct endpoints and addresses seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubjectActivity {
    pub counters: Counters,
    pub endpoints: Sketch,
    pub ips: Sketch,
}

impl SubjectActivity {
    pub fn record_request(
        &mut self,
        at: Micros,
        gap: Option<Micros>,
        endpoint: u64,
        ip: Option<u64>,
        outcome: LimitOutcome,
    ) {
        self.counters.record_request(at, gap, outcome);
        self.endpoints.insert_hash(endpoint);
        if let Some(ip) = ip {
            self.ips.insert_hash(ip);
        }
    }

    pub fn merge(&mut self, other: &SubjectActivity) {
        self.counters.add(&other.counters);
        self.endpoints.merge(&other.endpoints);
        self.ips.merge(&other.ips);
    }

    /// The features, with distinct counts from the sketches here.
    pub fn features(&self) -> Features {
        features_of(
            &self.counters,
            self.endpoints.estimate(),
            self.ips.estimate(),
        )
    }
}

/// Features from summed counters and distinct counts: shares of the subject's requests or
/// reports, so none depends on the window's length or on how busy the subject is in
/// absolute terms (a rate means nothing without the limits that allow it; `limit_usage`
/// carries that, relative to the subject's own limits).
pub fn features_of(c: &Counters, distinct_endpoints: u64, distinct_ips: u64) -> Features {
    if c.requests == 0 {
        return Features::default();
    }
    let requests = c.requests as f64;
    let per_request = |n: u64| n.min(c.requests) as f64 / requests;
    let cv = regularity(c);
    let share_of_reports = |n: u64| {
        if c.reports == 0 {
            0.0
        } else {
            n.min(c.reports) as f64 / c.reports as f64
        }
    };
    let other_errors = c
        .client_errors
        .saturating_sub(c.auth_failures.saturating_add(c.not_found));
    let limit_usage = (f64::from(c.usage_sum) / requests).clamp(0.0, 1.0);
    let denied_ratio = c.denied.min(c.requests) as f64 / requests;
    Features {
        limit_usage,
        denied_ratio,
        endpoints_per_request: per_request(distinct_endpoints),
        ips_per_request: per_request(distinct_ips),
        auth_failure_ratio: share_of_reports(c.auth_failures),
        not_found_ratio: share_of_reports(c.not_found),
        other_client_error_ratio: share_of_reports(other_errors),
        interarrival_cv: cv,
        client_error_ratio: share_of_reports(c.client_errors),
        address_spread: distinct_ips.min(c.requests) as f64 / (requests + ADDRESS_SPREAD_DOUBT),
        limit_demand: demand(limit_usage, f64::from(c.overflow_sum)),
    }
}

/// The coefficient of variation of the gaps, the longest left out: a subject that pauses
/// between two runs of the same rhythm keeps that rhythm's figure (one huge gap among many
/// short ones would otherwise read as irregular, and irregular as less abusive). Two pauses
/// in one window still count one.
fn regularity(c: &Counters) -> f64 {
    let longest = if c.longest_gap.is_finite() {
        c.longest_gap.clamp(0.0, c.gap_sum.max(0.0))
    } else {
        0.0
    };
    let Some(n) = c.gaps.checked_sub(1).filter(|&n| n >= 2) else {
        return 0.0;
    };
    let n = n as f64;
    let mean = (c.gap_sum - longest) / n;
    let variance = ((c.gap_sum_sq - longest * longest) / n - mean * mean).max(0.0);
    if mean > 0.0 && variance.is_finite() {
        (variance.sqrt() / mean).min(MAX_CV)
    } else if mean == 0.0 {
        // Every gap but the longest is 0: requests at one instant (a batch, or a log that
        // keeps whole seconds) are bursts, not a metronome.
        MAX_CV
    } else {
        0.0
    }
}

/// `usage + overflow`, at most [`MAX_DEMAND`]; a part that is not a number (a corrupt shared
/// counter) reads 0, as every other feature reads it.
fn demand(usage: f64, overflow: f64) -> f64 {
    let finite = |x: f64| if x.is_nan() { 0.0 } else { x.max(0.0) };
    (finite(usage) + finite(overflow)).min(MAX_DEMAND)
}

const _: () = assert!(FEATURE_COUNT == 11);

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(requests: u64, denied: u64, usage_sum: f32) -> Counters {
        Counters {
            requests,
            denied,
            usage_sum,
            ..Counters::default()
        }
    }

    #[test]
    fn counters_read_from_the_store_saturate_instead_of_overflowing() {
        let mut c = counters(10, 1, 0.5);
        let huge = Counters {
            requests: u64::MAX,
            client_errors: u64::MAX,
            auth_failures: u64::MAX,
            not_found: u64::MAX,
            gaps: u64::MAX,
            ..Counters::default()
        };
        c.add(&huge);
        assert_eq!(c.requests, u64::MAX);
        let features = features_of(&c, 1, 1);
        assert_eq!(features.other_client_error_ratio, 0.0);
    }

    #[test]
    fn every_4xx_counts_in_the_client_error_ratio_and_nothing_without_reports() {
        let mut c = counters(10, 0, 0.0);
        assert_eq!(features_of(&c, 1, 1).client_error_ratio, 0.0);
        for status in [200, 401, 404, 409, 429, 503] {
            c.record_status(status);
        }
        assert_eq!(features_of(&c, 1, 1).client_error_ratio, 4.0 / 6.0);
    }

    #[test]
    fn a_pause_between_two_runs_of_one_rhythm_leaves_the_rhythm_regular() {
        let steady = |c: &mut Counters, from: Micros, count: u64| {
            for i in 0..count {
                c.record_request(from + i * 400_000, Some(400_000), LimitOutcome::default());
            }
        };
        let mut c = Counters::default();
        steady(&mut c, 0, 300);
        c.record_request(1_800_000_000, Some(1_680_000_000), LimitOutcome::default());
        steady(&mut c, 1_800_400_000, 100);
        assert!(features_of(&c, 1, 1).interarrival_cv < 1e-3);
        // A second pause is a gap like any other: the rhythm reads as no steadier than random.
        c.record_request(3_000_000_000, Some(1_160_000_000), LimitOutcome::default());
        assert_eq!(features_of(&c, 1, 1).interarrival_cv, MAX_CV);
        // Runs at one instant (a batch, whole-second log lines) are bursts, not a metronome.
        let mut bursts = Counters::default();
        for round in 0..3u64 {
            let at = round * 10_000_000;
            bursts.record_request(
                at,
                (round > 0).then_some(10_000_000),
                LimitOutcome::default(),
            );
            for _ in 0..20 {
                bursts.record_request(at, Some(0), LimitOutcome::default());
            }
        }
        assert_eq!(features_of(&bursts, 1, 1).interarrival_cv, MAX_CV);
        // Two gaps are too few to call anything regular once the longest is left out.
        let mut two = Counters::default();
        two.record_request(0, Some(1_000_000), LimitOutcome::default());
        two.record_request(0, Some(9_000_000), LimitOutcome::default());
        assert_eq!(features_of(&two, 1, 1).interarrival_cv, 0.0);
    }

    #[test]
    fn a_few_addresses_over_a_few_requests_are_no_spread() {
        let c = counters(20, 0, 0.0);
        assert_eq!(features_of(&c, 2, 3).address_spread, 3.0 / 40.0);
        // A sketch may estimate more addresses than requests: never more than one each.
        assert_eq!(features_of(&c, 2, 25).address_spread, 20.0 / 40.0);
    }

    #[test]
    fn limit_demand_adds_what_denied_requests_asked_beyond_the_limits_and_stops_at_a_hundred() {
        let mut c = counters(10, 0, 4.0);
        assert_eq!(features_of(&c, 1, 1).limit_demand, 0.4);
        // Shares of allowed requests count nothing; each denied one adds its share.
        let outcome = |denied, usage, overflow| LimitOutcome {
            denied,
            usage,
            overflow,
        };
        c.record_request(0, None, outcome(false, 0.4, 0.5));
        c.record_request(0, None, outcome(true, 1.0, 0.25));
        c.record_request(0, None, outcome(true, 1.0, 0.25));
        // Sums are f32 (the window keeps them so): equal to a few parts in ten million.
        let demand = features_of(&c, 1, 1).limit_demand;
        assert!((demand - (6.4 / 13.0 + 0.5)).abs() < 1e-6, "{demand}");
        c.overflow_sum = 1e9;
        assert_eq!(features_of(&c, 1, 1).limit_demand, MAX_DEMAND);
        // A corrupt share (a shared counter) reads 0, and one denial never counts more than
        // one whole allowance.
        let mut corrupt = counters(10, 0, f32::NAN);
        corrupt.overflow_sum = f32::NAN;
        assert_eq!(features_of(&corrupt, 1, 1).limit_demand, 0.0);
        let mut huge = Counters::default();
        huge.record_request(0, None, outcome(true, 1.0, 40.0));
        huge.record_request(0, None, outcome(true, 1.0, f64::INFINITY));
        assert_eq!(huge.overflow_sum, 1.0);
    }
}
