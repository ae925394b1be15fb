//! envoyproxy/ratelimit configuration files, loaded unchanged: domains of nested descriptors
//! with rate limits, compiled into types that cannot be invalid.
//!
//! A folder holds one YAML file per domain. The daemon reads every `*.yaml` (and `*.yml`) file
//! (`rules::load_envoy_folder`); [`EnvoyConfig::compile`] compiles each through the raw types in
//! `raw` as the policy compiler does, reads no file, and reports every error with its file
//! and path. The compiled limits are
//! ordinary [`Limit`]s, so the engine and stores apply them like any other; the lookup
//! that picks a request descriptor's limit follows envoyproxy/ratelimit (see [`Domain::lookup`]).

mod compile;
mod load;
mod lookup;
pub(crate) mod raw;

use crate::limit::Limit;
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use lookup::Matched;

/// Every domain of one configuration folder.
#[derive(Debug, Clone)]
pub struct EnvoyConfig {
    pub dir: PathBuf,
    pub domains: HashMap<String, Domain>,
}

impl EnvoyConfig {
    pub fn domain(&self, name: &str) -> Option<&Domain> {
        self.domains.get(name)
    }

    /// Every limit all domains define, in no particular order.
    pub fn limits(&self) -> Vec<&Limit> {
        let mut out = Vec::new();
        for domain in self.domains.values() {
            domain.root.push_limits(&mut out);
        }
        out
    }

    /// How many rate limits (unlimited ones included) all domains define.
    pub fn rule_count(&self) -> usize {
        self.domains.values().map(|d| d.root.rule_count()).sum()
    }
}

/// One file: a domain and its descriptor tree.
#[derive(Debug, Clone)]
pub struct Domain {
    pub name: Arc<str>,
    /// The file it came from, relative to the folder.
    pub file: String,
    pub(crate) root: Level,
}

/// The descriptors at one depth, by key.
#[derive(Debug, Clone, Default)]
pub(crate) struct Level {
    by_key: HashMap<String, KeyNodes>,
}

impl Level {
    fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.by_key.values().flat_map(|k| {
            k.exact
                .values()
                .chain(k.prefixes.iter().map(|(_, n)| n))
                .chain(k.any.as_deref())
        })
    }

    fn push_limits<'a>(&'a self, out: &mut Vec<&'a Limit>) {
        for node in self.nodes() {
            if let Some(Rule::Limited(rule)) = &node.rule {
                out.push(&rule.limit);
            }
            node.children.push_limits(out);
        }
    }

    fn rule_count(&self) -> usize {
        self.by_key
            .values()
            .flat_map(|k| {
                k.exact
                    .values()
                    .chain(k.prefixes.iter().map(|(_, n)| n))
                    .chain(k.any.as_deref())
            })
            .map(|n| usize::from(n.rule.is_some()) + n.children.rule_count())
            .sum()
    }
}

/// The descriptors of one key: by exact value, by value prefix (`value: /api/*`), and the
/// key-only wildcard.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeyNodes {
    exact: HashMap<String, Node>,
    /// In file order: the first prefix that matches wins, as in envoyproxy/ratelimit.
    prefixes: Vec<(String, Node)>,
    any: Option<Box<Node>>,
}

/// One descriptor of the tree.
#[derive(Debug, Clone)]
pub struct Node {
    /// `api_key.path_/api/search`: keys, with `_value` where the descriptor names a value.
    pub path: String,
    pub rule: Option<Rule>,
    /// A value prefix whose matches share one counter (`share_threshold: true`).
    pub share_threshold: bool,
    pub(crate) children: Level,
}

/// What a descriptor's `rate_limit` says.
#[derive(Debug, Clone)]
pub enum Rule {
    /// `unlimited: true`: always passes, counts nothing.
    Unlimited,
    /// `requests_per_unit: 0`: never passes (envoyproxy/ratelimit's way to block a value).
    Blocked(BlockRule),
    Limited(LimitRule),
}

#[derive(Debug, Clone)]
pub struct BlockRule {
    /// The `name` the file gives, else the descriptor path.
    pub shown: String,
    pub unit: Unit,
    pub name: Option<String>,
    pub replaces: Vec<String>,
    /// `shadow_mode`: it would deny every request, and denies none.
    pub shadow: bool,
}

#[derive(Debug, Clone)]
pub struct LimitRule {
    /// The limit as the engine applies it (`shadow` from `shadow_mode`).
    pub limit: Arc<Limit>,
    pub unit: Unit,
    /// The `name` the file gives, which `replaces` refers to.
    pub name: Option<String>,
    /// Names of the limits this one replaces when both apply to one request.
    pub replaces: Vec<String>,
}

/// The units of envoyproxy/ratelimit (and of `rls.proto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    Second,
    Minute,
    Hour,
    Day,
    Week,
    /// 30 days.
    Month,
    /// 365 days.
    Year,
}

impl Unit {
    pub const ALL: [Unit; 7] = [
        Unit::Second,
        Unit::Minute,
        Unit::Hour,
        Unit::Day,
        Unit::Week,
        Unit::Month,
        Unit::Year,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Unit::Second => "second",
            Unit::Minute => "minute",
            Unit::Hour => "hour",
            Unit::Day => "day",
            Unit::Week => "week",
            Unit::Month => "month",
            Unit::Year => "year",
        }
    }

    /// Case-insensitive, as envoyproxy/ratelimit reads units.
    pub fn from_name(name: &str) -> Option<Unit> {
        Unit::ALL
            .into_iter()
            .find(|u| u.name().eq_ignore_ascii_case(name))
    }

    pub fn seconds(self) -> u64 {
        const DAY: u64 = 86_400;
        match self {
            Unit::Second => 1,
            Unit::Minute => 60,
            Unit::Hour => 3_600,
            Unit::Day => DAY,
            Unit::Week => 7 * DAY,
            Unit::Month => 30 * DAY,
            Unit::Year => 365 * DAY,
        }
    }

    pub fn window(self) -> Duration {
        Duration::from_secs(self.seconds())
    }

    /// The unit whose window is exactly `window`, if any.
    pub fn of_window(window: Duration) -> Option<Unit> {
        Unit::ALL.into_iter().find(|u| u.window() == window)
    }
}

/// One problem in one file of a configuration folder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
pub struct EnvoyConfigError {
    pub file: String,
    pub path: String,
    pub message: String,
}

/// Every problem found in a configuration folder, file by file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct EnvoyConfigErrors(pub Vec<EnvoyConfigError>);

impl EnvoyConfigErrors {
    pub fn lines(&self) -> Vec<String> {
        self.0.iter().map(ToString::to_string).collect()
    }

    /// The lines under a heading that names the folder `dir` already: an error of the folder
    /// itself (`holds no .yaml file`) does not name it again.
    pub fn lines_under(&self, dir: &std::path::Path) -> Vec<String> {
        let folder = dir.display().to_string();
        self.0
            .iter()
            .map(|e| match e.file == folder {
                true => e.to_string()[folder.len()..]
                    .trim_start_matches(": ")
                    .to_owned(),
                false => e.to_string(),
            })
            .collect()
    }

    /// [`EnvoyConfigErrors::lines_under`] after a heading ending in `:`: one on the heading's
    /// line, more one per line.
    pub fn after_heading(&self, dir: &std::path::Path) -> String {
        match self.lines_under(dir).as_slice() {
            [only] => format!(" {only}"),
            lines => format!("\n{}", lines.join("\n")),
        }
    }
}

impl fmt::Display for EnvoyConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.lines().join("\n"))
    }
}
