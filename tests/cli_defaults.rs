//! The CLI's safer defaults: `check-policy` loads the model a policy names, and `train` names
//! its output, never overwrites without `--force`, runs from any folder and says when its
//! figures mean little.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ratewarden(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ratewarden"))
        .args(args)
        .current_dir(dir)
        .env_remove("RATEWARDEN_POLICY")
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
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
fn train_runs_without_a_policy_in_the_folder_and_warns_on_few_abusers() {
    let dir = tempfile::tempdir().unwrap();
    let simulated = ratewarden(
        dir.path(),
        &[
            "simulate",
            "--out",
            "t.jsonl",
            "--seed",
            "3",
            "--duration",
            "15m",
            "--subjects",
            "150",
        ],
    );
    assert!(simulated.status.success(), "{}", text(&simulated.stderr));
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
    let again = ratewarden(
        dir.path(),
        &["train", "--data", "t.jsonl", "--out", "m.json", "--force"],
    );
    assert!(again.status.success(), "{}", text(&again.stderr));
}
