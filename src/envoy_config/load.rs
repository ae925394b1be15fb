//! Compiling a configuration folder's files: one domain each, every domain named once.

use super::{Domain, EnvoyConfig, EnvoyConfigError, EnvoyConfigErrors, compile::compile};
use std::collections::HashMap;
use std::path::Path;

impl Domain {
    /// Compiles one file's text; `file` names it in errors and limit labels. What
    /// [`EnvoyConfig::compile`] does for each file of a folder (the fuzz target's entry point).
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
    /// Compiles the files of one folder, given as (file name, text) in name order (what
    /// the daemon read from it); `dir` names the folder in the result. Reads no file.
    pub fn compile(
        dir: &Path,
        files: Vec<(String, String)>,
    ) -> Result<EnvoyConfig, EnvoyConfigErrors> {
        let mut errors = Vec::new();
        let mut domains = HashMap::new();
        let mut defined_in: HashMap<String, String> = HashMap::new();
        for (file, text) in files {
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
