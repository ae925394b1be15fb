//! An envoyproxy/ratelimit file exactly as YAML gives it: untyped leaves and captured unknown
//! keys, so compiling it can report every problem at once.

use crate::yaml::{Leaf, Text, Unknown};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawFile {
    pub domain: Leaf,
    pub descriptors: Option<Vec<RawDescriptor>>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawDescriptor {
    pub key: Leaf,
    /// Read as written: it is matched as text against what Envoy sends.
    pub value: Option<Text>,
    pub rate_limit: Option<RawRateLimit>,
    pub descriptors: Option<Vec<RawDescriptor>>,
    pub shadow_mode: Leaf,
    pub detailed_metric: Leaf,
    pub value_to_metric: Leaf,
    pub share_threshold: Leaf,
    #[serde(flatten)]
    pub unknown: Unknown,
}

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawRateLimit {
    pub unit: Leaf,
    pub requests_per_unit: Leaf,
    pub unlimited: Leaf,
    pub name: Leaf,
    pub replaces: Option<Vec<RawReplace>>,
    /// ratewarden's: the algorithm (envoyproxy/ratelimit's is `fixed_window`).
    pub algorithm: Leaf,
    /// ratewarden's: `false` exempts the limit from load scaling.
    pub adaptive: Leaf,
    #[serde(flatten)]
    pub unknown: Unknown,
}

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a map")]
pub struct RawReplace {
    pub name: Leaf,
    #[serde(flatten)]
    pub unknown: Unknown,
}

pub const FILE_KEYS: &[&str] = &["domain", "descriptors"];
pub const DESCRIPTOR_KEYS: &[&str] = &[
    "key",
    "value",
    "rate_limit",
    "descriptors",
    "shadow_mode",
    "detailed_metric",
    "value_to_metric",
    "share_threshold",
];
pub const RATE_LIMIT_KEYS: &[&str] = &[
    "unit",
    "requests_per_unit",
    "unlimited",
    "name",
    "replaces",
    "algorithm",
    "adaptive",
];
