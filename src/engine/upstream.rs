//! The protected service's outcomes since the last control cycle, as `/v1/report` carries
//! them: how many, how many were 5xx, and their latencies. The control loop drains them each
//! interval into the `upstream` load source; the request path never reads them.

use parking_lot::Mutex;

/// Latencies kept per interval; reports past it still count towards the error share. Enough
/// for a stable p99, and a bound on memory whatever the report rate.
pub const MAX_LATENCIES_PER_INTERVAL: usize = 100_000;

/// One reported outcome of a request the service answered.
#[derive(Debug, Clone, Copy)]
pub struct Outcome<'a> {
    pub user: &'a str,
    pub endpoint: &'a str,
    pub status: u16,
    /// The service's latency in milliseconds, when the caller measured it (finite, at least 0).
    pub latency_ms: Option<f64>,
}

impl<'a> Outcome<'a> {
    /// An outcome without a measured latency.
    pub fn new(user: &'a str, endpoint: &'a str, status: u16) -> Self {
        Self {
            user,
            endpoint,
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
    /// Milliseconds, in the order reported (at most [`MAX_LATENCIES_PER_INTERVAL`]).
    pub latencies_ms: Vec<f64>,
}

impl IntervalOutcomes {
    pub fn add(&mut self, status: u16, latency_ms: Option<f64>) {
        self.reports += 1;
        if (500..600).contains(&status) {
            self.errors += 1;
        }
        if let Some(ms) = latency_ms.filter(|ms| ms.is_finite() && *ms >= 0.0)
            && self.latencies_ms.len() < MAX_LATENCIES_PER_INTERVAL
        {
            self.latencies_ms.push(ms);
        }
    }
}

#[derive(Debug, Default)]
pub struct UpstreamOutcomes {
    pending: Mutex<IntervalOutcomes>,
}

impl UpstreamOutcomes {
    pub fn record(&self, status: u16, latency_ms: Option<f64>) {
        self.pending.lock().add(status, latency_ms);
    }

    /// The outcomes since the last drain; the next interval starts empty.
    pub fn drain(&self) -> IntervalOutcomes {
        std::mem::take(&mut *self.pending.lock())
    }
}
