//! Compiling raw YAML into a [`Policy`], collecting every error with its path.

use super::fields::{Errors, join};
use super::raw::{
    RawAdaptive, RawAnomaly, RawEndpoint, RawIdentity, RawLimit, RawLoad, RawPolicy, RawStore,
    RawTier,
};
use super::{
    Adaptive, AnomalySettings, EndpointRule, Identity, KeyScope, Limit, LoadSettings, OnError,
    PathPattern, Policy, PolicyErrors, StoreConfig, StoreUrl, Tier,
};
use crate::algorithm::Algorithm;
use serde_yaml_ng::Value;
use std::collections::HashSet;
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
const LIMIT_KEYS: &[&str] = &[
    "name",
    "algorithm",
    "requests",
    "window",
    "burst",
    "shadow",
    "adaptive",
];

pub(super) fn compile(text: &str, base_dir: &Path) -> Result<Policy, PolicyErrors> {
    let raw: RawPolicy = if text.trim().is_empty() {
        RawPolicy::default()
    } else {
        // First as plain YAML: syntax errors and duplicate keys (which the typed pass would let
        // silently override each other, e.g. a tier defined twice) are reported on their own.
        parse::<Value>(text)?;
        parse(text)?
    };
    let mut e = Errors::default();
    e.unknown_keys("", &raw.unknown, TOP_KEYS);
    let store = store(&mut e, raw.store.unwrap_or_default());
    let identity = identity(&mut e, raw.identity.unwrap_or_default());

    let mut tiers = Vec::new();
    match &raw.tiers {
        None => e.push("tiers", "is required"),
        Some(map) if map.is_empty() => e.push("tiers", "must define at least one tier"),
        Some(map) => {
            for (name, tier) in map {
                tiers.push(compile_tier(&mut e, name, tier));
            }
        }
    }
    let default_tier = match e.required("default_tier", &raw.default_tier) {
        Some(v) => match e.string("default_tier", v) {
            Some(name) => tiers.iter().position(|t| t.name == name).or_else(|| {
                if raw.tiers.as_ref().is_some_and(|m| !m.is_empty()) {
                    e.push(
                        "default_tier",
                        format!("tier \"{name}\" is not defined in tiers"),
                    );
                }
                None
            }),
            None => None,
        },
        None => None,
    };

    let mut endpoints = Vec::new();
    let mut seen_paths = HashSet::new();
    for (i, raw_rule) in raw.endpoints.iter().flatten().enumerate() {
        let path = format!("endpoints[{i}]");
        if let Some(rule) = compile_endpoint(&mut e, &path, raw_rule) {
            if !seen_paths.insert(rule.pattern.clone()) {
                e.push(
                    &join(&path, "path"),
                    format!(
                        "\"{}\" is already matched by an earlier rule",
                        rule.pattern.display()
                    ),
                );
            }
            endpoints.push(rule);
        }
    }
    let default_endpoint = raw.default_endpoint.as_ref().map_or_else(
        || EndpointRule {
            pattern: PathPattern::Default,
            key: KeyScope::User,
            adaptive: true,
            limits: Vec::new(),
            path_in_file: "default_endpoint".to_owned(),
        },
        |raw| {
            let adaptive = e.boolean("default_endpoint.adaptive", &raw.adaptive, true);
            e.unknown_keys("default_endpoint", &raw.unknown, &["adaptive", "limits"]);
            let limits = limits(
                &mut e,
                "default_endpoint",
                raw.limits.as_deref(),
                "d:",
                "endpoint:default/",
            );
            EndpointRule {
                pattern: PathPattern::Default,
                key: KeyScope::User,
                adaptive,
                limits,
                path_in_file: "default_endpoint".to_owned(),
            }
        },
    );
    let envoy_config = raw
        .envoy_config
        .as_ref()
        .filter(|v| !v.is_null())
        .and_then(|v| e.string("envoy_config", v))
        .map(|dir| base_dir.join(dir));
    let adaptive = adaptive(&mut e, base_dir, raw.adaptive.unwrap_or_default());

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

/// Deserializes the whole file; a failure is the one error reported.
fn parse<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, PolicyErrors> {
    let de = serde_yaml_ng::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        // serde_yaml_ng starts its message with the path when it knows one; a syntax error has
        // none (only a line and column), whatever key the parser had reached.
        match message.strip_prefix(&format!("{path}: ")) {
            Some(rest) if path != "." => PolicyErrors::single(&path, rest),
            _ => PolicyErrors::single("", message),
        }
    })
}

fn store(e: &mut Errors, raw: RawStore) -> StoreConfig {
    e.unknown_keys(
        "store",
        &raw.unknown,
        &["url", "on_error", "timeout", "key_prefix", "max_keys"],
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
    StoreConfig {
        url,
        on_error,
        timeout,
        key_prefix,
        max_keys: NonZeroU64::new(max_keys).unwrap_or(NonZeroU64::MIN),
    }
}

fn store_url(e: &mut Errors, url: &str) -> Option<StoreUrl> {
    if url == "memory://" {
        return Some(StoreUrl::Memory);
    }
    if url.starts_with("redis://") || url.starts_with("rediss://") {
        return Some(StoreUrl::Redis(url.to_owned()));
    }
    if url.starts_with("redis+sentinel://") {
        return Some(StoreUrl::RedisSentinel(url.to_owned()));
    }
    if let Some(nodes) = url.strip_prefix("redis+cluster://") {
        let nodes: Vec<String> = nodes
            .split(',')
            .filter(|n| !n.is_empty())
            .map(|n| format!("redis://{n}"))
            .collect();
        if nodes.is_empty() {
            e.push("store.url", "redis+cluster:// needs at least one host:port");
            return None;
        }
        return Some(StoreUrl::RedisCluster(nodes));
    }
    e.push(
        "store.url",
        format!("unsupported store \"{url}\" (expected memory://, redis://, rediss://, redis+cluster:// or redis+sentinel://)"),
    );
    None
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

fn compile_tier(e: &mut Errors, name: &str, raw: &RawTier) -> Tier {
    let path = format!("tiers.{name}");
    e.unknown_keys(&path, &raw.unknown, &["adaptive", "limits"]);
    let adaptive = e.boolean(&join(&path, "adaptive"), &raw.adaptive, true);
    if raw.limits.is_none() {
        e.push(&join(&path, "limits"), "is required");
    }
    let limits = limits(
        e,
        &path,
        raw.limits.as_deref(),
        &format!("t:{name}:"),
        &format!("tier:{name}/"),
    );
    Tier {
        name: name.to_owned(),
        adaptive,
        limits,
    }
}

fn compile_endpoint(e: &mut Errors, path: &str, raw: &RawEndpoint) -> Option<EndpointRule> {
    e.unknown_keys(path, &raw.unknown, &["path", "key", "adaptive", "limits"]);
    let pattern_path = join(path, "path");
    let pattern = e
        .required(&pattern_path, &raw.path)
        .and_then(|v| e.string(&pattern_path, v))
        .and_then(|p| {
            let (body, prefix) = match p.strip_suffix('*') {
                Some(body) => (body, true),
                None => (p.as_str(), false),
            };
            if !p.starts_with('/') {
                e.push(&pattern_path, format!("\"{p}\" must start with /"));
                None
            } else if body.contains('*') {
                e.push(
                    &pattern_path,
                    format!("\"{p}\": * is allowed only at the end"),
                );
                None
            } else if prefix {
                Some(PathPattern::Prefix(body.to_owned()))
            } else {
                Some(PathPattern::Exact(body.to_owned()))
            }
        });
    let key_path = join(path, "key");
    let key = match raw.key.as_ref().filter(|v| !v.is_null()) {
        None => KeyScope::User,
        Some(v) => match e.string(&key_path, v).as_deref() {
            Some("user") | None => KeyScope::User,
            Some("ip") => KeyScope::Ip,
            Some(other) => {
                e.push(
                    &key_path,
                    format!("unknown key scope \"{other}\" (expected user or ip)"),
                );
                KeyScope::User
            }
        },
    };
    let adaptive = e.boolean(&join(path, "adaptive"), &raw.adaptive, true);
    if raw.limits.is_none() {
        e.push(&join(path, "limits"), "is required");
    }
    let shown = pattern
        .as_ref()
        .map_or_else(|| path.to_owned(), PathPattern::display);
    let limits = limits(
        e,
        path,
        raw.limits.as_deref(),
        &format!("e:{shown}:"),
        &format!("endpoint:{shown}/"),
    );
    Some(EndpointRule {
        pattern: pattern?,
        key,
        adaptive,
        limits,
        path_in_file: path.to_owned(),
    })
}

fn limits(
    e: &mut Errors,
    scope: &str,
    raw: Option<&[RawLimit]>,
    id_prefix: &str,
    label_prefix: &str,
) -> Vec<Limit> {
    let mut names = HashSet::new();
    let mut out = Vec::new();
    for (i, raw) in raw.unwrap_or_default().iter().enumerate() {
        let path = format!("{scope}.limits[{i}]");
        if let Some(Value::String(name)) = &raw.name {
            if !names.insert(name.clone()) {
                e.push(
                    &join(&path, "name"),
                    format!("duplicate limit name \"{name}\" in {scope}"),
                );
            }
        }
        out.extend(limit(e, &path, raw, id_prefix, label_prefix));
    }
    out
}

fn limit(
    e: &mut Errors,
    path: &str,
    raw: &RawLimit,
    id_prefix: &str,
    label_prefix: &str,
) -> Option<Limit> {
    e.unknown_keys(path, &raw.unknown, LIMIT_KEYS);
    let at = |key: &str| join(path, key);
    let name = e
        .required(&at("name"), &raw.name)
        .and_then(|v| e.string(&at("name"), v));
    let algorithm = e
        .required(&at("algorithm"), &raw.algorithm)
        .and_then(|v| match v {
            Value::String(s) => Algorithm::from_name(s).or_else(|| {
                let known: Vec<_> = Algorithm::ALL.iter().map(|a| a.name()).collect();
                e.push(
                    &at("algorithm"),
                    format!(
                        "unknown algorithm \"{s}\" (expected one of {})",
                        known.join(", ")
                    ),
                );
                None
            }),
            _ => {
                e.push(&at("algorithm"), "must be a string");
                None
            }
        });
    let requests = e
        .required(&at("requests"), &raw.requests)
        .and_then(|v| e.count(&at("requests"), v, 1, MAX_COUNT));
    let window = match e.required(&at("window"), &raw.window) {
        Some(_) => Some(e.duration(&at("window"), &raw.window, Duration::ZERO, false))
            .filter(|d| !d.is_zero()),
        None => None,
    };
    let burst = match raw.burst.as_ref().filter(|v| !v.is_null()) {
        None => requests,
        Some(v) => {
            let burst = e.count(&at("burst"), v, 1, MAX_COUNT);
            if algorithm.is_some_and(|a| !a.reports_burst()) {
                e.push(&at("burst"), "applies only to token_bucket and gcra");
            }
            burst
        }
    };
    let shadow = e.boolean(&at("shadow"), &raw.shadow, false);
    let adaptive = e.boolean(&at("adaptive"), &raw.adaptive, true);
    let name = name?;
    let id = format!("{id_prefix}{name}");
    Some(Limit {
        id_hash: super::hash_limit_id(&id),
        id,
        label: format!("{label_prefix}{name}"),
        name,
        algorithm: algorithm?,
        requests: NonZeroU64::new(requests?)?,
        window: window?,
        burst: NonZeroU64::new(burst?)?,
        shadow,
        adaptive,
    })
}

fn adaptive(e: &mut Errors, base_dir: &Path, raw: RawAdaptive) -> Adaptive {
    e.unknown_keys("adaptive", &raw.unknown, &["interval", "load", "anomaly"]);
    let interval = e.duration(
        "adaptive.interval",
        &raw.interval,
        Duration::from_secs(1),
        false,
    );
    Adaptive {
        interval,
        load: load(e, raw.load.unwrap_or_default()),
        anomaly: anomaly(e, base_dir, raw.anomaly.unwrap_or_default()),
    }
}

fn factor(x: f64) -> Option<&'static str> {
    (!(x > 0.0 && x <= 10.0)).then_some("must be greater than 0 and at most 10")
}

fn unit_interval(x: f64) -> Option<&'static str> {
    (!(0.0..=1.0).contains(&x)).then_some("must be between 0 and 1")
}

fn load(e: &mut Errors, raw: RawLoad) -> LoadSettings {
    e.unknown_keys(
        "adaptive.load",
        &raw.unknown,
        &["high", "low", "high_factor", "low_factor", "smoothing"],
    );
    let before = e.len();
    let high = e.number("adaptive.load.high", &raw.high, 0.8, unit_interval);
    let low = e.number("adaptive.load.low", &raw.low, 0.3, unit_interval);
    // Compared only when both were accepted: a refused one stands in as its default.
    if e.len() == before && low >= high {
        e.push(
            "adaptive.load.low",
            format!("must be below adaptive.load.high ({high})"),
        );
    }
    LoadSettings {
        high,
        low,
        high_factor: e.number("adaptive.load.high_factor", &raw.high_factor, 0.5, factor),
        low_factor: e.number("adaptive.load.low_factor", &raw.low_factor, 1.5, factor),
        smoothing: e.number("adaptive.load.smoothing", &raw.smoothing, 0.3, |x| {
            (!(x > 0.0 && x <= 1.0)).then_some("must be greater than 0 and at most 1")
        }),
    }
}

fn anomaly(e: &mut Errors, base_dir: &Path, raw: RawAnomaly) -> AnomalySettings {
    e.unknown_keys(
        "adaptive.anomaly",
        &raw.unknown,
        &[
            "model",
            "threshold",
            "factor",
            "window",
            "min_requests",
            "hold",
            "shadow",
        ],
    );
    let model = raw
        .model
        .as_ref()
        .filter(|v| !v.is_null())
        .and_then(|v| e.string("adaptive.anomaly.model", v))
        .map(|m| base_dir.join(m));
    let min_requests = raw
        .min_requests
        .as_ref()
        .filter(|v| !v.is_null())
        .and_then(|v| e.count("adaptive.anomaly.min_requests", v, 1, MAX_COUNT))
        .unwrap_or(20);
    AnomalySettings {
        model,
        threshold: e.number(
            "adaptive.anomaly.threshold",
            &raw.threshold,
            0.8,
            unit_interval,
        ),
        factor: e.number("adaptive.anomaly.factor", &raw.factor, 0.1, unit_interval),
        window: e.duration(
            "adaptive.anomaly.window",
            &raw.window,
            Duration::from_secs(600),
            false,
        ),
        min_requests: NonZeroU64::new(min_requests).unwrap_or(NonZeroU64::MIN),
        hold: e.duration(
            "adaptive.anomaly.hold",
            &raw.hold,
            Duration::from_secs(300),
            true,
        ),
        shadow: e.boolean("adaptive.anomaly.shadow", &raw.shadow, false),
    }
}
