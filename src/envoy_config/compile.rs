//! Compiling one envoyproxy/ratelimit file into a [`Domain`], collecting every error with its
//! path (`descriptors[2].descriptors[0].rate_limit.unit: unknown unit "fortnight"`).
//!
//! It refuses what envoyproxy/ratelimit refuses (unknown keys, a missing key, an unknown unit,
//! two descriptors with the same key and value at one level, a unit on an unlimited limit).
//! `requests_per_unit: 0` blocks (in shadow mode it passes).
//!
//! A limit without a `name` is shown (and labelled in metrics) by its descriptor path, in which
//! the value of a `remote_address` entry, and any value that is an IP address, is written `_`:
//! metrics never carry addresses.

use super::raw::{
    DESCRIPTOR_KEYS, FILE_KEYS, RATE_LIMIT_KEYS, RawDescriptor, RawFile, RawRateLimit,
};
use super::{BlockRule, Domain, KeyNodes, Level, LimitRule, Node, Rule, Unit};
use crate::limit::Algorithm;
use crate::limit::Limit;
use crate::yaml::fields::{Errors, join};
use crate::yaml::{PolicyErrors, Text};
use serde_yaml_ng::Value;
use std::num::NonZeroU64;
use std::sync::Arc;

/// The most requests per unit (as in policies: keeps every product far inside 64 bits).
const MAX_REQUESTS: u64 = 1_000_000_000;

/// Compiles one file's text; `file` names it in limit labels.
pub(super) fn compile(text: &str, file: &str) -> Result<Domain, PolicyErrors> {
    let text = crate::files::without_byte_order_mark(text);
    let raw: RawFile = if text.trim().is_empty() {
        RawFile::default()
    } else {
        crate::yaml::parse::<Value>(text)?;
        crate::yaml::parse(text)?
    };
    let mut e = Errors::default();
    e.unknown_keys("", &raw.unknown, FILE_KEYS);
    let name = e
        .required("domain", &raw.domain)
        .and_then(|v| e.string("domain", v));
    let domain_name = name.clone().unwrap_or_default();
    let root = level(
        &mut e,
        &domain_name,
        "descriptors",
        ("", ""),
        raw.descriptors.as_deref().unwrap_or_default(),
    );
    e.finish(())?;
    Ok(Domain {
        name: domain_name.into(),
        file: file.to_owned(),
        root,
    })
}

/// The descriptors at one depth; `at` is their path in the file, `tree` their path in the
/// descriptor tree (`api_key`) twice: as the store's id is made of it, and as it is shown.
fn level(
    e: &mut Errors,
    domain: &str,
    at: &str,
    tree: (&str, &str),
    raws: &[RawDescriptor],
) -> Level {
    let mut level = Level::default();
    // Where each (key, value) was first defined, to name it in a duplicate's error.
    let mut first_at: std::collections::HashMap<(String, Option<String>), String> =
        Default::default();
    for (i, raw) in raws.iter().enumerate() {
        let path = format!("{at}[{i}]");
        let Some((key, value, node)) = descriptor(e, domain, &path, tree, raw) else {
            continue;
        };
        if let Some(earlier) = first_at.get(&(key.clone(), value.clone())) {
            let what = match &value {
                Some(v) => format!("key \"{key}\" with value \"{v}\""),
                None => format!("key \"{key}\" without a value"),
            };
            e.push(&path, format!("{what} is already defined at {earlier}"));
            continue;
        }
        first_at.insert((key.clone(), value.clone()), path);
        let nodes: &mut KeyNodes = level.by_key.entry(key).or_default();
        match value {
            None => nodes.any = Some(Box::new(node)),
            Some(v) => match v.strip_suffix('*') {
                Some(prefix) => nodes.prefixes.push((prefix.to_owned(), node)),
                None => {
                    nodes.exact.insert(v, node);
                }
            },
        }
    }
    level
}

fn descriptor(
    e: &mut Errors,
    domain: &str,
    path: &str,
    (tree, shown_tree): (&str, &str),
    raw: &RawDescriptor,
) -> Option<(String, Option<String>, Node)> {
    e.unknown_keys(path, &raw.unknown, DESCRIPTOR_KEYS);
    let key_path = join(path, "key");
    let key = e
        .required(&key_path, &raw.key)
        .and_then(|v| scalar(e, &key_path, v));
    let value = match &raw.value {
        None => None,
        Some(Text(v)) if !v.is_empty() => Some(v.clone()),
        Some(Text(_)) => {
            e.push(&join(path, "value"), "must not be empty");
            return None;
        }
    };
    let shadow = e.boolean(&join(path, "shadow_mode"), &raw.shadow_mode, false);
    // Metrics only in envoyproxy/ratelimit; ratewarden never labels metrics with values.
    e.boolean(&join(path, "detailed_metric"), &raw.detailed_metric, false);
    e.boolean(&join(path, "value_to_metric"), &raw.value_to_metric, false);
    let share_threshold = e.boolean(&join(path, "share_threshold"), &raw.share_threshold, false);
    if share_threshold && !value.as_deref().is_some_and(|v| v.ends_with('*')) {
        e.push(
            &join(path, "share_threshold"),
            "applies only to a value ending in * (a prefix)",
        );
    }
    let key = key?;
    let step = match &value {
        Some(v) => format!("{key}_{v}"),
        None => key.clone(),
    };
    let shown_step = match &value {
        Some(v) if key == "remote_address" || v.parse::<std::net::IpAddr>().is_ok() => {
            format!("{key}_")
        }
        _ => step.clone(),
    };
    let extend = |tree: &str, step: String| {
        if tree.is_empty() {
            step
        } else {
            format!("{tree}.{step}")
        }
    };
    let tree_path = extend(tree, step);
    let shown_path = extend(shown_tree, shown_step);
    let rule = raw.rate_limit.as_ref().and_then(|r| {
        let paths = (tree_path.as_str(), shown_path.as_str());
        rule(e, domain, &join(path, "rate_limit"), paths, shadow, r)
    });
    let children = level(
        e,
        domain,
        &join(path, "descriptors"),
        (&tree_path, &shown_path),
        raw.descriptors.as_deref().unwrap_or_default(),
    );
    let node = Node {
        path: tree_path,
        rule,
        share_threshold,
        children,
    };
    Some((key, value, node))
}

fn rule(
    e: &mut Errors,
    domain: &str,
    path: &str,
    (tree_path, shown_path): (&str, &str),
    shadow: bool,
    raw: &RawRateLimit,
) -> Option<Rule> {
    e.unknown_keys(path, &raw.unknown, RATE_LIMIT_KEYS);
    let at = |key: &str| join(path, key);
    let unlimited = e.boolean(&at("unlimited"), &raw.unlimited, false);
    let name = match raw.name.as_ref().filter(|v| !v.is_null()) {
        None => None,
        Some(v) => scalar(e, &at("name"), v),
    };
    let replaces = replaces(e, &at("replaces"), raw);
    if unlimited {
        refuse_limit_keys(e, path, raw);
        return Some(Rule::Unlimited);
    }
    let unit = unit(e, &at("unit"), &raw.unit);
    let requests = e
        .required(&at("requests_per_unit"), &raw.requests_per_unit)
        .and_then(|v| e.count(&at("requests_per_unit"), v, 0, MAX_REQUESTS));
    let algorithm = algorithm(e, &at("algorithm"), &raw.algorithm);
    let adaptive = e.boolean(&at("adaptive"), &raw.adaptive, true);
    let (unit, algorithm) = (unit?, algorithm?);
    let shown = name.clone().unwrap_or_else(|| shown_path.to_owned());
    let Some(requests) = NonZeroU64::new(requests?) else {
        return Some(Rule::Blocked(BlockRule {
            shown,
            unit,
            name,
            replaces,
            shadow,
        }));
    };
    let id = limit_id(domain, tree_path, algorithm);
    let limit = Limit {
        id_hash: crate::limit::hash_limit_id(&id),
        id,
        label: format!("envoy:{domain}/{shown}"),
        name: shown,
        algorithm,
        requests,
        window: unit.window(),
        burst: requests,
        shadow,
        adaptive,
    };
    Some(Rule::Limited(LimitRule {
        limit: Arc::new(limit),
        unit,
        name,
        replaces,
    }))
}

/// The names of the limits `replaces` lists; `at` is its path.
fn replaces(e: &mut Errors, at: &str, raw: &RawRateLimit) -> Vec<String> {
    let mut names = Vec::new();
    for (i, replace) in raw.replaces.iter().flatten().enumerate() {
        let replace_path = format!("{at}[{i}]");
        e.unknown_keys(&replace_path, &replace.unknown, &["name"]);
        let name_path = join(&replace_path, "name");
        if let Some(name) = e
            .required(&name_path, &replace.name)
            .and_then(|v| scalar(e, &name_path, v))
        {
            names.push(name);
        }
    }
    names
}

/// An unlimited rate limit has nothing to count with: any key that would is an error.
fn refuse_limit_keys(e: &mut Errors, path: &str, raw: &RawRateLimit) {
    let present = |leaf: &Option<Value>| leaf.as_ref().is_some_and(|v| !v.is_null());
    for (key, leaf) in [
        ("unit", &raw.unit),
        ("requests_per_unit", &raw.requests_per_unit),
        ("algorithm", &raw.algorithm),
        ("adaptive", &raw.adaptive),
    ] {
        if present(leaf) {
            e.push(
                &join(path, key),
                "must not be set on an unlimited rate limit",
            );
        }
    }
}

/// `unit`, required; `at` is its path.
fn unit(e: &mut Errors, at: &str, raw: &Option<Value>) -> Option<Unit> {
    e.required(at, raw).and_then(|v| match v {
        Value::String(s) => Unit::from_name(s).or_else(|| {
            e.push(at, format!("unknown unit \"{s}\""));
            None
        }),
        _ => {
            e.push(at, "must be a string");
            None
        }
    })
}

/// `algorithm`, a fixed window when absent (as envoyproxy/ratelimit counts); `at` is its path.
fn algorithm(e: &mut Errors, at: &str, raw: &Option<Value>) -> Option<Algorithm> {
    match raw.as_ref().filter(|v| !v.is_null()) {
        None => Some(Algorithm::FixedWindow),
        Some(Value::String(s)) => Algorithm::from_name(s).or_else(|| {
            let known: Vec<_> = Algorithm::ALL.iter().map(|a| a.name()).collect();
            e.push(
                at,
                format!(
                    "unknown algorithm \"{s}\" (expected one of {})",
                    known.join(", ")
                ),
            );
            None
        }),
        Some(_) => {
            e.push(at, "must be a string");
            None
        }
    }
}

/// The limit's id in the store. Config values may be addresses or ids: the store sees a hash
/// of where the limit is.
fn limit_id(domain: &str, tree_path: &str, algorithm: Algorithm) -> String {
    format!(
        "x:{:016x}",
        crate::limit::hash_limit_id(&format!("{domain}\0{tree_path}\0{algorithm}"))
    )
}

/// A key, value or name: envoyproxy/ratelimit reads any YAML scalar as text.
fn scalar(e: &mut Errors, path: &str, value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::String(_) => {
            e.push(path, "must not be empty");
            None
        }
        _ => {
            e.push(path, "must be a string");
            None
        }
    }
}
