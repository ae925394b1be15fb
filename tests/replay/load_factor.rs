//! The load factor in a replay: a log has no CPU figures, so limits are as written (factor 1)
//! unless the policy pins the factor, and only then are requests denied for `load`.

use super::harness::replay_report;

/// `load` denials appear in a replay only when the policy pins the load factor.
#[test]
fn load_denials_appear_only_under_a_pinned_load_factor() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("steady.jsonl");
    // One user, 8 requests in a minute on a rule of 10 a minute.
    let lines: String = (0..8)
        .map(|i| {
            format!(
                "{{\"ts\": {}, \"user\": \"u1\", \"endpoint\": \"/api/export\"}}\n",
                1_795_334_400 + i
            )
        })
        .collect();
    std::fs::write(&log, lines).unwrap();
    let base = r#"
default_tier: free
tiers:
  free:
    limits: [ { name: hourly, algorithm: fixed_window, requests: 1000, window: 1h } ]
endpoints:
  - path: /api/export
    limits: [ { name: export, algorithm: fixed_window, requests: 10, window: 1m } ]
default_endpoint:
  limits: [ { name: endpoint, algorithm: fixed_window, requests: 100, window: 1m } ]
"#;
    let run_with = |policy_text: &str| {
        let policy = dir.path().join("policy.yaml");
        std::fs::write(&policy, policy_text).unwrap();
        replay_report(dir.path(), &policy, &log, &[])
    };
    let (report, stdout) = run_with(base);
    assert_eq!(report["load_factor"], 1.0);
    assert_eq!(report["summary"]["denied"], 0, "{report:#}");
    assert!(
        stdout.contains("load factor 1 (a log has no CPU"),
        "{stdout}"
    );

    let pinned = format!("{base}adaptive:\n  load:\n    factor_override: 0.5\n");
    let (report, stdout) = run_with(&pinned);
    assert_eq!(report["load_factor"], 0.5);
    // export: 10 → 5 a minute; 3 of the 8 denied, for load.
    assert_eq!(report["summary"]["denied"], 3, "{report:#}");
    assert_eq!(
        report["summary"]["denied_by_reason"]["load"], 3,
        "{report:#}"
    );
    assert!(
        stdout.contains("load factor 0.5 (adaptive.load.factor_override)"),
        "{stdout}"
    );
}
