//! Reading a configuration folder: every `*.yaml` and `*.yml` file, one domain each.

use super::{Domain, EnvoyConfig, EnvoyConfigError, EnvoyConfigErrors, compile::compile};
use std::collections::HashMap;
use std::path::Path;

impl Domain {
    /// Compiles one file's text; `file` names it in errors and limit labels. What
    /// [`EnvoyConfig::load`] does for each file of a folder (the fuzz target's entry point).
    pub fn from_yaml(text: &str, file: &str) -> Result<Domain, EnvoyConfigErrors> {
        compile(text, file).map_err(|found| {
            EnvoyConfigErrors(
                found
                    .0
                    .into_iter()
                    .map(|e| EnvoyConfigError {
                        file: file.to_owned(),
                        path: e.path,
                        message: e.message,
                    })
                    .collect(),
            )
        })
    }
}

impl EnvoyConfig {
    /// Reads and compiles every YAML file of `dir` (not its subfolders), in name order.
    pub fn load(dir: &Path) -> Result<EnvoyConfig, EnvoyConfigErrors> {
        let folder_error = |message: String| {
            EnvoyConfigErrors(vec![EnvoyConfigError {
                file: dir.display().to_string(),
                path: String::new(),
                message,
            }])
        };
        let entries = std::fs::read_dir(dir)
            .map_err(|e| folder_error(format!("cannot read the folder: {e}")))?;
        let mut files: Vec<String> = entries
            .flatten()
            .filter(|entry| entry.path().is_file())
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter(|name| name.ends_with(".yaml") || name.ends_with(".yml"))
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(folder_error(
                "holds no .yaml file (one per rate limit domain)".to_owned(),
            ));
        }
        let mut errors = Vec::new();
        let mut domains = HashMap::new();
        let mut defined_in: HashMap<String, String> = HashMap::new();
        for file in files {
            let text = match std::fs::read_to_string(dir.join(&file)) {
                Ok(text) => text,
                Err(e) => {
                    errors.push(EnvoyConfigError {
                        file,
                        path: String::new(),
                        message: format!("cannot read: {e}"),
                    });
                    continue;
                }
            };
            match Domain::from_yaml(&text, &file) {
                Ok(domain) => {
                    if let Some(earlier) = defined_in.get(&*domain.name) {
                        errors.push(EnvoyConfigError {
                            file,
                            path: "domain".to_owned(),
                            message: format!(
                                "domain \"{}\" is already defined in {earlier}",
                                domain.name
                            ),
                        });
                        continue;
                    }
                    defined_in.insert(domain.name.to_string(), file);
                    domains.insert(domain.name.to_string(), domain);
                }
                Err(found) => errors.extend(found.0),
            }
        }
        if errors.is_empty() {
            Ok(EnvoyConfig {
                dir: dir.to_path_buf(),
                domains,
            })
        } else {
            Err(EnvoyConfigErrors(errors))
        }
    }
}
