//! `ratewarden check-policy`: a policy file (with its envoy folder and its model) or an
//! envoyproxy/ratelimit folder compiled, and every error printed with its path.

use crate::envoy_config::EnvoyConfig;
use crate::model::Model;
use crate::policy::PolicyErrors;
use crate::rules::{self, Rules};
use std::path::{Path, PathBuf};

const MODEL_KEY: &str = "adaptive.anomaly.model";

/// What `check-policy` prints for `file`, one line each (its warnings after `ok`), and whether it
/// is valid.
pub fn check(file: &Path) -> (Vec<String>, bool) {
    let shown = file.display();
    let summary = if file.is_dir() {
        rules::load_envoy_folder(file)
            .map(|config| (envoy_summary(&config), Vec::new()))
            .map_err(|errors| errors.lines_under(file))
    } else {
        rules::load(file, None)
            .map_err(|errors| with_model_problem(file, &errors))
            .and_then(|rules| model_problem(&rules).map_or(Ok(rules), |line| Err(vec![line])))
            .map(|rules| {
                let policy = &rules.policy;
                let envoy = match &rules.envoy {
                    Some(config) => format!(", envoy_config: {}", envoy_summary(config)),
                    None => String::new(),
                };
                let summary = format!(
                    "{}, {}{envoy}",
                    plural(policy.tiers.len(), "tier", "tiers"),
                    plural(policy.endpoints.len(), "endpoint rule", "endpoint rules")
                );
                let mut warnings = policy.adaptive.load.inverted_factors();
                warnings.extend(edited_model(&rules));
                (summary, warnings)
            })
    };
    match summary {
        Ok((summary, warnings)) => {
            let mut lines = vec![format!("{shown}: ok ({summary})")];
            lines.extend(warnings.iter().map(|w| format!("{shown}: warning: {w}")));
            (lines, true)
        }
        Err(lines) => (
            lines
                .iter()
                .map(|line| format!("{shown}: {line}"))
                .collect(),
            false,
        ),
    }
}

/// Why the model the policy names cannot be used (missing, unreadable, invalid), if it cannot.
/// The daemon starts without it (limits without anomaly scaling until the file appears), but a
/// policy meant to run with a model should not pass a check without one.
fn model_problem(rules: &Rules) -> Option<String> {
    let path = rules.policy.adaptive.anomaly.model.as_deref()?;
    Model::load(path)
        .err()
        .map(|error| format!("{MODEL_KEY}: {error}"))
}

/// A warning when the model the policy names was changed after training (the daemon logs the
/// same at load).
fn edited_model(rules: &Rules) -> Option<String> {
    let path = rules.policy.adaptive.anomaly.model.as_deref()?;
    let model = Model::load(path).ok()?;
    (!model.version_matches()).then(|| {
        format!(
            "{MODEL_KEY}: the model file was changed after training: it does not score as the \
             model {} that it is named after; retrain it, or give it a version of your own",
            model.version()
        )
    })
}

/// `lines` and, after them, why the model the file names cannot be used: a policy with errors
/// still has its model checked, so that fixing the file does not reveal one more.
fn with_model_problem(file: &Path, errors: &PolicyErrors) -> Vec<String> {
    let mut lines = errors.lines();
    // A model path the compiler refused (an empty one) is named once, by the compiler.
    if errors.0.iter().any(|e| e.path == MODEL_KEY) {
        return lines;
    }
    let problem = model_named_in(file).and_then(|path| Model::load(&path).err());
    if let Some(error) = problem {
        lines.push(format!("{MODEL_KEY}: {error}"));
    }
    lines
}

/// The model path `file` names (relative to its folder, as the compiler reads it), if the
/// file is YAML with a string there.
fn model_named_in(file: &Path) -> Option<PathBuf> {
    let text = rules::read_policy_text(file).ok()?;
    let value: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(crate::files::without_byte_order_mark(&text)).ok()?;
    let model = value
        .get("adaptive")?
        .get("anomaly")?
        .get("model")?
        .as_str()?;
    Some(file.parent().unwrap_or(Path::new(".")).join(model))
}

fn envoy_summary(config: &EnvoyConfig) -> String {
    format!(
        "{}, {}",
        plural(config.domains.len(), "domain", "domains"),
        plural(config.rule_count(), "rate limit", "rate limits")
    )
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
