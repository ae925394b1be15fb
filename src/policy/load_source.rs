//! Where the load factor comes from (`adaptive.load.source`): this host's CPU, the protected
//! service's own latency and errors as `/v1/report` carries them, or a Prometheus query.
//!
//! ratewarden's CPU says nothing about the API it protects once it runs as a central service,
//! so the policy names the saturation signal instead; the settings each source needs are
//! compiled here so that a source cannot be chosen without them.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub enum LoadSource {
    /// The CPU share of this host or of the cgroup's quota (the default).
    Cpu,
    Upstream(UpstreamTargets),
    Prometheus(PrometheusQuery),
}

impl LoadSource {
    /// The name the policy and the metrics' `source` label use.
    pub fn name(&self) -> &'static str {
        match self {
            LoadSource::Cpu => "cpu",
            LoadSource::Upstream(_) => "upstream",
            LoadSource::Prometheus(_) => "prometheus",
        }
    }
}

/// Every value `source` may take, in the order the docs list them.
pub const LOAD_SOURCE_NAMES: [&str; 3] = ["cpu", "upstream", "prometheus"];

/// `adaptive.load.upstream`: what the reported outcomes are held to, per interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UpstreamTargets {
    /// Which latency percentile is compared with `latency_target` (0.9: the p90).
    pub percentile: f64,
    pub latency_target: Duration,
    /// The share of 5xx statuses the service may return before it counts as overloaded.
    pub error_target: f64,
    /// Intervals with fewer reports than this leave the factor as it was.
    pub min_reports: u64,
}

/// `adaptive.load.prometheus`: an instant query whose single value is the load, 0 to 1.
#[derive(Debug, Clone, PartialEq)]
pub struct PrometheusQuery {
    /// `http://host:port` with an optional path prefix, no trailing slash.
    pub url: String,
    pub query: String,
    pub timeout: Duration,
    /// Failed queries in a row during which the last factor stays; after them, 1.0.
    pub keep_last: u32,
}
