//! A model file that makes a subject novel on purpose: the shipped model with `ips_per_request`
//! seen only up to 0.2 in training and weighed so heavily that a subject beyond it (a new
//! address on every request) scores near 1.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Writes the narrowed model into `dir` and returns its path.
pub fn model_with_a_narrow_range(dir: &Path) -> PathBuf {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/abuse.json");
    let mut model: Value =
        serde_json::from_str(&std::fs::read_to_string(shipped).unwrap()).unwrap();
    let column = model["features"]
        .as_array()
        .unwrap()
        .iter()
        .position(|f| f == "ips_per_request")
        .unwrap();
    model["preprocessing"]["high"][column] = json!(0.2);
    model["parameters"]["weights"][column] = json!(40.0);
    model["version"] = json!("logistic-narrowed");
    let path = dir.join("narrow.json");
    std::fs::write(&path, model.to_string()).unwrap();
    path
}
