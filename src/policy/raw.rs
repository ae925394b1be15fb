//! The policy file exactly as YAML gives it: every leaf is an untyped value and unknown keys are
//! captured, so that compiling it can report every problem at once instead of the first.

pub use crate::yaml::{Leaf, Unknown};
use indexmap::IndexMap;
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawPolicy {
    pub store: Option<RawStore>,
    pub identity: Option<RawIdentity>,
    pub default_tier: Leaf,
    pub tiers: Option<IndexMap<String, RawTier>>,
    pub endpoints: Option<Vec<RawEndpoint>>,
    pub envoy_config: Leaf,
    pub default_endpoint: Option<RawTier>,
    pub adaptive: Option<RawAdaptive>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawStore {
    pub url: Leaf,
    pub on_error: Leaf,
    pub timeout: Leaf,
    pub key_prefix: Leaf,
    pub max_keys: Leaf,
    pub tls_ca: Leaf,
    #[serde(flatten)]
    pub unknown: Unknown,
}

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawIdentity {
    pub header: Leaf,
    pub trust_forwarded: Leaf,
    pub trust_tier_header: Leaf,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// A tier, or `default_endpoint`: a list of limits, optionally exempt from load scaling.
#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawTier {
    pub adaptive: Leaf,
    pub limits: Option<Vec<RawLimit>>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawEndpoint {
    pub path: Leaf,
    pub key: Leaf,
    pub adaptive: Leaf,
    pub load: Option<RawRuleLoad>,
    pub limits: Option<Vec<RawLimit>>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawLimit {
    pub name: Leaf,
    pub algorithm: Leaf,
    pub requests: Leaf,
    pub window: Leaf,
    pub burst: Leaf,
    pub shadow: Leaf,
    pub adaptive: Leaf,
    #[serde(flatten)]
    pub unknown: Unknown,
}

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawAdaptive {
    pub interval: Leaf,
    pub load: Option<RawLoad>,
    pub anomaly: Option<RawAnomaly>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawLoad {
    pub high: Leaf,
    pub low: Leaf,
    pub high_factor: Leaf,
    pub low_factor: Leaf,
    pub smoothing: Leaf,
    pub factor_override: Leaf,
    pub source: Leaf,
    pub upstream: Option<RawUpstream>,
    pub prometheus: Option<RawPrometheus>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// An endpoint rule's own load source: the source keys of `adaptive.load`.
#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawRuleLoad {
    pub source: Leaf,
    pub upstream: Option<RawUpstream>,
    pub prometheus: Option<RawPrometheus>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawUpstream {
    pub percentile: Leaf,
    pub latency_target: Leaf,
    pub error_target: Leaf,
    pub min_reports: Leaf,
    #[serde(flatten)]
    pub unknown: Unknown,
}

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawPrometheus {
    pub url: Leaf,
    pub query: Leaf,
    pub timeout: Leaf,
    pub keep_last: Leaf,
    #[serde(flatten)]
    pub unknown: Unknown,
}

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawAnomaly {
    pub model: Leaf,
    pub threshold: Leaf,
    pub factor: Leaf,
    pub window: Leaf,
    pub min_requests: Leaf,
    pub hold: Leaf,
    pub shadow: Leaf,
    #[serde(flatten)]
    pub unknown: Unknown,
}
