//! The CLI's safer defaults: `check-policy` loads the model a policy names, `simulate` and
//! `train` never overwrite without `--force` (a flag or its variable), `train` names its
//! output, runs from any folder and says when its figures mean little; `train` and `replay` write their files when the reader of their output
//! has left.

mod common;

use common::cli::{copy_without, ratewarden, simulate, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `t.jsonl` in `dir`: 150 subjects over 15 minutes, enough to train on.
fn simulate_small_run(dir: &Path) {
    simulate(dir, 3, "15m", 150);
}

fn shipped_model() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models/abuse.json")
}

const POLICY: &str = "default_tier: free
tiers: { free: { limits: [ { name: hourly, algorithm: sliding_window, requests: 100, window: 1h } ] } }
adaptive: { anomaly: { model: model.json } }
";

#[test]
fn check_policy_refuses_a_missing_or_corrupt_model() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.yaml"), POLICY).unwrap();
    let missing = ratewarden(dir.path(), &["check-policy", "p.yaml"]);
    assert_eq!(missing.status.code(), Some(1));
    let model = dir.path().join("model.json");
    // The model's path resolves against the policy's folder, as given.
    assert_eq!(
        text(&missing.stdout),
        "p.yaml: adaptive.anomaly.model: cannot read model file model.json: No such file or directory (os error 2)\n"
    );

    // Another error does not hide the model's: both are named at once.
    std::fs::write(
        dir.path().join("two.yaml"),
        POLICY.replace("requests: 100", "requests: 0"),
    )
    .unwrap();
    let two = ratewarden(dir.path(), &["check-policy", "two.yaml"]);
    assert_eq!(
        text(&two.stdout),
        "two.yaml: tiers.free.limits[0].requests: must be at least 1\n\
         two.yaml: adaptive.anomaly.model: cannot read model file model.json: No such file or directory (os error 2)\n"
    );

    // A model path the compiler refuses is named once.
    std::fs::write(
        dir.path().join("empty.yaml"),
        POLICY.replace("model: model.json", "model: \"\""),
    )
    .unwrap();
    let empty = ratewarden(dir.path(), &["check-policy", "empty.yaml"]);
    assert_eq!(
        text(&empty.stdout),
        "empty.yaml: adaptive.anomaly.model: must not be empty\n"
    );

    std::fs::write(&model, "{ not json").unwrap();
    let corrupt = ratewarden(dir.path(), &["check-policy", "p.yaml"]);
    assert_eq!(corrupt.status.code(), Some(1));
    let out = text(&corrupt.stdout);
    assert!(
        out.starts_with("p.yaml: adaptive.anomaly.model: model file model.json: not valid JSON:"),
        "{out}"
    );

    std::fs::copy(shipped_model(), &model).unwrap();
    let valid = ratewarden(dir.path(), &["check-policy", "p.yaml"]);
    assert_eq!(
        text(&valid.stdout),
        "p.yaml: ok (1 tier, 0 endpoint rules)\n"
    );
    assert_eq!(valid.status.code(), Some(0));
}

#[test]
fn train_needs_out_and_force_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let no_out = ratewarden(dir.path(), &["train", "--data", "traffic.jsonl"]);
    assert_eq!(no_out.status.code(), Some(2));
    assert!(
        text(&no_out.stderr).contains("--out <OUT>"),
        "{}",
        text(&no_out.stderr)
    );

    let out = dir.path().join("model.json");
    std::fs::write(&out, "the model a daemon watches").unwrap();
    let refused = ratewarden(
        dir.path(),
        &["train", "--data", "traffic.jsonl", "--out", "model.json"],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        text(&refused.stderr),
        "error: model.json exists; pass --force to overwrite it (a daemon watching it loads the new model at once)\n"
    );
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "the model a daemon watches"
    );
}

#[test]
fn simulate_keeps_an_existing_file_without_force_from_its_flag_or_its_variable() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model.json");
    std::fs::write(&out, "the model a daemon watches").unwrap();
    // RATEWARDEN_OUT names train's model too: a shell set up to train must keep it.
    let simulate = |extra: &[&str], env: &[(&str, &str)]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ratewarden"));
        command
            .args(["simulate", "--subjects", "20", "--duration", "1m"])
            .args(extra)
            .current_dir(dir.path())
            .env("RATEWARDEN_OUT", "model.json");
        for (name, value) in env {
            command.env(name, value);
        }
        command.output().expect("the binary runs")
    };
    for refusing in [vec![], vec![("RATEWARDEN_FORCE", "no")]] {
        let refused = simulate(&[], &refusing);
        assert_eq!(refused.status.code(), Some(1));
        assert_eq!(
            text(&refused.stderr),
            "error: writing model.json: model.json exists; pass --force to replace it\n"
        );
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "the model a daemon watches"
        );
    }
    // What would fail after the simulation is refused before it.
    std::fs::create_dir(dir.path().join("a-folder")).unwrap();
    for (out, message) in [
        (
            "a-folder",
            "error: writing a-folder: a-folder is a folder; --out names a file\n",
        ),
        (
            "missing/t.jsonl",
            "error: writing missing/t.jsonl: no folder missing to write it in\n",
        ),
    ] {
        let refused = simulate(&["--out", out, "--force"], &[]);
        assert_eq!(refused.status.code(), Some(1));
        assert_eq!(text(&refused.stderr), message);
    }
    let forced = simulate(&["--force"], &[]);
    assert!(forced.status.success(), "{}", text(&forced.stderr));
    std::fs::write(&out, "again").unwrap();
    let forced = simulate(&[], &[("RATEWARDEN_FORCE", "yes")]);
    assert!(forced.status.success(), "{}", text(&forced.stderr));
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .starts_with("{\"ts\"")
    );
}

#[test]
fn train_names_a_missing_data_file_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = ratewarden(
        dir.path(),
        &["train", "--data", "nosuch.jsonl", "--out", "m.json"],
    );
    assert_eq!(missing.status.code(), Some(1));
    let stderr = text(&missing.stderr);
    assert!(
        stderr.ends_with(
            "\nerror: cannot open nosuch.jsonl: No such file or directory (os error 2)\n"
        ),
        "{stderr}"
    );
}

#[test]
fn train_names_an_empty_a_gzip_and_a_combined_data_file() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8], &str); 3] = [
        ("empty.jsonl", b"", "no line to read: the file is empty"),
        (
            "t.jsonl.gz",
            b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff\xfe",
            "reading line 1: not UTF-8 text (this reads plain JSON lines: decompress a .gz file first)",
        ),
        (
            "access.log",
            b"203.0.113.7 - - [25/Nov/2026:00:00:00 +0000] \"GET /x HTTP/1.1\" 200 5\n",
            "no parsable line (1 unparsable; first at line 1: not a JSON object (JSON lines hold \
             one object per line))",
        ),
    ];
    for (name, bytes, problem) in cases {
        std::fs::write(dir.path().join(name), bytes).unwrap();
        let out = ratewarden(dir.path(), &["train", "--data", name, "--out", "m.json"]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.ends_with(&format!("\nerror: {name}: {problem}\n")),
            "{stderr}"
        );
    }
}

#[test]
fn train_runs_without_a_policy_in_the_folder_and_warns_on_few_abusers() {
    let dir = tempfile::tempdir().unwrap();
    simulate_small_run(dir.path());
    let trained = ratewarden(
        dir.path(),
        &["train", "--data", "t.jsonl", "--out", "m.json"],
    );
    let stderr = text(&trained.stderr);
    assert!(trained.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "no --policy and no ./ratewarden.yaml: using the policy shipped with ratewarden"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("abusive subjects were held out; below 30 the figures above mean little"),
        "{stderr}"
    );
    assert!(dir.path().join("m.json").exists());
    // Recorded traffic has no `archetype`: its table by archetype would be empty, and says so.
    copy_without(dir.path(), "t.jsonl", "recorded.jsonl", "archetype");
    let again = ratewarden(
        dir.path(),
        &[
            "train",
            "--data",
            "t.jsonl",
            "--out",
            "m.json",
            "--force",
            "--evaluate-on",
            "recorded.jsonl",
        ],
    );
    let stderr = text(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "warning: recorded.jsonl has no `archetype` field (simulate writes one): its table by archetype is empty"
        ),
        "{stderr}"
    );
    let stdout = text(&again.stdout);
    assert!(
        stdout.contains("no abusive archetype to measure recall on") && !stdout.contains("-0.000"),
        "{stdout}"
    );
}

/// `ratewarden ARGS` in `dir` whose reader has left before reading anything (`| head -0`); with
/// `stderr_too`, as `2>&1 | head -0` (its output then holds nothing to read).
fn with_reader_gone(dir: &Path, args: &[&str], stderr_too: bool) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratewarden"))
        .args(args)
        .current_dir(dir)
        .env_remove("RATEWARDEN_POLICY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    drop(child.stdout.take());
    if stderr_too {
        drop(child.stderr.take());
    }
    child.wait_with_output().expect("the binary ends")
}

#[test]
fn train_and_replay_write_their_files_when_the_reader_has_left() {
    let dir = tempfile::tempdir().unwrap();
    simulate_small_run(dir.path());
    let trained = with_reader_gone(
        dir.path(),
        &["train", "--data", "t.jsonl", "--out", "m.json"],
        false,
    );
    let stderr = text(&trained.stderr);
    assert!(trained.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(dir.path().join("m.json").exists());
    // Its warnings (a small run holds out few abusers) go to a stderr nobody reads either.
    let trained = with_reader_gone(
        dir.path(),
        &["train", "--data", "t.jsonl", "--out", "m2.json"],
        true,
    );
    assert!(trained.status.success(), "{}", trained.status);
    assert!(dir.path().join("m2.json").exists());

    let policy = Path::new(env!("CARGO_MANIFEST_DIR")).join("ratewarden.yaml");
    let replayed = with_reader_gone(
        dir.path(),
        &[
            "replay",
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            "t.jsonl",
            "--report",
            "r.json",
        ],
        false,
    );
    let stderr = text(&replayed.stderr);
    assert!(replayed.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(dir.path().join("r.json").exists());
}

#[test]
fn train_refuses_what_would_fail_after_the_fit_before_reading_the_data() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("a-folder")).unwrap();
    std::fs::create_dir(dir.path().join("a-folder.png")).unwrap();
    // The data file does not exist: each refusal comes before it is opened.
    std::fs::write(dir.path().join("old.jsonl"), "").unwrap();
    let cases: [(&[&str], &str); 16] = [
        (
            &["--out", "absent.jsonl", "--force"],
            "error: --out absent.jsonl is also named by --data: an output never replaces an \
             input or another output\n",
        ),
        (
            &[
                "--out",
                "m.json",
                "--evaluate-on",
                "old.jsonl",
                "--reliability-plot",
                "./old.jsonl",
            ],
            "error: --reliability-plot ./old.jsonl is also named by --evaluate-on: an output \
             never replaces an input or another output\n",
        ),
        (
            &["--out", "m.json", "--reliability-plot", "r.gif"],
            "error: --reliability-plot r.gif: the diagram is drawn as PNG; name a .png file\n",
        ),
        (
            &["--out", "missing/m.json"],
            "error: missing/m.json: no folder missing to write it in\n",
        ),
        (
            &["--out", "a-folder", "--force"],
            "error: a-folder is a folder; --out names the model file\n",
        ),
        (
            &["--out", "m.json", "--reliability-plot", "missing/r.png"],
            "error: missing/r.png: no folder missing to write it in\n",
        ),
        (
            &["--out", "m.json", "--samples-out", "missing/s.jsonl"],
            "error: missing/s.jsonl: no folder missing to write it in\n",
        ),
        (
            &["--out", "m.json", "--samples-out", "a-folder"],
            "error: a-folder is a folder; --samples-out names a file\n",
        ),
        (
            &["--out", "m.json", "--samples-out", "absent.jsonl"],
            "error: --samples-out absent.jsonl is also named by --data: an output never \
             replaces an input or another output\n",
        ),
        (
            &["--out", "m.json", "--samples-out", "m.json", "--force"],
            "error: --samples-out m.json is also named by --out: an output never replaces an \
             input or another output\n",
        ),
        (
            &["--out", "m.json", "--samples-out", "old.jsonl"],
            "error: old.jsonl exists; pass --force to replace it\n",
        ),
        (
            &["--out", "m.json", "--evaluate-on", "fresh.jsonl"],
            "error: cannot open fresh.jsonl: No such file or directory (os error 2)\n",
        ),
        (
            &["--out", "m.json", "--evaluate-on", "a-folder"],
            "error: a-folder is a folder; --evaluate-on names a file\n",
        ),
        (
            &["--out", "m.json", "--reliability-plot", "a-folder.png"],
            "error: a-folder.png is a folder; --reliability-plot names a file\n",
        ),
        (
            &["--out", "m.json", "--kind", "gmm", "--pairs"],
            "error: --pairs and --ignore-feature apply to the logistic kind only\n",
        ),
        (
            &[
                "--out",
                "m.json",
                "--kind",
                "gmm",
                "--ignore-feature",
                "limit_usage",
            ],
            "error: --pairs and --ignore-feature apply to the logistic kind only\n",
        ),
    ];
    for (args, message) in cases {
        let mut all = vec!["train", "--data", "absent.jsonl"];
        all.extend_from_slice(args);
        let out = ratewarden(dir.path(), &all);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(text(&out.stderr), message, "{args:?}");
    }
    let out = ratewarden(
        dir.path(),
        &[
            "train",
            "--data",
            "absent.jsonl",
            "--out",
            "m.json",
            "--components",
            "17",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(
            "invalid value '17' for '--components <COMPONENTS>': a mixture has 1 to 16 components"
        ),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn train_refuses_data_labelled_in_part() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.jsonl"),
        concat!(
            r#"{"ts": 1795334400, "user": "a", "endpoint": "/", "label": "abuse"}"#,
            "\n",
            r#"{"ts": 1795334401, "user": "b", "endpoint": "/"}"#,
            "\n",
        ),
    )
    .unwrap();
    let out = ratewarden(
        dir.path(),
        &["train", "--data", "t.jsonl", "--out", "m.json"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).ends_with(
            "error: 1 of 2 lines have no `label`: the logistic kind needs every line labelled (an unlabelled line would count as normal)\n"
        ),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_log_level_typo_warns_instead_of_silencing_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let run = |value: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_ratewarden"))
            .args([
                "simulate",
                "--out",
                "t.jsonl",
                "--duration",
                "1m",
                "--subjects",
                "20",
                "--force",
            ])
            .current_dir(dir.path())
            .env("RATEWARDEN_LOG", value)
            .output()
            .expect("the binary runs");
        assert!(output.status.success(), "{}", text(&output.stderr));
        text(&output.stderr)
    };
    for typo in [
        "verbose",
        "degub",
        "ratewarden:debug",
        "ratewarden_debug",
        "info,verbose",
        "info , warn",
    ] {
        let stderr = run(typo);
        assert!(
            stderr.contains(&format!(
                "RATEWARDEN_LOG={typo:?} is neither a level (error, warn, info, debug, trace, \
                 off) nor directives such as ratewarden=debug,audit=info; logging at info"
            )),
            "{stderr}"
        );
    }
    for fine in [
        "debug",
        "ratewarden=debug,info",
        "warn",
        "TRACE",
        "audit",
        "ratewarden::engine=trace",
        "info,hyper=warn",
        "ratewarden[load]",
    ] {
        let stderr = run(fine);
        assert!(!stderr.contains("RATEWARDEN_LOG"), "{fine}: {stderr}");
    }
}
