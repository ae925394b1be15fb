//! What `replay` refuses before replaying, each with its exact message: an empty, missing or
//! unparsable input, a bad policy, a model it cannot read, a header subject for a combined log,
//! an output in a missing folder or over one of its inputs;
//! and a JSON line without the header its subject comes from is skipped as unparsable.

use super::harness::{example_policy, replay, replay_report};
use super::malformed::GOOD;

#[test]
fn an_empty_file_a_missing_file_a_bad_policy_and_an_unreadable_model_exit_non_zero_with_a_clear_message()
 {
    let dir = tempfile::tempdir().unwrap();
    let policy = example_policy();
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "").unwrap();
    replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            empty.to_str().unwrap(),
        ],
        &[],
    )
    .assert_fails_with(&format!(
        "error: no parsable line in {} (0 lines skipped)",
        empty.display()
    ));

    let missing = dir.path().join("missing.log");
    replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            missing.to_str().unwrap(),
        ],
        &[],
    )
    .assert_fails_with(&format!(
        "error: cannot open {}: No such file or directory (os error 2)\n",
        missing.display()
    ));

    let good = dir.path().join("good.log");
    std::fs::write(&good, format!("{GOOD}\n")).unwrap();
    let bad_policy = dir.path().join("policy.yaml");
    std::fs::write(&bad_policy, "tiers: {}\nfrobnicate: 1\n").unwrap();
    let run = replay(
        &[
            "--policy",
            bad_policy.to_str().unwrap(),
            "--log",
            good.to_str().unwrap(),
        ],
        &[],
    );
    run.assert_fails_with(&format!("error: policy {}:\n", bad_policy.display()));
    run.assert_fails_with("frobnicate");

    // One error (an unreadable file) stays on the heading's line.
    let no_policy = dir.path().join("absent.yaml");
    replay(
        &[
            "--policy",
            no_policy.to_str().unwrap(),
            "--log",
            good.to_str().unwrap(),
        ],
        &[],
    )
    .assert_fails_with(&format!(
        "error: policy {0}: cannot read {0}: No such file or directory (os error 2)\n",
        no_policy.display()
    ));

    // A policy naming a model that cannot be read: no replay without the model it names.
    let no_model = dir.path().join("no-model.yaml");
    let missing_model = dir.path().join("missing-model.json");
    std::fs::write(
        &no_model,
        std::fs::read_to_string(&policy).unwrap().replace(
            "model: models/abuse.json",
            &format!("model: {}", missing_model.display()),
        ),
    )
    .unwrap();
    replay(
        &[
            "--policy",
            no_model.to_str().unwrap(),
            "--log",
            good.to_str().unwrap(),
        ],
        &[],
    )
    .assert_fails_with(&format!(
        "error: adaptive.anomaly.model: cannot read model file {}: No such file or directory (os error 2) (fix the file, or remove the key to replay without anomaly scaling)\n",
        missing_model.display()
    ));

    // An empty file next to a good one is counted, not an error.
    let run = replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            empty.to_str().unwrap(),
            "--log",
            good.to_str().unwrap(),
        ],
        &[],
    );
    run.assert_ok();
    assert!(
        run.stdout
            .contains(&format!("input   {} (empty): 0 lines", empty.display())),
        "{}",
        run.stdout
    );

    // A combined log has no X-Api-Key header to take the subject from.
    replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            good.to_str().unwrap(),
            "--subject",
            "header:X-Api-Key",
        ],
        &[],
    )
    .assert_fails_with(&format!(
        "error: --subject header:X-Api-Key reads the `headers` object of JSON lines, and {} is a combined log, which logs no request headers by name: use --subject ip or user, or a jsonl log",
        good.display()
    ));
}

#[test]
fn a_header_subject_is_refused_for_combined_logs_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let policy = example_policy();
    // With --format combined nothing is opened: the file does not even exist.
    let missing = dir.path().join("not-there.log");
    replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            missing.to_str().unwrap(),
            "--format",
            "combined",
            "--subject",
            "header:User-Agent",
        ],
        &[],
    )
    .assert_fails_with(&format!(
        "error: --subject header:User-Agent reads the `headers` object of JSON lines, and {} is a combined log, which logs no request headers by name: use --subject ip or user, or a jsonl log",
        missing.display()
    ));
}

#[test]
fn an_output_in_a_missing_folder_is_refused_before_replaying() {
    let dir = tempfile::tempdir().unwrap();
    let policy = example_policy();
    // The log does not exist either: the folder is checked first, before any reading.
    let log = dir.path().join("not-there.log");
    for flag in ["--report", "--plot", "--decisions"] {
        let folder = dir.path().join("no-such-folder");
        let out = folder.join("out.png");
        replay(
            &[
                "--policy",
                policy.to_str().unwrap(),
                "--log",
                log.to_str().unwrap(),
                flag,
                out.to_str().unwrap(),
            ],
            &[],
        )
        .assert_fails_with(&format!(
            "error: {}: no folder {} to write it in\n",
            out.display(),
            folder.display()
        ));
    }
}

/// A typing slip must not cost the recorded log: an output that names a log, the policy, its
/// model or another output is refused, and the file is left as it was.
#[test]
fn an_output_that_would_replace_an_input_or_another_output_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let policy = example_policy();
    let log = dir.path().join("access.log");
    std::fs::write(&log, GOOD).unwrap();
    let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/abuse.json");
    let report = dir.path().join("r.json");
    let cases = [
        ("--report", log.clone(), "--log"),
        ("--decisions", log.clone(), "--log"),
        ("--report", policy.clone(), "--policy"),
        (
            "--report",
            model.clone(),
            "the policy's adaptive.anomaly.model",
        ),
        ("--decisions", report.clone(), "--report"),
    ];
    for (flag, out, input) in cases {
        let mut args = vec![
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ];
        if flag != "--report" {
            args.extend(["--report", report.to_str().unwrap()]);
        }
        args.extend([flag, out.to_str().unwrap()]);
        replay(&args, &[]).assert_fails_with(&format!(
            "error: {flag} {} is also named by {input}: an output never replaces an input or \
             another output\n",
            out.display()
        ));
    }
    assert_eq!(std::fs::read_to_string(&log).unwrap(), GOOD);
}

/// A hard link is the same file by another name: it was replaced once.
#[test]
fn an_output_hard_linked_to_the_log_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let policy = example_policy();
    let log = dir.path().join("access.log");
    std::fs::write(&log, GOOD).unwrap();
    let alias = dir.path().join("alias.json");
    std::fs::hard_link(&log, &alias).unwrap();
    let args = [
        "--policy",
        policy.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ];
    let mut with_report = args.to_vec();
    with_report.extend(["--report", alias.to_str().unwrap()]);
    replay(&with_report, &[]).assert_fails_with(&format!(
        "error: --report {} is also named by --log: an output never replaces an input or \
         another output\n",
        alias.display()
    ));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), GOOD);
}

#[test]
fn a_sweep_without_a_model_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("no_model.yaml");
    std::fs::write(
        &policy,
        "default_tier: free\ntiers:\n  free:\n    limits:\n      - { name: hourly, \
         algorithm: sliding_log, requests: 1, window: 1h }\n",
    )
    .unwrap();
    let log = dir.path().join("access.log");
    std::fs::write(&log, GOOD).unwrap();
    let args = [
        "--policy",
        policy.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
        "--sweep",
        "threshold=0.5:0.9:0.1",
    ];
    replay(&args, &[]).assert_fails_with(&format!(
        "error: --sweep varies adaptive.anomaly.threshold, and {} names no \
         adaptive.anomaly.model: every pass would decide alike\n",
        policy.display()
    ));
}

#[test]
fn a_plot_it_cannot_draw_and_an_output_that_is_a_folder_are_refused_before_replaying() {
    let dir = tempfile::tempdir().unwrap();
    let policy = example_policy();
    let log = dir.path().join("not-there.log");
    let args = |flag: &str, out: &str| {
        replay(
            &[
                "--policy",
                policy.to_str().unwrap(),
                "--log",
                log.to_str().unwrap(),
                flag,
                out,
            ],
            &[],
        )
    };
    let text = dir.path().join("sweep.txt");
    args("--plot", text.to_str().unwrap()).assert_fails_with(&format!(
        "error: --plot {}: the plot is drawn as PNG or JPEG; name a .png, .jpg or .jpeg file\n",
        text.display()
    ));
    // A file where a pass would be written first is not clobbered.
    let part = dir.path().join("d.jsonl.part0");
    std::fs::write(&part, "the user's own file").unwrap();
    let decisions = dir.path().join("d.jsonl");
    args("--decisions", decisions.to_str().unwrap()).assert_fails_with(&format!(
        "error: --decisions {0}: {1} exists, and replay writes each pass to {0}.partN before \
         joining them: move or delete it\n",
        decisions.display(),
        part.display()
    ));
    assert_eq!(
        std::fs::read_to_string(&part).unwrap(),
        "the user's own file"
    );
    let folder = dir.path().to_str().unwrap();
    for flag in ["--report", "--plot", "--decisions"] {
        args(flag, folder).assert_fails_with(&format!(
            "error: {flag} {folder}: is a folder; name a file to write\n"
        ));
    }
}

#[test]
fn a_jsonl_line_without_the_subject_header_is_unparsable() {
    let dir = tempfile::tempdir().unwrap();
    let policy = example_policy();
    let log = dir.path().join("headers.jsonl");
    std::fs::write(
        &log,
        concat!(
            r#"{"ts": 1795334400, "user": "u1", "endpoint": "/a", "headers": {"X-Api-Key": "k1"}}"#,
            "\n",
            r#"{"ts": 1795334401, "user": "u2", "endpoint": "/a"}"#,
            "\n",
            r#"{"ts": 1795334402, "user": "u3", "endpoint": "/a", "headers": {"x-api-key": "k2"}}"#,
            "\n",
        ),
    )
    .unwrap();
    let (report, _) = replay_report(
        dir.path(),
        &policy,
        &log,
        &["--subject", "header:x-API-key"],
    );
    assert_eq!(report["lines_skipped"], 1, "{report:#}");
    assert_eq!(report["summary"]["requests"], 2);
    assert_eq!(report["summary"]["subjects"], 2);
    assert_eq!(report["subject_fallbacks"], 0);
    let example = &report["skipped_examples"][0];
    assert_eq!(example["line"], 2);
    assert_eq!(
        example["problem"],
        "no `headers.x-API-key`, and --subject header:x-API-key needs it"
    );
}
