//! YAML in the documents and in `examples/`: policy snippets and envoyproxy/ratelimit folders pass
//! `check-policy` unless marked otherwise, snippets copied from a file are still in it, and every
//! example file parses.

use crate::repo::{check_policy, documents, files_under, root, shown};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::Path;

#[test]
fn yaml_snippets_are_policies_that_check_policy_accepts() {
    let dir = tempfile::tempdir().unwrap();
    // Snippets name the shipped model as `models/abuse.json`, beside the policy, and
    // `check-policy` loads the model a policy names.
    std::fs::create_dir(dir.path().join("models")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models/abuse.json"),
        dir.path().join("models/abuse.json"),
    )
    .unwrap();
    let mut problems = Vec::new();
    let (mut policies, mut envoy) = (0, 0);
    for doc in documents() {
        for block in doc
            .blocks
            .iter()
            .filter(|b| matches!(b.lang.as_str(), "yaml" | "yml"))
        {
            let at = doc.at(block.line);
            let n = policies + envoy;
            let refused = match block.marker.as_deref() {
                Some(m) if m.starts_with("not-a-policy") || m.starts_with("from ") => continue,
                Some(m) if m.starts_with("envoy-ratelimit-config") => {
                    envoy += 1;
                    let folder = dir.path().join(format!("envoy-{n}"));
                    std::fs::create_dir(&folder).unwrap();
                    std::fs::write(folder.join("snippet.yaml"), &block.text).unwrap();
                    check_policy(&folder)
                }
                Some(other) => Some(format!(
                    "unknown marker <!-- {other} --> (expected not-a-policy, envoy-ratelimit-config or from PATH)"
                )),
                None => {
                    policies += 1;
                    let file = dir.path().join(format!("policy-{n}.yaml"));
                    std::fs::write(&file, &block.text).unwrap();
                    check_policy(&file)
                }
            };
            if let Some(output) = refused {
                problems.push(format!(
                    "{at}: this yaml block is refused (mark it <!-- not-a-policy --> if it is not meant to be a whole policy):\n{output}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert!(policies >= 5, "only {policies} policy snippets found");
    assert!(
        envoy >= 2,
        "only {envoy} envoyproxy/ratelimit snippets found"
    );
}

#[test]
fn snippets_copied_from_a_file_match_it() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        for block in &doc.blocks {
            let Some(source) = block
                .marker
                .as_deref()
                .and_then(|m| m.strip_prefix("from "))
            else {
                continue;
            };
            checked += 1;
            let path = root().join(source.trim());
            match std::fs::read_to_string(&path) {
                Ok(text) if text.contains(&block.text) => {}
                Ok(_) => problems.push(format!(
                    "{}: the block is not (or no longer) in {}:\n{}",
                    doc.at(block.line),
                    source.trim(),
                    block.text
                )),
                Err(e) => problems.push(format!("{}: {}: {e}", doc.at(block.line), source.trim())),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert!(checked >= 5, "only {checked} copied snippets found");
}

#[test]
fn examples_parse_and_their_policies_pass_check_policy() {
    let mut policies = vec![root().join("ratewarden.yaml")];
    let mut envoy_folders = BTreeSet::new();
    let mut problems = Vec::new();
    for file in files_under(&root().join("examples"), &["yaml", "yml"]) {
        let text = std::fs::read_to_string(&file).unwrap();
        let documents: Result<Vec<serde_yaml_ng::Value>, _> =
            serde_yaml_ng::Deserializer::from_str(&text)
                .map(serde_yaml_ng::Value::deserialize)
                .collect();
        match documents {
            Err(e) => problems.push(format!("{}: not YAML: {e}", shown(&file))),
            Ok(documents) => {
                for value in documents {
                    if value.get("tiers").is_some() {
                        policies.push(file.clone());
                    } else if value.get("domain").is_some() && value.get("descriptors").is_some() {
                        envoy_folders.insert(file.parent().unwrap().to_path_buf());
                    }
                }
            }
        }
    }
    let checked = policies.len() + envoy_folders.len();
    for path in policies.iter().chain(&envoy_folders) {
        if let Some(output) = check_policy(path) {
            problems.push(format!("{} is refused:\n{output}", shown(path)));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert!(
        policies.len() >= 2 && !envoy_folders.is_empty(),
        "{checked} checked"
    );
}
