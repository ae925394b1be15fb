//! A subject's traffic summed over a span: counters that add up, and distinct-value sketches
//! that merge, so buckets of a window (and several daemons' shares) combine into one.

use super::{FEATURE_COUNT, Features, MAX_CV};
use crate::clock::Micros;
use cardinality_estimator::CardinalityEstimator;

/// A distinct-count sketch over 64-bit hashes: exact for a few values, then a HyperLogLog of
/// 256 registers (about 6.5 % error) in at most a few hundred bytes.
pub type Sketch = CardinalityEstimator<u64, wyhash::WyHash, 8, 6>;

/// Counts that add up when spans are combined: the store's own type, so a shared store adds
/// up exactly what a daemon counted, with no conversion between them.
pub use crate::store::ActivityCounts as Counters;

impl Counters {
    /// Counts one decision; `gap` is the time since the subject's previous request, if known.
    pub fn record_request(&mut self, at: Micros, gap: Option<Micros>, denied: bool) {
        self.requests += 1;
        self.denied += u64::from(denied);
        self.first = self.first.min(at);
        self.last = self.last.max(at);
        if let Some(gap) = gap {
            let seconds = gap as f64 / 1e6;
            self.gaps += 1;
            self.gap_sum += seconds;
            self.gap_sum_sq += seconds * seconds;
        }
    }

    /// Counts one upstream status; 4xx are the client errors abuse causes (401, 403, 404, 429).
    pub fn record_status(&mut self, status: u16) {
        self.reports += 1;
        self.client_errors += u64::from((400..500).contains(&status));
    }

    pub fn add(&mut self, other: &Counters) {
        self.requests += other.requests;
        self.denied += other.denied;
        self.reports += other.reports;
        self.client_errors += other.client_errors;
        self.first = self.first.min(other.first);
        self.last = self.last.max(other.last);
        self.gaps += other.gaps;
        self.gap_sum += other.gap_sum;
        self.gap_sum_sq += other.gap_sum_sq;
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
        denied: bool,
    ) {
        self.counters.record_request(at, gap, denied);
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

    /// The features at `now`, with `distinct` counts given (from the sketches here, or from
    /// the shared store's HyperLogLogs).
    pub fn features(&self, now: Micros) -> Features {
        features_of(
            &self.counters,
            self.endpoints.estimate() as u64,
            self.ips.estimate() as u64,
            now,
        )
    }
}

/// Features from summed counters and distinct counts, normalised by the span observed: from
/// the first request still counted to `now`, at least one second. (The window's oldest bucket
/// may reach a little past the window; its requests and its span are counted together.)
pub fn features_of(
    c: &Counters,
    distinct_endpoints: u64,
    distinct_ips: u64,
    now: Micros,
) -> Features {
    if c.requests == 0 {
        return Features::default();
    }
    let requests = c.requests as f64;
    let span = (now.saturating_sub(c.first) as f64 / 1e6).max(1.0);
    let per_request = |n: u64| n.min(c.requests) as f64 / requests;
    let cv = if c.gaps >= 2 {
        let n = c.gaps as f64;
        let mean = c.gap_sum / n;
        let variance = (c.gap_sum_sq / n - mean * mean).max(0.0);
        if mean > 0.0 {
            (variance.sqrt() / mean).min(MAX_CV)
        } else {
            0.0
        }
    } else {
        0.0
    };
    Features {
        requests_per_second: requests / span,
        endpoints_per_request: per_request(distinct_endpoints),
        ips_per_request: per_request(distinct_ips),
        client_error_ratio: if c.reports == 0 {
            0.0
        } else {
            c.client_errors as f64 / c.reports as f64
        },
        denied_ratio: c.denied as f64 / requests,
        interarrival_cv: cv,
    }
}

const _: () = assert!(FEATURE_COUNT == 6);
