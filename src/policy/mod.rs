//! The policy: tiers, endpoint rules, limits, store and adaptive settings, as domain types that
//! cannot hold an invalid value.
//!
//! [`Policy::from_yaml`] reads the policy YAML (docs/reference/policy.md) through the raw types
//! in `raw` and compiles them, collecting every error with its path in the file.

mod compile;
pub mod endpoint_path;
mod load_source;
pub(crate) mod raw;

use crate::limit::Limit;
use crate::store::StoreSettings;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::yaml::{PolicyError, PolicyErrors, parse_duration};
pub use endpoint_path::{AmbiguousPath, EndpointPath};
pub use load_source::{LOAD_SOURCE_NAMES, LoadSource, PrometheusQuery, UpstreamTargets};

/// A whole, valid policy.
#[derive(Debug, Clone)]
pub struct Policy {
    pub store: StoreSettings,
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
    /// Whether `path`, in normal form ([`EndpointPath`]), is the rule's (the compiler refuses a
    /// rule path no normalised path could match).
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
    /// The rule's own load source (`load`): its limits scale by this source's factor instead
    /// of the policy-wide one. Never set on `default_endpoint`.
    pub load_source: Option<LoadSource>,
    pub limits: Vec<Limit>,
    /// Where the rule sits in the file, for errors that name it (`endpoints[3]`).
    pub path_in_file: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Adaptive {
    pub interval: Duration,
    pub load: LoadSettings,
    pub anomaly: AnomalySettings,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LoadSettings {
    pub source: LoadSource,
    pub high: f64,
    pub low: f64,
    pub high_factor: f64,
    pub low_factor: f64,
    pub smoothing: f64,
    /// A load factor pinned by the file (`load.factor_override`): the load source is still
    /// read for its gauges, but no longer sets the factor.
    pub factor_override: Option<f64>,
}

impl Policy {
    /// What the policy format allows but rarely means: inverted load factors, and bucket
    /// limits too fast for whole microseconds ([`Limit::coarse_refill`]). Logged at start-up
    /// and at each reload, printed by `check-policy` after `ok`.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = self.adaptive.load.inverted_factors();
        let limits = self.tiers.iter().flat_map(|tier| &tier.limits).chain(
            self.endpoints
                .iter()
                .chain([&self.default_endpoint])
                .flat_map(|rule| &rule.limits),
        );
        warnings.extend(limits.filter_map(Limit::coarse_refill));
        warnings
    }
}

impl LoadSettings {
    /// What is odd about the load factors, when something is: a `high_factor` above 1 grows
    /// limits under load, a `low_factor` below 1 shrinks them on an idle machine (and with
    /// `upstream`, whose factor they bound on either side of 1, either keeps that side at 1).
    /// The policy format allows both, so they are warned about, not refused.
    pub fn inverted_factors(&self) -> Vec<String> {
        inverted_load_factors(
            ("adaptive.load.high_factor", self.high_factor),
            ("adaptive.load.low_factor", self.low_factor),
        )
    }
}

/// The warnings of [`LoadSettings::inverted_factors`] for factors named otherwise (the admin
/// API's `load_high_factor` and `load_low_factor`).
pub fn inverted_load_factors(high: (&str, f64), low: (&str, f64)) -> Vec<String> {
    let mut warnings = Vec::new();
    if high.1 > 1.0 {
        warnings.push(format!(
            "{} is {}, above 1: limits grow under high load",
            high.0, high.1
        ));
    }
    if low.1 < 1.0 {
        warnings.push(format!(
            "{} is {}, below 1: limits shrink on an idle machine",
            low.0, low.1
        ));
    }
    warnings
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
    /// Compiles a policy from YAML text; relative paths resolve against `base_dir`. Reads one
    /// file, `store.tls_ca`'s certificates; `rules::load` reads the policy file and its envoy
    /// folder.
    pub fn from_yaml(text: &str, base_dir: &Path) -> Result<Policy, PolicyErrors> {
        compile::compile(text, base_dir)
    }

    pub fn tier_index(&self, name: &str) -> Option<usize> {
        self.tiers.iter().position(|t| t.name == name)
    }

    /// The first endpoint rule matching `path` (normalised first), else `default_endpoint`.
    pub fn endpoint_rule(&self, path: &str) -> &EndpointRule {
        let path = EndpointPath::new(path);
        self.endpoints
            .iter()
            .find(|r| r.pattern.matches(&path))
            .unwrap_or(&self.default_endpoint)
    }
}
