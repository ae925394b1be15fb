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
            .and_then(|rules| match checked_model(&rules) {
                Ok(warning) => Ok((rules, warning)),
                Err(line) => Err(vec![line]),
            })
            .map(|(rules, model_warning)| {
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
                let mut warnings = policy.warnings();
                warnings.extend(model_warning);
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

/// The model the policy names, read once: why it cannot be used (missing, unreadable, invalid)
/// as the error, else a warning when it was changed after training (the daemon logs the same at
/// load). The daemon starts without an unusable model (limits without anomaly scaling until
/// the file appears), but a policy meant to run with a model should not pass a check without one.
fn checked_model(rules: &Rules) -> Result<Option<String>, String> {
    let Some(path) = rules.policy.adaptive.anomaly.model.as_deref() else {
        return Ok(None);
    };
    let model = Model::load(path).map_err(|error| format!("{MODEL_KEY}: {error}"))?;
    Ok(model.edited_warning().map(|w| format!("{MODEL_KEY}: {w}")))
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
