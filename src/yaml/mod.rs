//! The YAML toolkit the two front-ends ([`crate::policy`], [`crate::envoy_config`]) compile
//! with: parsing that keeps the path of a failure, untyped leaves and captured unknown keys,
//! error collection with paths, and durations.
//!
//! Shared here so the policy and the envoy configuration report problems alike, and so neither
//! front-end depends on the other.

mod duration;
mod error;
pub mod fields;
mod text;

pub use duration::parse_duration;
pub use error::{PolicyError, PolicyErrors};
pub use text::Text;

use serde_yaml_ng::Value;
use std::collections::BTreeMap;

/// A value as YAML gives it, typed only when compiled (so every problem can be reported).
pub type Leaf = Option<Value>;
/// The keys of a map that no field took, to report as unknown.
pub type Unknown = BTreeMap<String, Value>;

/// Deserializes the whole file; a failure is the one error reported.
pub fn parse<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, PolicyErrors> {
    let de = serde_yaml_ng::Deserializer::from_str(crate::files::without_byte_order_mark(text));
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        // serde calls YAML's null (`~`, `null`) a "unit value".
        let message = e.into_inner().to_string().replace(
            "invalid type: unit value, expected",
            "null where the file needs",
        );
        // serde_yaml_ng starts its message with the path when it knows one; a syntax error has
        // none (only a line and column), whatever key the parser had reached.
        match message.strip_prefix(&format!("{path}: ")) {
            Some(rest) if path != "." => PolicyErrors::single(&path, rest),
            _ => PolicyErrors::single("", message),
        }
    })
}
