//! Policy validation (docs/reference/policy.md): every fixture under `tests/fixtures/policies/` provokes the
//! failure it is named after and nothing else; `check-policy` prints and exits accordingly; the
//! shipped example policy compiles to what docs/reference/policy.md says it means.//!
//! This file has the fixture helpers and the library's errors; `tests/check_policy/` holds the
//! expected errors, the binary's tests and what the shipped policy means.

#[path = "check_policy/binary.rs"]
mod binary;
#[path = "check_policy/expected.rs"]
mod expected;
#[path = "check_policy/shipped.rs"]
mod shipped;

use expected::{BAD, MANY_ERRORS, VALID};
use ratewarden::policy::Policy;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> PathBuf {
    manifest_dir().join("tests/fixtures/policies")
}

fn bad_fixture(name: &str) -> PathBuf {
    fixtures().join(format!("{name}.yaml"))
}

fn valid_fixture(name: &str) -> Policy {
    let path = fixtures().join("valid").join(format!("{name}.yaml"));
    ratewarden::rules::load_policy(&path).unwrap_or_else(|e| panic!("{}:\n{e}", path.display()))
}

fn example_path() -> PathBuf {
    manifest_dir().join("ratewarden.yaml")
}

fn example() -> Policy {
    ratewarden::rules::load_policy(&example_path())
        .unwrap_or_else(|e| panic!("ratewarden.yaml:\n{e}"))
}

fn yaml_names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The library: each fixture's exact errors.

#[test]
fn every_bad_fixture_reports_exactly_its_errors() {
    let mut failures = Vec::new();
    for (name, expected) in BAD {
        let path = bad_fixture(name);
        match ratewarden::rules::load_policy(&path) {
            Ok(_) => failures.push(format!("{name}: compiled, expected {expected:#?}")),
            Err(errors) => {
                if errors.lines() != *expected {
                    failures.push(format!(
                        "{name}:\n  got      {:#?}\n  expected {expected:#?}",
                        errors.lines()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_fixture_file_is_in_a_table_and_every_table_entry_has_a_file() {
    let on_disk = yaml_names(&fixtures());
    let listed: BTreeSet<String> = BAD.iter().map(|(n, _)| (*n).to_owned()).collect();
    assert_eq!(on_disk, listed, "tests/fixtures/policies/*.yaml vs BAD");
    let on_disk = yaml_names(&fixtures().join("valid"));
    let listed: BTreeSet<String> = VALID.iter().map(|n| (*n).to_owned()).collect();
    assert_eq!(
        on_disk, listed,
        "tests/fixtures/policies/valid/*.yaml vs VALID"
    );
}

#[test]
fn single_failure_fixtures_fail_once_and_many_errors_many_times() {
    for (name, expected) in BAD {
        if *name == "many_errors" {
            assert!(expected.len() >= 5, "many_errors has several errors");
        } else {
            assert_eq!(expected.len(), 1, "{name} provokes exactly one failure");
        }
    }
}

#[test]
fn the_spec_example_message_is_produced_verbatim() {
    let errors = ratewarden::rules::load_policy(&bad_fixture("zero_requests")).unwrap_err();
    assert_eq!(errors.0.len(), 1);
    assert_eq!(errors.0[0].path, "tiers.free.limits[1].requests");
    assert_eq!(errors.0[0].message, "must be at least 1");
    assert_eq!(
        errors.to_string(),
        "tiers.free.limits[1].requests: must be at least 1"
    );
}

#[test]
fn syntax_errors_have_no_path_and_type_errors_name_theirs_once() {
    let syntax = ratewarden::rules::load_policy(&bad_fixture("yaml_syntax_error")).unwrap_err();
    assert_eq!(syntax.0[0].path, "");
    let typed = ratewarden::rules::load_policy(&bad_fixture("wrong_type_tiers")).unwrap_err();
    assert_eq!(typed.0[0].path, "tiers");
    assert!(
        !typed.0[0].message.contains("tiers"),
        "{}",
        typed.0[0].message
    );
    assert!(
        !typed.0[0].message.contains("Raw"),
        "no internal type names"
    );
}

#[test]
fn many_errors_names_each_path_in_file_order() {
    let errors = ratewarden::rules::load_policy(&bad_fixture("many_errors")).unwrap_err();
    assert_eq!(errors.lines(), MANY_ERRORS);
    let paths: Vec<&str> = errors.0.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "store.url",
            "store.on_error",
            "tiers.free.limits[0].requests",
            "tiers.free.limits[1].algorithm",
            "tiers.pro.limits[0].window",
            "endpoints[0].path",
            "endpoints[1].key",
            "endpoints[1].limits[0].burst",
            "adaptive.load.upstream.latency_target",
            "adaptive.load.upstream.error_target",
            "adaptive.anomaly.threshold",
        ]
    );
}

#[test]
fn a_refused_range_value_does_not_cause_a_second_error() {
    // high is out of range; low = 0.9 must not also be compared with high's default (0.8).
    let yaml = "default_tier: free
tiers: { free: { limits: [ { name: h, algorithm: sliding_log, requests: 1, window: 1h } ] } }
adaptive: { load: { high: 1.5, low: 0.9 } }
";
    let errors = Policy::from_yaml(yaml, Path::new(".")).unwrap_err();
    assert_eq!(
        errors.lines(),
        ["adaptive.load.high: must be between 0 and 1"]
    );
}

#[test]
fn a_missing_file_is_one_error_without_a_path() {
    let path = fixtures().join("does_not_exist.yaml");
    let errors = ratewarden::rules::load_policy(&path).unwrap_err();
    assert_eq!(errors.0.len(), 1);
    assert_eq!(errors.0[0].path, "");
    assert!(
        errors.0[0]
            .message
            .starts_with(&format!("cannot read {}: ", path.display())),
        "{}",
        errors.0[0].message
    );
}

/// A device, a file that is no text or one far past any policy's size is refused by what it
/// is, at once: `/dev/zero` was read until memory ran out.
#[test]
fn a_policy_file_that_is_no_policy_text_is_named_so() {
    let message = |path: &Path| {
        let errors = ratewarden::rules::load_policy(path).unwrap_err();
        errors.0[0].message.clone()
    };
    let zero = Path::new("/dev/zero");
    assert_eq!(message(zero), "cannot read /dev/zero: not a regular file");
    let dir = tempfile::tempdir().unwrap();
    let latin1 = dir.path().join("latin1.yaml");
    std::fs::write(&latin1, b"default_tier: free\n# caf\xe9\n").unwrap();
    assert_eq!(
        message(&latin1),
        format!(
            "cannot read {}: not UTF-8 text (line 2 holds a byte that is not)",
            latin1.display()
        )
    );
    let huge = dir.path().join("huge.yaml");
    std::fs::write(&huge, vec![b'#'; 2 << 20]).unwrap();
    assert_eq!(
        message(&huge),
        format!(
            "cannot read {}: over 1 MiB: no policy is that long (is it the right file?)",
            huge.display()
        )
    );
}

#[test]
fn valid_fixtures_compile() {
    for name in VALID {
        valid_fixture(name);
    }
}

#[test]
fn a_tls_ca_is_read_from_beside_the_policy_file() {
    let policy = valid_fixture("redis_tls");
    assert!(policy.store.url.is_tls());
    let ca = policy.store.tls_ca.as_ref().expect("store.tls_ca compiled");
    assert_eq!(ca.path(), fixtures().join("valid").join("redis-tls-ca.pem"));
    // Logs and errors show the URL without its password.
    assert_eq!(
        policy.store.url.redacted(),
        "rediss://app:***@redis.example.com:6380/0"
    );
}

#[test]
fn load_sources_take_their_documented_defaults() {
    use ratewarden::policy::{LoadSource, PrometheusQuery, UpstreamTargets};
    use std::time::Duration;
    assert_eq!(
        valid_fixture("minimal").adaptive.load.source,
        LoadSource::Cpu
    );
    assert_eq!(
        valid_fixture("upstream_load").adaptive.load.source,
        LoadSource::Upstream(UpstreamTargets {
            percentile: 0.9,
            latency_target: Duration::from_millis(250),
            error_target: 0.05,
            min_reports: 10,
        })
    );
    assert_eq!(
        valid_fixture("prometheus_load").adaptive.load.source,
        LoadSource::Prometheus(PrometheusQuery {
            url: "http://prometheus.monitoring:9090/prom".to_owned(),
            query: r#"avg(rate(node_cpu_seconds_total{job="search", mode!="idle"}[1m]))"#
                .to_owned(),
            timeout: Duration::from_millis(500),
            keep_last: 5,
        })
    );
}

#[test]
fn load_factors_on_the_wrong_side_of_one_are_accepted_with_a_warning() {
    let mut load = example().adaptive.load;
    assert_eq!(load.inverted_factors(), Vec::<String>::new());
    load.high_factor = 2.0;
    load.low_factor = 0.5;
    assert_eq!(
        load.inverted_factors(),
        [
            "adaptive.load.high_factor is 2, above 1: limits grow under high load",
            "adaptive.load.low_factor is 0.5, below 1: limits shrink on an idle machine",
        ]
    );
}
