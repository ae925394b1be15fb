//! Compiling the tiers, the endpoint rules and the limits they hold.
//!
//! A limit's id and label are derived here from where it is defined (`t:<tier>:`,
//! `e:<path>:`, `d:`), so the same limit name in two places never shares a store key or a
//! metric label.

use super::MAX_COUNT;
use super::load_source::{RawSource, load_source};
use crate::limit::Algorithm;
use crate::limit::Limit;
use crate::policy::raw::{RawEndpoint, RawLimit, RawTier};
use crate::policy::{EndpointRule, KeyScope, PathPattern, Tier, endpoint_path};
use crate::yaml::fields::{Errors, join};
use serde_yaml_ng::Value;
use std::collections::HashSet;
use std::num::NonZeroU64;
use std::time::Duration;

/// The `rule` label of a decision no enforced limit applied to.
const NO_LIMIT: &str = "none";

const LIMIT_KEYS: &[&str] = &[
    "name",
    "algorithm",
    "requests",
    "window",
    "burst",
    "shadow",
    "adaptive",
];

/// The longest tier or limit name: names are repeated in every store key, response header and
/// metric series of the limit, so a pasted paragraph must not become one.
const MAX_NAME_CHARS: usize = 64;

/// Tier and limit names become parts of store keys and header values: letters, digits, `_`,
/// `-` and `.` only, so no two limits can ever share a key (`:` and `#` separate key parts).
pub(super) fn plain_name(e: &mut Errors, path: &str, name: &str) -> bool {
    let plain = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !plain {
        e.push(
            path,
            format!("\"{name}\" may contain only ASCII letters, digits, '_', '-' and '.'"),
        );
        return false;
    }
    if name.len() > MAX_NAME_CHARS {
        e.push(
            path,
            format!(
                "is {} characters long; a name has at most {MAX_NAME_CHARS}",
                name.len()
            ),
        );
        return false;
    }
    true
}

pub(super) fn compile_tier(e: &mut Errors, name: &str, raw: &RawTier) -> Tier {
    let path = format!("tiers.{name}");
    if name.is_empty() {
        e.push("tiers", "a tier's name must not be empty");
    } else {
        plain_name(e, &path, name);
    }
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

pub(super) fn compile_endpoint(
    e: &mut Errors,
    path: &str,
    raw: &RawEndpoint,
    interval: Duration,
) -> Option<EndpointRule> {
    e.unknown_keys(
        path,
        &raw.unknown,
        &["path", "key", "adaptive", "load", "limits"],
    );
    let pattern = path_pattern(e, path, raw);
    let key = key_scope(e, path, raw);
    let adaptive = e.boolean(&join(path, "adaptive"), &raw.adaptive, true);
    let load_source = raw.load.as_ref().and_then(|load| {
        let load_path = join(path, "load");
        e.unknown_keys(
            &load_path,
            &load.unknown,
            &["source", "upstream", "prometheus"],
        );
        e.required(&join(&load_path, "source"), &load.source)?;
        let source = RawSource {
            path: &load_path,
            source: &load.source,
            upstream: load.upstream.as_ref(),
            prometheus: load.prometheus.as_ref(),
        };
        Some(load_source(e, source, interval))
    });
    if raw.load.is_some() && !adaptive {
        // Its limits are exempt from load scaling: the source could never apply.
        e.push(
            &join(path, "load"),
            "has no effect with adaptive: false (the rule's limits are not scaled by load)",
        );
    }
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
        load_source,
        limits,
        path_in_file: path.to_owned(),
    })
}

/// The rule's `path`: exact, or a prefix when it ends in `*` (and nowhere else).
fn path_pattern(e: &mut Errors, path: &str, raw: &RawEndpoint) -> Option<PathPattern> {
    let pattern_path = join(path, "path");
    e.required(&pattern_path, &raw.path)
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
            } else if body.contains(['?', '#']) {
                e.push(
                    &pattern_path,
                    format!(
                        "\"{p}\" can never match: a request's query and fragment are dropped before matching"
                    ),
                );
                None
            } else if endpoint_path::has_dot_dot_segment(body, prefix) {
                e.push(
                    &pattern_path,
                    format!(
                        "\"{p}\" can never match: a request path with a `..` segment (`..;x` and `..` \
                         set off by `\\` too) is refused"
                    ),
                );
                None
            } else if let Some(normal) = unmatchable(body, prefix) {
                e.push(
                    &pattern_path,
                    format!(
                        "\"{p}\" can never match: request paths are normalised first (write \"{normal}\")"
                    ),
                );
                None
            } else if prefix {
                Some(PathPattern::Prefix(body.to_owned()))
            } else {
                Some(PathPattern::Exact(body.to_owned()))
            }
        })
}

/// The path to write instead, when no normalised request path could match this rule's
/// (`/api//export`, `/%61pi/*`): merged slashes, no dot-segments, unreserved characters decoded.
fn unmatchable(body: &str, prefix: bool) -> Option<String> {
    let fine = match prefix {
        true => endpoint_path::is_normal_prefix(body),
        false => endpoint_path::normalise(body) == body,
    };
    (!fine).then(|| match prefix {
        true => format!("{}*", endpoint_path::normal_prefix(body)),
        false => endpoint_path::normalise(body).into_owned(),
    })
}

/// The rule's `key`: whose counter its limits keep (the user's by default).
fn key_scope(e: &mut Errors, path: &str, raw: &RawEndpoint) -> KeyScope {
    let key_path = join(path, "key");
    match raw.key.as_ref().filter(|v| !v.is_null()) {
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
    }
}

pub(super) fn limits(
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
        .and_then(|v| e.string(&at("name"), v))
        .filter(|n| plain_name(e, &at("name"), n))
        .filter(|n| {
            let reserved = n == NO_LIMIT;
            if reserved {
                e.push(
                    &at("name"),
                    "\"none\" is reserved: metrics label decisions no limit applied to rule=\"none\"",
                );
            }
            !reserved
        });
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
        id_hash: crate::limit::hash_limit_id(&id),
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
