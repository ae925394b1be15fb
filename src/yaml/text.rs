//! A scalar as written: `value: 1.10` is the text "1.10", not the number 1.1.
//!
//! envoyproxy/ratelimit reads a descriptor's `value` into a string field, which takes any
//! scalar's text as written; read as a YAML number, `1.10`, `0x1F` and `1e3` would become
//! "1.1", "31" and "1000.0" and silently stop matching what Envoy sends.

use serde::de::{self, Deserialize, Deserializer, Visitor};
use std::fmt;

/// A scalar's text as written. A map or a list is refused while parsing (`expected a string`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text(pub String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Text, E> {
        Ok(Text(text.to_owned()))
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Text, E> {
        Ok(Text(value.to_string()))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Text, E> {
        Ok(Text(value.to_string()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Text, E> {
        Ok(Text(value.to_string()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Text, E> {
        Ok(Text(value.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    struct Holder {
        value: Option<Text>,
    }

    fn read(yaml: &str) -> Option<Text> {
        serde_yaml_ng::from_str::<Holder>(yaml).unwrap().value
    }

    #[test]
    fn scalars_keep_their_text() {
        for (yaml, text) in [
            ("value: 1.10", "1.10"),
            ("value: 0x1F", "0x1F"),
            ("value: 1e3", "1e3"),
            ("value: 007", "007"),
            ("value: true", "true"),
            ("value: '1.10'", "1.10"),
            ("value: /api/*", "/api/*"),
        ] {
            assert_eq!(read(yaml), Some(Text(text.to_owned())), "{yaml}");
        }
        assert_eq!(read("value: ~"), None);
        let map = serde_yaml_ng::from_str::<Holder>("value: {a: 1}").unwrap_err();
        assert_eq!(
            map.to_string(),
            "value: invalid type: map, expected a string at line 1 column 8"
        );
    }
}
