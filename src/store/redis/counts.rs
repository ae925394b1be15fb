//! The plain numbers the shared store adds up per subject and window bucket: what a daemon
//! flushes, and what the store sums back.
//!
//! Defined here, below the features (which count with this very type), so the store depends on
//! nothing above it and nothing converts between the two.

use crate::clock::Micros;

/// Counts that add up across daemons and buckets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ActivityCounts {
    pub requests: u64,
    pub denied: u64,
    pub reports: u64,
    /// Reported 4xx statuses, and among them authentication failures (401, 403) and 404s.
    pub client_errors: u64,
    pub auth_failures: u64,
    pub not_found: u64,
    /// The sum over requests of the share of the subject's most-used limit (as written) in use
    /// after each: divided by `requests`, how close to its own limits the subject runs.
    pub usage_sum: f64,
    /// The first and last request (µs since the epoch); `first` is `u64::MAX` before any.
    pub first: Micros,
    pub last: Micros,
    /// Gaps between consecutive requests: how many, their sum and sum of squares (seconds).
    pub gaps: u64,
    pub gap_sum: f64,
    pub gap_sum_sq: f64,
}

impl Default for ActivityCounts {
    fn default() -> Self {
        Self {
            requests: 0,
            denied: 0,
            reports: 0,
            client_errors: 0,
            auth_failures: 0,
            not_found: 0,
            usage_sum: 0.0,
            first: Micros::MAX,
            last: 0,
            gaps: 0,
            gap_sum: 0.0,
            gap_sum_sq: 0.0,
        }
    }
}

/// One subject's activity since the last flush: counts, and the hashes of the distinct
/// endpoints and addresses seen (added to the bucket's HyperLogLogs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ActivityDelta<'a> {
    pub counts: ActivityCounts,
    pub endpoints: &'a [u64],
    pub ips: &'a [u64],
}

/// A subject's window as the store summed it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SharedTotals {
    pub counts: ActivityCounts,
    pub distinct_endpoints: u64,
    pub distinct_ips: u64,
}
