//! Compiling raw YAML into a [`Policy`], collecting every error with its path.
//!
//! This file holds the whole-file pass and the `store` and `identity` sections; the limits of
//! tiers and endpoint rules and the `adaptive` section each have their own module, as they are
//! long and change for their own reasons.

mod adaptive;
mod limits;
mod load_source;

use super::raw::{RawIdentity, RawPolicy, RawStore};
use super::{EndpointRule, Identity, KeyScope, PathPattern, Policy, PolicyErrors, Tier};
use crate::store::{OnError, StoreSettings, StoreUrl, TlsCa};
use crate::yaml::fields::{Errors, join};
use crate::yaml::parse;
use limits::{compile_endpoint, compile_tier, limits};
use load_source::written_interval;
use serde_yaml_ng::Value;
use std::num::NonZeroU64;
use std::path::Path;
use std::time::Duration;

/// Requests and burst above this are refused: it keeps every product of counts and microseconds
/// far inside 64 bits.
const MAX_COUNT: u64 = 1_000_000_000;
const DEFAULT_MAX_KEYS: u64 = 4_000_000;

const TOP_KEYS: &[&str] = &[
    "store",
    "identity",
    "default_tier",
    "tiers",
    "endpoints",
    "envoy_config",
    "default_endpoint",
    "adaptive",
];
pub(super) fn compile(text: &str, base_dir: &Path) -> Result<Policy, PolicyErrors> {
    let text = crate::files::without_byte_order_mark(text);
    let mut raw: RawPolicy = if text.trim().is_empty() {
        RawPolicy::default()
    } else {
        // First as plain YAML: syntax errors and duplicate keys (which the typed pass would let
        // silently override each other, e.g. a tier defined twice) are reported on their own.
        parse::<Value>(text)?;
        parse(text)?
    };
    let mut e = Errors::default();
    e.unknown_keys("", &raw.unknown, TOP_KEYS);
    let store = store(&mut e, base_dir, raw.store.take().unwrap_or_default());
    let identity = identity(&mut e, raw.identity.take().unwrap_or_default());
    let tiers = tiers(&mut e, &raw);
    let default_tier = default_tier(&mut e, &raw, &tiers);
    let interval = raw
        .adaptive
        .as_ref()
        .map_or(Duration::from_secs(1), |a| written_interval(&a.interval));
    let endpoints = endpoints(&mut e, &raw, interval);
    let default_endpoint = default_endpoint(&mut e, &raw);
    let envoy_config = raw
        .envoy_config
        .as_ref()
        .filter(|v| !v.is_null())
        .and_then(|v| e.string("envoy_config", v))
        .map(|dir| base_dir.join(dir));
    let adaptive = adaptive::adaptive(&mut e, base_dir, raw.adaptive.take().unwrap_or_default());

    let policy = Policy {
        store,
        identity,
        tiers,
        default_tier: default_tier.unwrap_or(0),
        endpoints,
        default_endpoint,
        envoy_config,
        adaptive,
    };
    e.finish(policy)
}

fn tiers(e: &mut Errors, raw: &RawPolicy) -> Vec<Tier> {
    let mut tiers = Vec::new();
    match &raw.tiers {
        None => e.push("tiers", "is required"),
        Some(map) if map.is_empty() => e.push("tiers", "must define at least one tier"),
        Some(map) => {
            for (name, tier) in map.iter() {
                tiers.push(compile_tier(e, name, tier));
            }
        }
    }
    tiers
}

/// The index of `default_tier` in `tiers` (an unknown name is an error only when tiers exist:
/// otherwise "tiers is required" says it all).
fn default_tier(e: &mut Errors, raw: &RawPolicy, tiers: &[Tier]) -> Option<usize> {
    let value = e.required("default_tier", &raw.default_tier)?;
    let name = e.string("default_tier", value)?;
    tiers.iter().position(|t| t.name == name).or_else(|| {
        if raw.tiers.as_ref().is_some_and(|m| !m.is_empty()) {
            e.push(
                "default_tier",
                format!("tier \"{name}\" is not defined in tiers"),
            );
        }
        None
    })
}

fn endpoints(e: &mut Errors, raw: &RawPolicy, interval: Duration) -> Vec<EndpointRule> {
    let mut endpoints: Vec<(usize, EndpointRule)> = Vec::new();
    for (i, raw_rule) in raw.endpoints.iter().flatten().enumerate() {
        let path = format!("endpoints[{i}]");
        let Some(rule) = compile_endpoint(e, &path, raw_rule, interval) else {
            continue;
        };
        // First match wins: a rule every path of which an earlier rule takes never matches.
        if let Some((earlier, by)) = endpoints
            .iter()
            .find(|(_, earlier)| covers(&earlier.pattern, &rule.pattern))
        {
            let shown = rule.pattern.display();
            let problem = match by.pattern == rule.pattern {
                true => format!(
                    "\"{shown}\" is already matched by an earlier rule (endpoints[{earlier}])"
                ),
                false => format!(
                    "\"{shown}\" is already matched by an earlier rule (endpoints[{earlier}], \
                     \"{}\"): first match wins, so put it before that rule",
                    by.pattern.display()
                ),
            };
            e.push(&join(&path, "path"), problem);
        }
        endpoints.push((i, rule));
    }
    endpoints.into_iter().map(|(_, rule)| rule).collect()
}

/// Whether every path `later` matches is matched by `earlier` already.
fn covers(earlier: &PathPattern, later: &PathPattern) -> bool {
    match (earlier, later) {
        (PathPattern::Prefix(prefix), PathPattern::Exact(path) | PathPattern::Prefix(path)) => {
            path.starts_with(prefix.as_str())
        }
        (PathPattern::Exact(a), PathPattern::Exact(b)) => a == b,
        _ => false,
    }
}

fn default_endpoint(e: &mut Errors, raw: &RawPolicy) -> EndpointRule {
    let (adaptive, limits) = match raw.default_endpoint.as_ref() {
        None => (true, Vec::new()),
        Some(raw) => {
            e.unknown_keys("default_endpoint", &raw.unknown, &["adaptive", "limits"]);
            let adaptive = e.boolean("default_endpoint.adaptive", &raw.adaptive, true);
            let limits = limits(
                e,
                "default_endpoint",
                raw.limits.as_deref(),
                "d:",
                "endpoint:default/",
            );
            (adaptive, limits)
        }
    };
    EndpointRule {
        pattern: PathPattern::Default,
        key: KeyScope::User,
        adaptive,
        load_source: None,
        limits,
        path_in_file: "default_endpoint".to_owned(),
    }
}

fn store(e: &mut Errors, base_dir: &Path, raw: RawStore) -> StoreSettings {
    e.unknown_keys(
        "store",
        &raw.unknown,
        &[
            "url",
            "on_error",
            "timeout",
            "key_prefix",
            "max_keys",
            "tls_ca",
        ],
    );
    let url = match raw.url.as_ref().filter(|v| !v.is_null()) {
        None => StoreUrl::Memory,
        Some(v) => e
            .string("store.url", v)
            .and_then(|s| store_url(e, &s))
            .unwrap_or(StoreUrl::Memory),
    };
    let on_error = match raw.on_error.as_ref().filter(|v| !v.is_null()) {
        None => OnError::Local,
        Some(v) => match e.string("store.on_error", v).as_deref() {
            Some("allow") => OnError::Allow,
            Some("deny") => OnError::Deny,
            Some("local") | None => OnError::Local,
            Some(other) => {
                e.push(
                    "store.on_error",
                    format!("unknown value \"{other}\" (expected allow, deny or local)"),
                );
                OnError::Local
            }
        },
    };
    let timeout = e.duration(
        "store.timeout",
        &raw.timeout,
        Duration::from_millis(20),
        false,
    );
    let key_prefix = match raw.key_prefix.as_ref().filter(|v| !v.is_null()) {
        None => "rw".to_owned(),
        Some(v) => match e.string("store.key_prefix", v) {
            Some(p) if p.chars().any(|c| c.is_whitespace() || c == '{' || c == '}') => {
                e.push(
                    "store.key_prefix",
                    "must not contain spaces or braces (braces are Redis Cluster hash tags)",
                );
                p
            }
            p => p.unwrap_or_default(),
        },
    };
    let max_keys = raw
        .max_keys
        .as_ref()
        .filter(|v| !v.is_null())
        .and_then(|v| e.count("store.max_keys", v, 1, u64::MAX))
        .unwrap_or(DEFAULT_MAX_KEYS);
    let tls_ca = tls_ca(e, base_dir, &raw, &url);
    StoreSettings {
        url,
        tls_ca,
        on_error,
        timeout,
        key_prefix,
        max_keys: NonZeroU64::new(max_keys).unwrap_or(NonZeroU64::MIN),
    }
}

/// `store.tls_ca`, read and checked now (relative to the policy file's folder), so that
/// `check-policy` refuses a CA the daemon could not use.
fn tls_ca(e: &mut Errors, base_dir: &Path, raw: &RawStore, url: &StoreUrl) -> Option<TlsCa> {
    let file = raw
        .tls_ca
        .as_ref()
        .filter(|v| !v.is_null())
        .and_then(|v| e.string("store.tls_ca", v))?;
    if !url.is_tls() {
        e.push(
            "store.tls_ca",
            "applies only to TLS store URLs (rediss://, rediss+cluster:// or rediss+sentinel://)",
        );
        return None;
    }
    TlsCa::load(&base_dir.join(&file))
        .map_err(|error| e.push("store.tls_ca", format!("\"{file}\" {error}")))
        .ok()
}

/// The URL as the store parses it; its error is reported at `store.url`.
fn store_url(e: &mut Errors, url: &str) -> Option<StoreUrl> {
    StoreUrl::parse(url)
        .map_err(|error| e.push("store.url", error.to_string()))
        .ok()
}

fn identity(e: &mut Errors, raw: RawIdentity) -> Identity {
    e.unknown_keys(
        "identity",
        &raw.unknown,
        &["header", "trust_forwarded", "trust_tier_header"],
    );
    let header = match raw.header.as_ref().filter(|v| !v.is_null()) {
        None => "X-Api-Key".to_owned(),
        Some(v) => match e.string("identity.header", v) {
            Some(h)
                if h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)) =>
            {
                h
            }
            Some(h) => {
                e.push(
                    "identity.header",
                    format!("\"{h}\" is not a valid HTTP header name"),
                );
                h
            }
            None => String::new(),
        },
    };
    Identity {
        header,
        trust_forwarded: e.boolean("identity.trust_forwarded", &raw.trust_forwarded, false),
        trust_tier_header: e.boolean("identity.trust_tier_header", &raw.trust_tier_header, false),
    }
}
