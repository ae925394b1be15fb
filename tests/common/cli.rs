//! Running the `ratewarden` binary's commands in a folder, and the traffic files they read.

use std::path::Path;
use std::process::{Command, Output};

/// `ratewarden ARGS` in `dir`, without a policy from the environment.
pub fn ratewarden(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ratewarden"))
        .args(args)
        .current_dir(dir)
        .env_remove("RATEWARDEN_POLICY")
        .output()
        .expect("the binary runs")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `t.jsonl` in `dir`: `simulate` with this seed, duration and number of subjects.
pub fn simulate(dir: &Path, seed: u32, duration: &str, subjects: u32) {
    let simulated = ratewarden(
        dir,
        &[
            "simulate",
            "--out",
            "t.jsonl",
            "--seed",
            &seed.to_string(),
            "--duration",
            duration,
            "--subjects",
            &subjects.to_string(),
        ],
    );
    assert!(simulated.status.success(), "{}", text(&simulated.stderr));
}

/// Copies the traffic file `from` to `to` in `dir` without `field` on any line (recorded
/// traffic has no `archetype`, unlabelled logs no `label`).
pub fn copy_without(dir: &Path, from: &str, to: &str, field: &str) {
    let copy: String = std::fs::read_to_string(dir.join(from))
        .unwrap()
        .lines()
        .map(|line| {
            let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
            record.as_object_mut().unwrap().remove(field);
            format!("{record}\n")
        })
        .collect();
    std::fs::write(dir.join(to), copy).unwrap();
}
