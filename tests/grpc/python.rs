//! Wire compatibility with a client that shares none of our generated code: Python grpcio,
//! discovering the service by server reflection (tests/grpc/wire_client.py), against the real
//! binary. scripts/python-grpc-env makes its virtualenv once.

use crate::daemon::start_daemon;
use crate::harness::fixtures;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

fn python() -> String {
    if let Ok(python) = std::env::var("RATEWARDEN_TEST_PYTHON") {
        return python;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(root.join("scripts/python-grpc-env"))
        .output()
        .expect("scripts/python-grpc-env runs");
    assert!(
        out.status.success(),
        "cannot make the Python grpcio virtualenv:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn python_grpcio_with_reflection_gets_the_same_answers() {
    let (daemon, addr, _dir) = start_daemon(&fixtures().join("valid"));
    let entry = |k: &str, v: &str| json!({"key": k, "value": v});
    let tight = json!({"domain": "edge", "descriptors": [{"entries": [entry("tight", "py")]}]});
    let requests = json!([
        tight,
        tight,
        {"domain": "edge", "hits_addend": 5,
         "descriptors": [{"entries": [entry("remote_address", "203.0.113.99")]},
                         {"entries": [entry("internal", "x")]}]},
        {"domain": "web", "descriptors": [{"entries": [entry("user", "py"), entry("path", "/api/search")]}]},
        {"domain": "", "descriptors": [{"entries": [entry("user", "py")]}]},
    ]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(python())
        .arg(root.join("tests/grpc/wire_client.py"))
        .arg(addr.to_string())
        .arg(requests.to_string())
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "wire_client.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let services: Vec<&str> = got["services"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        services.contains(&"envoy.service.ratelimit.v3.RateLimitService"),
        "{services:?}"
    );
    assert!(services.contains(&"grpc.health.v1.Health"), "{services:?}");
    assert_eq!(got["health"], "SERVING");
    let r = &got["responses"];
    assert_eq!(r[0]["overall_code"], "OK");
    assert_eq!(
        r[0]["statuses"][0]["current_limit"],
        json!({"name": "tight", "requests_per_unit": 1, "unit": "HOUR"})
    );
    assert_eq!(r[1]["overall_code"], "OVER_LIMIT");
    assert_eq!(r[1]["statuses"][0]["code"], "OVER_LIMIT");
    let headers: Vec<(String, String)> = r[1]["response_headers_to_add"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["key"].as_str().unwrap().to_owned(),
                h["value"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "ratelimit-policy" && v == "\"tight\";q=1;w=3600"),
        "{headers:?}"
    );
    assert!(
        headers.iter().any(|(k, _)| k == "retry-after"),
        "{headers:?}"
    );
    // hits_addend 5 on a limit of 60; an unlimited descriptor beside it.
    assert_eq!(r[2]["overall_code"], "OK");
    assert_eq!(r[2]["statuses"][0]["limit_remaining"], 55);
    assert_eq!(r[2]["statuses"][1]["limit_remaining"], u32::MAX);
    assert!(
        r[2]["statuses"][0]["duration_until_reset"]
            .as_str()
            .unwrap()
            .ends_with('s')
    );
    // Native mode.
    assert_eq!(r[3]["statuses"][0]["current_limit"]["name"], "search");
    assert_eq!(
        r[4],
        json!({"error": "INVALID_ARGUMENT", "details": "domain must not be empty"})
    );
    drop(daemon);
}
