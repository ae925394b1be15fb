//! The Lua precision warning (requests × window at or beyond 2^53 µs) is logged for a policy
//! reloaded on a Redis store, not only for the one the daemon starts with.

use crate::common::logs::Captured;
use crate::common::redis::RedisServer;
use ratewarden::control::ModelSlot;
use ratewarden::engine::{Engine, SubjectHasher};
use ratewarden::policy::Policy;
use ratewarden::reload::{Reloader, inexact_limits};
use ratewarden::rules::{self, Rules};
use ratewarden::store::{Backend, RedisStore};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const EXACT: &str = r#"
default_tier: free
tiers:
  free:
    limits: [ { name: hourly, algorithm: sliding_log, requests: 100, window: 1h } ]
default_endpoint:
  limits: [ { name: endpoint, algorithm: fixed_window, requests: 50, window: 1m } ]
"#;

#[tokio::test]
async fn a_reloaded_policy_beyond_luas_precision_is_warned_about() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, EXACT).unwrap();
    let policy = Policy::from_yaml(EXACT, dir.path()).unwrap();
    assert_eq!(
        inexact_limits(&Rules::policy_only(policy.clone())).count(),
        0
    );
    let store = RedisStore::connect(&server.url(), "rw", Duration::from_secs(2)).unwrap();
    let engine = Arc::new(Engine::new(
        policy,
        Backend::Redis(store),
        SubjectHasher::from_secret("reload test"),
    ));
    let reloader = Reloader::new(
        path.clone(),
        engine.clone(),
        Arc::new(ModelSlot::new(engine.metrics().clone())),
    );

    // 10^9 requests a day: 10^9 × 8.64 × 10^10 µs is far beyond 2^53.
    let huge = EXACT.replace(
        "requests: 50, window: 1m",
        "requests: 1000000000, window: 1d",
    );
    assert_eq!(
        inexact_limits(&Rules::policy_only(
            Policy::from_yaml(&huge, Path::new(".")).unwrap()
        ))
        .map(|l| l.name.as_str())
        .collect::<Vec<_>>(),
        ["endpoint"]
    );
    std::fs::write(&path, &huge).unwrap();
    let logs = Captured::default();
    {
        let _guard = logs.start();
        reloader.reload("test").unwrap();
    }
    let text = logs.text();
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("beyond what Redis's Lua computes exactly"))
        .collect();
    assert_eq!(warnings.len(), 1, "{text}");
    assert!(warnings[0].contains("WARN"), "{text}");
    assert!(text.contains("policy reloaded"), "{text}");
    assert_eq!(
        engine.policy().default_endpoint.limits[0].requests.get(),
        1_000_000_000
    );
}

/// The warning covers an envoyproxy/ratelimit folder's limits too, and a policy's limits as an
/// idle host lifts them by `low_factor`.
#[test]
fn envoy_limits_and_lifted_limits_are_checked_for_luas_precision() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("envoy")).unwrap();
    // 300 a year: 300 × 3.15 × 10^13 µs is past 2^53.
    std::fs::write(
        dir.path().join("envoy/edge.yaml"),
        "domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: { unit: year, requests_per_unit: 300 }\n",
    )
    .unwrap();
    // A million an hour is 3.6 × 10^15, under 2^53, and past it when lifted threefold.
    let policy = EXACT.replace("requests: 100, window: 1h", "requests: 1000000, window: 1h");
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, format!("{policy}envoy_config: envoy\n")).unwrap();
    let names = |rules: &Rules| -> Vec<String> {
        let mut names: Vec<String> = inexact_limits(rules).map(|l| l.label.to_string()).collect();
        names.sort();
        names
    };
    let loaded = rules::load(&path, None).unwrap();
    assert_eq!(names(&loaded).len(), 1, "{:?}", names(&loaded));
    for load in ["low_factor: 3", "factor_override: 3, low_factor: 1"] {
        let lifted = format!("{policy}envoy_config: envoy\nadaptive: {{ load: {{ {load} }} }}\n");
        std::fs::write(&path, lifted).unwrap();
        assert_eq!(names(&rules::load(&path, None).unwrap()).len(), 2, "{load}");
    }
    // Never scaled, so never lifted: exempt on the limit, or on its tier.
    for exempt in [
        policy.replace("window: 1h }", "window: 1h, adaptive: false }"),
        policy.replace("  free:\n", "  free:\n    adaptive: false\n"),
    ] {
        let lifted =
            format!("{exempt}envoy_config: envoy\nadaptive: {{ load: {{ low_factor: 3 }} }}\n");
        std::fs::write(&path, lifted).unwrap();
        assert_eq!(
            names(&rules::load(&path, None).unwrap()).len(),
            1,
            "{exempt}"
        );
    }
}
