//! Compiling `source` with its `upstream` or `prometheus` settings (under `adaptive.load`, and
//! under an endpoint rule's own `load`).
//!
//! A source is refused without the settings it needs, and settings are refused for a source
//! that is not chosen: a `prometheus` block the daemon would silently ignore is a mistake.

use super::MAX_COUNT;
use crate::policy::raw::{Leaf, RawPrometheus, RawUpstream};
use crate::policy::{LOAD_SOURCE_NAMES, LoadSource, PrometheusQuery, UpstreamTargets};
use crate::yaml::fields::{Errors, join};
use serde_yaml_ng::Value;
use std::time::Duration;

/// The settings one `source` is compiled from; `path` is where they sit (`adaptive.load`).
pub(super) struct RawSource<'a> {
    pub path: &'a str,
    pub source: &'a Leaf,
    pub upstream: Option<&'a RawUpstream>,
    pub prometheus: Option<&'a RawPrometheus>,
}

pub(super) fn load_source(e: &mut Errors, raw: RawSource<'_>, interval: Duration) -> LoadSource {
    let path = raw.path;
    let name = match raw.source {
        None | Some(Value::Null) => "cpu",
        Some(Value::String(s)) if LOAD_SOURCE_NAMES.contains(&s.as_str()) => s.as_str(),
        Some(_) => {
            e.push(
                &join(path, "source"),
                format!("must be one of {}", LOAD_SOURCE_NAMES.join(", ")),
            );
            "cpu"
        }
    };
    let unused = |e: &mut Errors, key: &str| {
        e.push(
            &join(path, key),
            format!("applies only when {path}.source is {key} (it is {name})"),
        );
    };
    let upstream = match raw.upstream {
        Some(u) if name == "upstream" => upstream(e, path, u),
        Some(_) => {
            unused(e, "upstream");
            None
        }
        None if name == "upstream" => {
            e.push(
                &join(path, "upstream.latency_target"),
                format!("is required when {path}.source is upstream"),
            );
            None
        }
        None => None,
    };
    let prometheus = match raw.prometheus {
        Some(p) if name == "prometheus" => prometheus(e, &join(path, "prometheus"), p, interval),
        Some(_) => {
            unused(e, "prometheus");
            None
        }
        None if name == "prometheus" => {
            e.push(
                &join(path, "prometheus.url"),
                format!("is required when {path}.source is prometheus"),
            );
            None
        }
        None => None,
    };
    match (upstream, prometheus) {
        (Some(u), _) => LoadSource::Upstream(u),
        (_, Some(p)) => LoadSource::Prometheus(p),
        // A refused source has pushed its error: the policy does not compile.
        _ => LoadSource::Cpu,
    }
}

fn upstream(e: &mut Errors, parent: &str, raw: &RawUpstream) -> Option<UpstreamTargets> {
    let path = &join(parent, "upstream");
    e.unknown_keys(
        path,
        &raw.unknown,
        &[
            "percentile",
            "latency_target",
            "error_target",
            "min_reports",
        ],
    );
    let share = |x: f64| (!(x > 0.0 && x <= 1.0)).then_some("must be greater than 0 and at most 1");
    let target_path = join(path, "latency_target");
    let latency_target = match &raw.latency_target {
        None | Some(Value::Null) => {
            e.push(
                &target_path,
                format!("is required when {parent}.source is upstream"),
            );
            None
        }
        leaf => Some(e.duration(&target_path, leaf, Duration::from_secs(1), false)),
    };
    let min_reports = match &raw.min_reports {
        None | Some(Value::Null) => 10,
        Some(v) => e
            .count(&join(path, "min_reports"), v, 1, MAX_COUNT)
            .unwrap_or(10),
    };
    // Every key is checked before a missing one ends the block: errors are collected.
    let percentile = e.number(&join(path, "percentile"), &raw.percentile, 0.9, share);
    let error_target = e.number(&join(path, "error_target"), &raw.error_target, 0.05, share);
    Some(UpstreamTargets {
        percentile,
        latency_target: latency_target?,
        error_target,
        min_reports,
    })
}

fn prometheus(
    e: &mut Errors,
    path: &str,
    raw: &RawPrometheus,
    interval: Duration,
) -> Option<PrometheusQuery> {
    e.unknown_keys(
        path,
        &raw.unknown,
        &["url", "query", "timeout", "keep_last"],
    );
    let url_path = join(path, "url");
    let url = e
        .required(&url_path, &raw.url)
        .and_then(|v| e.string(&url_path, v))
        .and_then(|url| match prometheus_url(&url) {
            Ok(url) => Some(url),
            Err(problem) => {
                e.push(&url_path, problem);
                None
            }
        });
    let query_path = join(path, "query");
    let query = e
        .required(&query_path, &raw.query)
        .and_then(|v| e.string(&query_path, v));
    let timeout_path = join(path, "timeout");
    let default_timeout = Duration::from_millis(500).min(interval / 2);
    let timeout = e.duration(&timeout_path, &raw.timeout, default_timeout, false);
    if timeout >= interval {
        e.push(
            &timeout_path,
            format!("must be shorter than adaptive.interval ({interval:?})"),
        );
    }
    let keep_last = match &raw.keep_last {
        None | Some(Value::Null) => 5,
        Some(v) => e.count(&join(path, "keep_last"), v, 0, 10_000).unwrap_or(5),
    };
    Some(PrometheusQuery {
        url: url?,
        query: query?,
        timeout,
        keep_last: u32::try_from(keep_last).unwrap_or(5),
    })
}

/// `adaptive.interval` as written, for rules compiled before the `adaptive` section (its
/// errors are reported there).
pub(super) fn written_interval(raw: &Leaf) -> Duration {
    match raw {
        Some(Value::String(text)) => crate::yaml::parse_duration(text)
            .ok()
            .filter(|d| !d.is_zero())
            .unwrap_or(Duration::from_secs(1)),
        _ => Duration::from_secs(1),
    }
}

/// `http://host[:port][/prefix]`, without a trailing slash (the API path is appended).
fn prometheus_url(url: &str) -> Result<String, String> {
    let refused = || {
        format!(
            "{url:?} is not an http:// URL with a host (such as http://prometheus:9090; \
             https is not supported: reach a TLS Prometheus through a local proxy)"
        )
    };
    let rest = url.strip_prefix("http://").ok_or_else(refused)?;
    let (authority, prefix) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.is_empty() || url.contains(|c: char| c.is_whitespace() || c.is_control()) {
        return Err(refused());
    }
    if url.contains(['?', '#', '@']) {
        return Err(format!(
            "{url:?}: a Prometheus URL has no user, query or fragment (only \
             http://host[:port][/prefix]; the query goes in adaptive.load.prometheus.query)"
        ));
    }
    // A port is 1 to 65535 (a bracketed IPv6 host holds colons of its own).
    let port = authority
        .rsplit_once(':')
        .filter(|(host, _)| !host.starts_with('[') || host.ends_with(']'))
        .map(|(_, port)| port);
    if let Some(port) = port
        && !matches!(port.parse::<u16>(), Ok(1..))
    {
        return Err(format!(
            "{url:?}: the port must be a number from 1 to 65535 (it is {port:?})"
        ));
    }
    Ok(format!(
        "http://{authority}{}",
        prefix.trim_end_matches('/')
    ))
}
