//! The crate's layers: a module may import only from modules in lower layers.
//!
//! Reads every `crate::<module>` path in `src/` (comments aside) and fails on an import from a
//! module to one in its own or a higher layer, which also rules out any cycle between top-level
//! modules. The allowed order is written here once; docs/architecture.md draws it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Lowest first. Modules in one layer know nothing of each other.
const LAYERS: &[&[&str]] = &[
    &["clock", "metrics", "files"],
    &["limit"],
    &["algorithm"],
    &["store"],
    &["features", "yaml"],
    &["policy", "envoy_config"],
    &["rules", "simulate"],
    &["engine"],
    &["logs"],
    &["model"],
    &["control"],
    &["reload", "ratelimit_headers"],
    &["http", "grpc", "replay"],
    &["daemon"],
    &["cli"],
];

/// Each top-level module of `src/` with the modules its code names through `crate::`.
fn imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(src) {
        let relative = file.strip_prefix(src).expect("under src");
        let first = relative.iter().next().expect("a file").to_string_lossy();
        let module = first.trim_end_matches(".rs").to_owned();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("readable source");
        let used = graph.entry(module.clone()).or_default();
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            for (at, _) in code.match_indices("crate::") {
                let rest = &code[at + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if !name.is_empty() && name != module {
                    used.insert(name);
                }
            }
        }
    }
    graph
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("readable folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// Every import that goes sideways or up, as `from -> to (layer a -> layer b)`.
fn back_edges(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut wrong = Vec::new();
    for (from, used) in graph {
        let Some(from_layer) = layer_of(from) else {
            wrong.push(format!("{from}: not in LAYERS (add it to its layer)"));
            continue;
        };
        for to in used {
            match layer_of(to) {
                Some(to_layer) if to_layer < from_layer => {}
                Some(to_layer) => wrong.push(format!(
                    "{from} -> {to} (layer {from_layer} imports layer {to_layer})"
                )),
                None => wrong.push(format!("{from} -> {to}: {to} is not in LAYERS")),
            }
        }
    }
    wrong
}

#[test]
fn no_module_imports_from_its_own_or_a_higher_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = imports(&src);
    assert!(graph.len() > 10, "read the crate's modules: {graph:?}");
    let wrong = back_edges(&graph);
    assert!(
        wrong.is_empty(),
        "imports against the layering:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_back_edge_is_caught() {
    let mut graph = BTreeMap::new();
    graph.insert("store".to_owned(), BTreeSet::from(["algorithm".to_owned()]));
    graph.insert("algorithm".to_owned(), BTreeSet::new());
    assert!(back_edges(&graph).is_empty());
    graph.insert("store".to_owned(), BTreeSet::from(["engine".to_owned()]));
    assert_eq!(
        back_edges(&graph),
        ["store -> engine (layer 3 imports layer 7)"]
    );
    graph.insert(
        "policy".to_owned(),
        BTreeSet::from(["envoy_config".to_owned()]),
    );
    assert_eq!(
        back_edges(&graph)[0],
        "policy -> envoy_config (layer 5 imports layer 5)"
    );
}

#[test]
fn every_layer_module_exists() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for module in LAYERS.iter().flat_map(|l| l.iter()) {
        assert!(
            src.join(format!("{module}.rs")).exists() || src.join(module).is_dir(),
            "LAYERS names {module}, which src/ does not have"
        );
    }
}
