//! What the engine enforces: a policy file and the envoyproxy/ratelimit folder it names, read
//! from disk and compiled together.
//!
//! The two compilers ([`crate::policy`], [`crate::envoy_config`]) compile text, so a fuzz target
//! or a test hands them text; this module reads the policy file and the envoy folder, for
//! `serve`, its reloads, `check-policy` and `replay` alike. One file is read by the policy
//! compiler itself: the `store.tls_ca` PEM file (relative to the policy file's folder), so that
//! a CA the daemon could not use is refused with the policy.

use crate::envoy_config::{EnvoyConfig, EnvoyConfigError, EnvoyConfigErrors};
use crate::policy::{Policy, PolicyErrors};
use std::path::Path;
use std::sync::Arc;

/// A policy with the envoyproxy/ratelimit configuration it names (if any), compiled.
#[derive(Debug, Clone)]
pub struct Rules {
    pub policy: Arc<Policy>,
    pub envoy: Option<Arc<EnvoyConfig>>,
}

impl Rules {
    /// A policy that names no envoyproxy/ratelimit folder, or whose folder is not loaded.
    pub fn policy_only(policy: Policy) -> Self {
        Self {
            policy: Arc::new(policy),
            envoy: None,
        }
    }
}

impl From<Policy> for Rules {
    fn from(policy: Policy) -> Self {
        Rules::policy_only(policy)
    }
}

/// Reads and compiles a policy file and its `envoy_config` folder; `envoy_dir`
/// (`--envoy-config`) takes the place of the file's folder. Every error of both is reported,
/// the folder's under `envoy_config`.
pub fn load(path: &Path, envoy_dir: Option<&Path>) -> Result<Rules, PolicyErrors> {
    let text = read_policy_text(path).map_err(|problem| {
        PolicyErrors::single("", format!("cannot read {}: {problem}", path.display()))
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut policy = Policy::from_yaml(&text, base)?;
    if let Some(dir) = envoy_dir {
        policy.envoy_config = Some(dir.to_path_buf());
    }
    let envoy = match &policy.envoy_config {
        None => None,
        Some(dir) => Some(Arc::new(load_envoy_folder(dir).map_err(|errors| {
            PolicyErrors(
                errors
                    .lines()
                    .into_iter()
                    .map(|line| crate::policy::PolicyError {
                        path: "envoy_config".to_owned(),
                        message: line,
                    })
                    .collect(),
            )
        })?)),
    };
    Ok(Rules {
        policy: Arc::new(policy),
        envoy,
    })
}

/// The largest policy file read: policies are a few KiB, and a device (`/dev/zero`) must not
/// be read until memory runs out.
const MAX_POLICY_BYTES: u64 = 1 << 20;

/// The policy file's text: a regular file (a pipe would hold a start-up or reload until its
/// writer ends), at most [`MAX_POLICY_BYTES`], UTF-8 (the line of the first byte that is not).
pub fn read_policy_text(path: &Path) -> Result<String, String> {
    use std::io::Read;
    // Asked before opening: opening a pipe waits for a writer.
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err("it is a folder".to_owned()),
        Ok(m) if !m.is_file() => return Err("not a regular file".to_owned()),
        Ok(_) => {}
        Err(e) => return Err(e.to_string()),
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_POLICY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_POLICY_BYTES {
        return Err("over 1 MiB: no policy is that long (is it the right file?)".to_owned());
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        format!("not UTF-8 text (line {line} holds a byte that is not)")
    })
}

/// [`load`] for a command that needs the policy alone (`train`, `replay`): a broken envoy
/// folder is still an error, as it would stop the daemon.
pub fn load_policy(path: &Path) -> Result<Policy, PolicyErrors> {
    load(path, None).map(|rules| Arc::unwrap_or_clone(rules.policy))
}

/// Reads and compiles every YAML file of `dir` (not its subfolders), in name order.
pub fn load_envoy_folder(dir: &Path) -> Result<EnvoyConfig, EnvoyConfigErrors> {
    let (files, mut errors) = read_envoy_folder(dir)?;
    match EnvoyConfig::compile(dir, files) {
        Ok(config) if errors.is_empty() => Ok(config),
        Ok(_) => Err(EnvoyConfigErrors(errors)),
        Err(found) => {
            errors.extend(found.0);
            Err(EnvoyConfigErrors(errors))
        }
    }
}

/// A folder's files as (name, text), in name order.
type FolderFiles = Vec<(String, String)>;

/// The `*.yaml` and `*.yml` files of a folder, with an error for each that could not be read.
fn read_envoy_folder(
    dir: &Path,
) -> Result<(FolderFiles, Vec<EnvoyConfigError>), EnvoyConfigErrors> {
    let folder_error = |message: String| {
        EnvoyConfigErrors(vec![EnvoyConfigError {
            file: dir.display().to_string(),
            path: String::new(),
            message,
        }])
    };
    let entries =
        std::fs::read_dir(dir).map_err(|e| folder_error(format!("cannot read the folder: {e}")))?;
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|entry| entry.path().is_file())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.ends_with(".yaml") || name.ends_with(".yml"))
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(folder_error(
            "holds no .yaml file (one per rate limit domain)".to_owned(),
        ));
    }
    let mut files = Vec::with_capacity(names.len());
    let mut errors = Vec::new();
    for name in names {
        match std::fs::read_to_string(dir.join(&name)) {
            Ok(text) => files.push((name, text)),
            Err(e) => errors.push(EnvoyConfigError {
                file: name,
                path: String::new(),
                message: format!("cannot read: {e}"),
            }),
        }
    }
    Ok((files, errors))
}
