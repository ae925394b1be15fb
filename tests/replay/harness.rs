//! Running `ratewarden replay` and reading what it wrote.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The example policy in the repository (its model path resolves to models/abuse.json).
pub fn example_policy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ratewarden.yaml")
}

pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn assert_ok(&self) -> &Self {
        assert_eq!(
            self.code,
            Some(0),
            "replay failed:\n{}\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    /// Exits non-zero, without a panic, with `message` in its error output.
    pub fn assert_fails_with(&self, message: &str) {
        assert_eq!(self.code, Some(1), "{}\n{}", self.stdout, self.stderr);
        assert!(
            self.stderr.contains(message),
            "expected {message:?} in:\n{}",
            self.stderr
        );
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
    }
}

/// `ratewarden replay ARGS` with `env`.
pub fn replay(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ratewarden"));
    command
        .arg("replay")
        .args(args)
        .env_remove("RATEWARDEN_HASH_KEY");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("ratewarden runs");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `ratewarden replay --policy POLICY --log LOG EXTRA... --report` into `dir`, which must
/// succeed: the report and the table.
pub fn replay_report(dir: &Path, policy: &Path, log: &Path, extra: &[&str]) -> (Value, String) {
    let report = dir.join("report.json");
    let mut args = vec![
        "--policy",
        policy.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let run = replay(&args, &[]);
    run.assert_ok();
    (read_json(&report), run.stdout)
}

/// `ratewarden replay --policy POLICY --log LOG --decisions` into `dir`, which must succeed:
/// every request's decision.
pub fn replay_decisions(dir: &Path, policy: &Path, log: &Path) -> Vec<Value> {
    let decisions = dir.join("decisions.jsonl");
    replay(
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
            "--decisions",
            decisions.to_str().unwrap(),
        ],
        &[],
    )
    .assert_ok();
    read_decisions(&decisions)
}

pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("valid JSON")
}

/// The lines of a `--decisions` file.
pub fn read_decisions(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// `ratewarden simulate` into `out`.
pub fn simulate(out: &Path, seed: u64, duration: &str, subjects: usize) {
    let status = Command::new(env!("CARGO_BIN_EXE_ratewarden"))
        .args(["simulate", "--out"])
        .arg(out)
        .args(["--seed", &seed.to_string(), "--duration", duration])
        .args(["--subjects", &subjects.to_string()])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("ratewarden simulate runs");
    assert!(status.success());
}
