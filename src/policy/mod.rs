//! The policy: tiers, endpoint rules, limits, store and adaptive settings, as domain types that
//! cannot hold an invalid value.
//!
//! [`Policy::from_yaml`] reads the YAML of `policy.md` through the raw types in [`raw`] and
//! compiles them, collecting every error with its path in the file.

mod compile;
mod duration;
mod error;
pub(crate) mod fields;
pub(crate) mod raw;

use crate::algorithm::{Algorithm, Rate};
use crate::clock::{Micros, micros};
use crate::store::SentinelUrl;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) use compile::parse;
pub use duration::parse_duration;
pub use error::{PolicyError, PolicyErrors};

/// A whole, valid policy.
#[derive(Debug, Clone)]
pub struct Policy {
    pub store: StoreConfig,
    pub identity: Identity,
    pub tiers: Vec<Tier>,
    /// Index into `tiers`.
    pub default_tier: usize,
    pub endpoints: Vec<EndpointRule>,
    pub default_endpoint: EndpointRule,
    /// An envoyproxy/ratelimit configuration folder, resolved against the policy's folder
    /// (read and compiled by `rules`, not here).
    pub envoy_config: Option<PathBuf>,
    pub adaptive: Adaptive,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreConfig {
    pub url: StoreUrl,
    pub on_error: OnError,
    pub timeout: Duration,
    pub key_prefix: String,
    /// The most keys the embedded store tracks at once (see README, "Memory").
    pub max_keys: NonZeroU64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    Memory,
    Redis(String),
    RedisCluster(Vec<String>),
    /// `redis+sentinel://`: the primary that these Sentinels name, followed across failovers.
    RedisSentinel(SentinelUrl),
}

/// What a decision does while the store fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    Allow,
    Deny,
    Local,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub header: String,
    pub trust_forwarded: bool,
    pub trust_tier_header: bool,
}

#[derive(Debug, Clone)]
pub struct Tier {
    pub name: String,
    /// `false` exempts every limit checked for this tier's subjects from load scaling.
    pub adaptive: bool,
    pub limits: Vec<Limit>,
}

/// What an endpoint rule's limits are counted per.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyScope {
    User,
    Ip,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathPattern {
    Exact(String),
    /// The path with its trailing `*` removed.
    Prefix(String),
    /// `default_endpoint`: whatever no rule matched.
    Default,
}

impl PathPattern {
    pub fn matches(&self, path: &str) -> bool {
        match self {
            PathPattern::Exact(p) => p == path,
            PathPattern::Prefix(p) => path.starts_with(p.as_str()),
            PathPattern::Default => true,
        }
    }

    /// The rule as written in the file (`/api/*`), or `default`.
    pub fn display(&self) -> String {
        match self {
            PathPattern::Exact(p) => p.clone(),
            PathPattern::Prefix(p) => format!("{p}*"),
            PathPattern::Default => "default".to_owned(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct EndpointRule {
    pub pattern: PathPattern,
    pub key: KeyScope,
    pub adaptive: bool,
    pub limits: Vec<Limit>,
    /// Where the rule sits in the file, for errors that name it (`endpoints[3]`).
    pub path_in_file: String,
}

/// One limit as the policy states it, before scaling.
#[derive(Debug, Clone)]
pub struct Limit {
    pub name: String,
    pub algorithm: Algorithm,
    pub requests: NonZeroU64,
    pub window: Duration,
    pub burst: NonZeroU64,
    pub shadow: bool,
    pub adaptive: bool,
    /// Stable store identity (`t:free:hourly`): usage survives a reload that keeps the name.
    pub id: String,
    /// A hash of `id`, computed once here rather than on every request.
    pub id_hash: u64,
    /// What responses call it (`tier:free/hourly`, `endpoint:/api/search/search`).
    pub label: String,
}

impl Limit {
    pub fn window_micros(&self) -> Micros {
        micros(self.window).max(1)
    }

    /// The effective rate at `scale`: floor(requests × scale), floor(burst × scale).
    pub fn rate(&self, scale: f64) -> Rate {
        Rate {
            algorithm: self.algorithm,
            window: self.window_micros(),
            requests: scale_count(self.requests.get(), scale),
            burst: scale_count(self.burst.get(), scale),
        }
    }

    pub fn base_rate(&self) -> Rate {
        self.rate(1.0)
    }
}

/// The 64-bit hash of a limit id that stores mix into their keys.
pub fn hash_limit_id(id: &str) -> u64 {
    let digest = blake3::hash(id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest.as_bytes()[..8]);
    u64::from_le_bytes(first)
}

fn scale_count(n: u64, scale: f64) -> u64 {
    if scale == 1.0 {
        return n;
    }
    // `as` saturates; NaN and negatives (never produced, scales are validated) become 0. The
    // epsilon keeps products such as 100 × 0.29 (28.999999999999996 in binary) at 29.
    (n as f64 * scale + 1e-9).floor() as u64
}

#[derive(Debug, Clone, PartialEq)]
pub struct Adaptive {
    pub interval: Duration,
    pub load: LoadSettings,
    pub anomaly: AnomalySettings,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadSettings {
    pub high: f64,
    pub low: f64,
    pub high_factor: f64,
    pub low_factor: f64,
    pub smoothing: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AnomalySettings {
    pub model: Option<PathBuf>,
    pub threshold: f64,
    pub factor: f64,
    pub window: Duration,
    pub min_requests: NonZeroU64,
    pub hold: Duration,
    pub shadow: bool,
}

impl Policy {
    /// Compiles a policy from YAML text; relative paths resolve against `base_dir`. Reads no
    /// file: `rules::load` reads the policy file and its envoy folder.
    pub fn from_yaml(text: &str, base_dir: &Path) -> Result<Policy, PolicyErrors> {
        compile::compile(text, base_dir)
    }

    pub fn tier_index(&self, name: &str) -> Option<usize> {
        self.tiers.iter().position(|t| t.name == name)
    }

    /// The first endpoint rule matching `path`, else `default_endpoint`.
    pub fn endpoint_rule(&self, path: &str) -> &EndpointRule {
        self.endpoints
            .iter()
            .find(|r| r.pattern.matches(path))
            .unwrap_or(&self.default_endpoint)
    }
}
