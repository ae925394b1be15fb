//! envoyproxy/ratelimit configuration folders: every error with its file and path, through
//! `ratewarden check-policy DIR` and through a policy's `envoy_config` (fixtures in
//! `tests/fixtures/envoy/bad`, one file per failure, named by it).

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/envoy")
}

/// Every error of the bad folder, in file order.
const BAD: [&str; 10] = [
    "duplicate_descriptor.yaml: descriptors[1]: key \"path\" with value \"/login\" is already defined at descriptors[0]",
    "missing_key.yaml: descriptors[0].key: is required",
    "misspelt_key.yaml: descriptors[0].rate_limit.requests_per_units: unknown key (expected one of unit, requests_per_unit, unlimited, name, replaces, algorithm, adaptive)",
    "misspelt_key.yaml: descriptors[0].rate_limit.requests_per_unit: is required",
    "no_domain.yaml: domain: is required",
    "same_domain_b.yaml: domain: domain \"shared\" is already defined in same_domain_a.yaml",
    "unknown_algorithm.yaml: descriptors[0].rate_limit.algorithm: unknown algorithm \"leaky_bucket\" (expected one of sliding_log, sliding_window, fixed_window, token_bucket, gcra)",
    "unknown_unit.yaml: descriptors[2].descriptors[0].rate_limit.unit: unknown unit \"fortnight\"",
    "unlimited_with_unit.yaml: descriptors[0].rate_limit.unit: must not be set on an unlimited rate limit",
    "yaml_syntax_error.yaml: did not find expected '-' indicator at line 4 column 4, while parsing a block collection at line 3 column 3",
];

fn check_policy(path: &Path) -> (i32, Vec<String>) {
    let out = Command::new(env!("CARGO_BIN_EXE_ratewarden"))
        .arg("check-policy")
        .arg(path)
        .output()
        .expect("ratewarden runs");
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    (
        out.status.code().expect("exited"),
        stdout.lines().map(str::to_owned).collect(),
    )
}

#[test]
fn every_error_of_every_file_is_reported_with_its_path() {
    let errors = ratewarden::rules::load_envoy_folder(&fixtures().join("bad")).unwrap_err();
    assert_eq!(errors.lines(), BAD);
}

#[test]
fn check_policy_checks_a_folder() {
    let bad = fixtures().join("bad");
    let (code, lines) = check_policy(&bad);
    assert_eq!(code, 1);
    let expected: Vec<String> = BAD
        .iter()
        .map(|l| format!("{}: {l}", bad.display()))
        .collect();
    assert_eq!(lines, expected);
    let valid = fixtures().join("valid");
    let (code, lines) = check_policy(&valid);
    assert_eq!(code, 0);
    assert_eq!(
        lines,
        [format!(
            "{}: ok (5 domains, 24 rate limits)",
            valid.display()
        )]
    );
}

#[test]
fn a_policy_reports_its_envoy_config_errors_under_envoy_config() {
    let policy = fixtures().join("policy_with_bad_envoy.yaml");
    let (code, lines) = check_policy(&policy);
    assert_eq!(code, 1);
    let expected: Vec<String> = BAD
        .iter()
        .map(|l| format!("{}: envoy_config: {l}", policy.display()))
        .collect();
    assert_eq!(lines, expected);
}

#[test]
fn a_missing_or_empty_folder_is_an_error() {
    let empty = tempfile::tempdir().unwrap();
    let errors = ratewarden::rules::load_envoy_folder(empty.path()).unwrap_err();
    assert_eq!(
        errors.lines(),
        [format!(
            "{}: holds no .yaml file (one per rate limit domain)",
            empty.path().display()
        )]
    );
    // Under a heading that names the folder (check-policy's, serve's), it is not named again.
    assert_eq!(
        errors.lines_under(empty.path()),
        ["holds no .yaml file (one per rate limit domain)"]
    );
    let (code, lines) = check_policy(empty.path());
    assert_eq!(code, 1);
    assert_eq!(
        lines,
        [format!(
            "{}: holds no .yaml file (one per rate limit domain)",
            empty.path().display()
        )]
    );
    let text = "default_tier: free\ntiers: {free: {limits: []}}\nenvoy_config: nowhere\n";
    std::fs::write(empty.path().join("policy.yaml"), text).unwrap();
    let errors = ratewarden::rules::load(&empty.path().join("policy.yaml"), None).unwrap_err();
    assert_eq!(errors.0.len(), 1);
    assert_eq!(errors.0[0].path, "envoy_config");
    assert!(
        errors.0[0]
            .message
            .contains("nowhere: cannot read the folder:"),
        "{}",
        errors.0[0].message
    );
}
