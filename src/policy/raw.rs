//! The policy file exactly as YAML gives it: every leaf is an untyped value and unknown keys are
//! captured, so that compiling it can report every problem at once instead of the first.

pub use crate::yaml::{Leaf, Unknown};
use indexmap::IndexMap;
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use std::fmt;

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawPolicy {
    pub store: Option<RawStore>,
    pub identity: Option<RawIdentity>,
    pub default_tier: Leaf,
    pub tiers: Option<RawTiers>,
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

/// The tiers by name. Two keys YAML tells apart may name one tier (`"1"` and `1`, `true` and
/// `"true"`): refused as a duplicate, where a map of names would keep the last one silently.
#[derive(Debug, Default)]
pub struct RawTiers(IndexMap<String, RawTier>);

impl std::ops::Deref for RawTiers {
    type Target = IndexMap<String, RawTier>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<'de> Deserialize<'de> for RawTiers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Tiers;
        impl<'de> Visitor<'de> for Tiers {
            type Value = RawTiers;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawTiers, A::Error> {
                let mut tiers = IndexMap::new();
                while let Some(name) = map.next_key::<String>()? {
                    if tiers.contains_key(&name) {
                        return Err(serde::de::Error::custom(format_args!(
                            "duplicate entry with key {name:?} (two keys name the tier {name:?})"
                        )));
                    }
                    tiers.insert(name, map.next_value::<RawTier>()?);
                }
                Ok(RawTiers(tiers))
            }
        }
        deserializer.deserialize_map(Tiers)
    }
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
