//! The binary: `ratewarden check-policy FILE` prints every error prefixed with the file and
//! exits 1, or prints a summary and exits 0.

use crate::expected::MANY_ERRORS;
use crate::{bad_fixture, example_path, fixtures};
use std::path::Path;
use std::process::Command;

fn check_policy(path: &Path) -> (i32, Vec<String>) {
    let out = Command::new(env!("CARGO_BIN_EXE_ratewarden"))
        .arg("check-policy")
        .arg(path)
        .output()
        .expect("ratewarden runs");
    let stdout = String::from_utf8(out.stdout).expect("utf-8 stdout");
    let code = out.status.code().expect("exited, not killed");
    (code, stdout.lines().map(str::to_owned).collect())
}

#[test]
fn a_reader_that_leaves_early_ends_the_output_without_a_panic() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratewarden"))
        .arg("check-policy")
        .arg(bad_fixture("many_errors"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ratewarden runs");
    // What `| head -0` does: the pipe's reading end closes before anything is read.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("ratewarden ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_ne!(out.status.code(), Some(101), "{stderr}");
}

fn prefixed(path: &Path, lines: &[&str]) -> Vec<String> {
    lines
        .iter()
        .map(|l| format!("{}: {l}", path.display()))
        .collect()
}

#[test]
fn binary_accepts_the_shipped_policy() {
    let path = example_path();
    let (code, stdout) = check_policy(&path);
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        [format!(
            "{}: ok (3 tiers, 4 endpoint rules)",
            path.display()
        )]
    );
}

#[test]
fn binary_accepts_the_valid_fixtures() {
    for (name, lines) in [
        ("minimal", &["ok (1 tier, 0 endpoint rules)"][..]),
        ("prefix_endpoints", &["ok (1 tier, 4 endpoint rules)"]),
        (
            "buckets_faster_than_whole_microseconds",
            &[
                "ok (1 tier, 0 endpoint rules)",
                "warning: tier:free/fast: 3000000 per 1s is a token every 0.333 µs, and gcra \
                 counts whole microseconds: every 1 µs, 1000000 a second instead of 3000000 \
                 (sliding_window and fixed_window count exactly)",
                "warning: tier:free/odd: 70000 per 1s is a token every 14.286 µs, and \
                 token_bucket counts whole microseconds: every 15 µs, 66667 a second instead of \
                 70000 (sliding_window and fixed_window count exactly)",
            ],
        ),
        (
            "range_edges",
            &[
                "ok (1 tier, 0 endpoint rules)",
                "warning: adaptive.load.high_factor is 10, above 1: limits grow under high load",
            ],
        ),
    ] {
        let path = fixtures().join("valid").join(format!("{name}.yaml"));
        let (code, stdout) = check_policy(&path);
        assert_eq!((code, stdout), (0, prefixed(&path, lines)), "{name}");
    }
}

#[test]
fn binary_refuses_zero_requests_with_the_spec_message() {
    let path = bad_fixture("zero_requests");
    let (code, stdout) = check_policy(&path);
    assert_eq!(code, 1);
    assert_eq!(
        stdout,
        prefixed(
            &path,
            &["tiers.free.limits[1].requests: must be at least 1"]
        )
    );
}

#[test]
fn binary_reports_every_error_of_many_errors_in_order() {
    let path = bad_fixture("many_errors");
    let (code, stdout) = check_policy(&path);
    assert_eq!(code, 1);
    assert_eq!(stdout, prefixed(&path, MANY_ERRORS));
}

#[test]
fn binary_refuses_a_yaml_syntax_error() {
    let path = bad_fixture("yaml_syntax_error");
    let (code, stdout) = check_policy(&path);
    assert_eq!(code, 1);
    assert_eq!(
        stdout,
        prefixed(
            &path,
            &[
                "did not find expected ',' or '}' at line 7 column 1, while parsing a flow mapping at line 6 column 9"
            ]
        )
    );
}

#[test]
fn binary_refuses_a_missing_file() {
    let path = fixtures().join("does_not_exist.yaml");
    let (code, stdout) = check_policy(&path);
    assert_eq!(code, 1);
    assert_eq!(stdout.len(), 1, "{stdout:?}");
    let expected = format!("{0}: cannot read {0}: ", path.display());
    assert!(stdout[0].starts_with(&expected), "{stdout:?}");
}

#[test]
fn binary_warns_of_a_model_file_changed_after_training() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = crate::manifest_dir().join("models/abuse.json");
    let mut model: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(shipped).unwrap()).unwrap();
    model["preprocessing"]["high"][8] = serde_json::json!(0.8);
    std::fs::write(dir.path().join("abuse.json"), model.to_string()).unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "default_tier: free\n\
         tiers: { free: { limits: [ { name: h, algorithm: gcra, requests: 5, window: 1m } ] } }\n\
         adaptive: { anomaly: { model: abuse.json } }\n",
    )
    .unwrap();
    let (code, stdout) = check_policy(&policy);
    let warning = "warning: adaptive.anomaly.model: the model file was changed after training: it \
                   does not score as the model logistic-9426266a that it is named after; retrain \
                   it, or give it a version of your own";
    assert_eq!(
        (code, stdout),
        (
            0,
            prefixed(&policy, &["ok (1 tier, 0 endpoint rules)", warning])
        )
    );
}
