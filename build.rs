//! Builds the protobuf descriptors that gRPC server reflection serves.
//!
//! The `envoy-types` crate ships Rust types generated from Envoy's protos, and in its package
//! (not its API) the `FileDescriptorSet` they were generated from (`src/generated/types.bin`).
//! Reflection needs the descriptors of `envoy/service/ratelimit/v3/rls.proto` and of every
//! file it imports: this script finds the envoy-types package through `cargo metadata` (the
//! version Cargo.lock resolved, wherever it was unpacked or vendored), keeps those files of the
//! set, and writes them to `$OUT_DIR/rls_descriptors.bin`. So the descriptors always match the
//! generated types, and no `.proto` file is copied into this repository.

use prost::Message;
use prost_types::FileDescriptorSet;
use std::collections::{BTreeSet, HashMap};
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = "envoy/service/ratelimit/v3/rls.proto";
const SET_IN_PACKAGE: &str = "src/generated/types.bin";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=Cargo.lock");
    let package = envoy_types_dir().unwrap_or_else(|why| {
        panic!("cannot find the envoy-types package for gRPC reflection: {why}")
    });
    let path = package.join(SET_IN_PACKAGE);
    println!("cargo:rerun-if-changed={}", path.display());
    let bytes =
        std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let set = FileDescriptorSet::decode(bytes.as_slice())
        .unwrap_or_else(|e| panic!("{} is not a FileDescriptorSet: {e}", path.display()));
    let kept = closure(set, ROOT);
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("rls_descriptors.bin"), kept.encode_to_vec())
        .expect("OUT_DIR is writable");
}

/// The files `root` needs (itself and everything it imports, transitively), dependencies
/// first as reflection clients expect.
fn closure(set: FileDescriptorSet, root: &str) -> FileDescriptorSet {
    let by_name: HashMap<String, prost_types::FileDescriptorProto> = set
        .file
        .into_iter()
        .map(|f| (f.name.clone().unwrap_or_default(), f))
        .collect();
    let mut seen = BTreeSet::new();
    let mut ordered = Vec::new();
    visit(root, &by_name, &mut seen, &mut ordered);
    assert!(
        !ordered.is_empty(),
        "{root} is not in envoy-types' descriptor set"
    );
    FileDescriptorSet { file: ordered }
}

fn visit(
    name: &str,
    by_name: &HashMap<String, prost_types::FileDescriptorProto>,
    seen: &mut BTreeSet<String>,
    ordered: &mut Vec<prost_types::FileDescriptorProto>,
) {
    if !seen.insert(name.to_owned()) {
        return;
    }
    let Some(file) = by_name.get(name) else {
        panic!("{name} is imported but missing from envoy-types' descriptor set");
    };
    for dependency in &file.dependency {
        visit(dependency, by_name, seen, ordered);
    }
    ordered.push(file.clone());
}

/// Where Cargo unpacked the envoy-types package this build uses.
fn envoy_types_dir() -> Result<PathBuf, String> {
    match from_cargo_metadata() {
        Ok(dir) => Ok(dir),
        Err(why) => from_registry().ok_or(why),
    }
}

fn from_cargo_metadata() -> Result<PathBuf, String> {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = Path::new(&env::var_os("CARGO_MANIFEST_DIR").ok_or("no CARGO_MANIFEST_DIR")?)
        .join("Cargo.toml");
    let output = Command::new(cargo)
        .args(["metadata", "--offline", "--format-version", "1"])
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("cargo metadata output: {e}"))?;
    // The resolved graph names the one envoy-types version this package depends on.
    let id = metadata["resolve"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|n| n["id"] == metadata["resolve"]["root"])
        .and_then(|root| {
            root["deps"].as_array()?.iter().find_map(|d| {
                (d["name"] == "envoy_types").then(|| d["pkg"].as_str().map(str::to_owned))?
            })
        })
        .ok_or("envoy-types is not a dependency in cargo metadata")?;
    metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["id"].as_str() == Some(id.as_str()))
        .and_then(|p| p["manifest_path"].as_str())
        .and_then(|m| Path::new(m).parent().map(Path::to_path_buf))
        .ok_or_else(|| format!("package {id} has no manifest path"))
}

/// Fallback: the newest envoy-types 0.7 unpacked in Cargo's registry.
fn from_registry() -> Option<PathBuf> {
    let home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))?;
    let mut found: Vec<PathBuf> = std::fs::read_dir(home.join("registry/src"))
        .ok()?
        .flatten()
        .flat_map(|index| {
            std::fs::read_dir(index.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|entry| entry.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("envoy-types-0.7."))
                && p.join(SET_IN_PACKAGE).is_file()
        })
        .collect();
    found.sort();
    found.pop()
}
