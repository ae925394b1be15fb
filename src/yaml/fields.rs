//! Reading raw leaves into typed values, recording an error with its path for each bad one.

use super::parse_duration;
use super::{Leaf, Unknown};
use super::{PolicyError, PolicyErrors};
use serde_yaml_ng::Value;
use std::time::Duration;

/// The errors found so far while compiling one file.
#[derive(Debug, Default)]
pub struct Errors(Vec<PolicyError>);

/// `parent.key`, or `key` at the top.
pub fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

impl Errors {
    pub fn push(&mut self, path: &str, message: impl Into<String>) {
        self.0.push(PolicyError {
            path: path.to_owned(),
            message: message.into(),
        });
    }

    /// How many errors were found so far.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no error was found so far.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn finish<T>(self, value: T) -> Result<T, PolicyErrors> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(PolicyErrors(self.0))
        }
    }

    pub fn unknown_keys(&mut self, path: &str, unknown: &Unknown, known: &[&str]) {
        for key in unknown.keys() {
            let problem = if key == "<<" {
                // What an anchor's map was merged in with: the keys it would bring are then
                // reported missing too, so say why.
                "YAML merge keys (<<) are not supported: write the keys out".to_owned()
            } else {
                format!("unknown key (expected one of {})", known.join(", "))
            };
            self.push(&join(path, key), problem);
        }
    }

    pub fn required<'a>(&mut self, path: &str, leaf: &'a Leaf) -> Option<&'a Value> {
        match leaf {
            None | Some(Value::Null) => {
                self.push(path, "is required");
                None
            }
            Some(v) => Some(v),
        }
    }

    pub fn string(&mut self, path: &str, value: &Value) -> Option<String> {
        match value {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::String(_) => {
                self.push(path, "must not be empty");
                None
            }
            _ => {
                self.push(path, "must be a string");
                None
            }
        }
    }

    pub fn boolean(&mut self, path: &str, leaf: &Leaf, default: bool) -> bool {
        match leaf {
            None | Some(Value::Null) => default,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                self.push(path, "must be true or false");
                default
            }
        }
    }

    /// A whole number in `min..=max`.
    pub fn count(&mut self, path: &str, value: &Value, min: u64, max: u64) -> Option<u64> {
        let n = match value {
            Value::Number(n) if n.is_i64() || n.is_u64() => {
                n.as_i64().map_or(i128::from(u64::MAX), i128::from)
            }
            Value::Number(n) => {
                // YAML reads `1e3` and `10.0` as decimals: say what to write instead, unless
                // the number is out of range anyway (then say that, as for a whole one).
                // Compared as integers: `u64::MAX as f64` rounds up to 2^64, a value over it.
                let whole = n.as_f64().filter(|f| f.fract() == 0.0);
                match whole {
                    Some(f) if (f as i128) < i128::from(min) => {
                        self.push(path, format!("must be at least {min}"))
                    }
                    Some(f) if (f as i128) > i128::from(max) => {
                        self.push(path, format!("must be at most {max}"))
                    }
                    Some(f) => self.push(
                        path,
                        format!(
                            "must be written as the whole number {}, without a decimal \
                             point or exponent",
                            f as i128
                        ),
                    ),
                    None => self.push(path, "must be a whole number"),
                }
                return None;
            }
            _ => {
                self.push(path, "must be a number");
                return None;
            }
        };
        if n < i128::from(min) {
            self.push(path, format!("must be at least {min}"));
            None
        } else if n > i128::from(max) {
            self.push(path, format!("must be at most {max}"));
            None
        } else {
            u64::try_from(n).ok()
        }
    }

    /// A number that `check` accepts; `check` returns the message for a value out of range.
    pub fn number(
        &mut self,
        path: &str,
        leaf: &Leaf,
        default: f64,
        check: impl Fn(f64) -> Option<&'static str>,
    ) -> f64 {
        let value = match leaf {
            None | Some(Value::Null) => return default,
            Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
            Some(_) => {
                self.push(path, "must be a number");
                return default;
            }
        };
        match check(value) {
            Some(problem) if value.is_finite() => {
                self.push(path, problem);
                default
            }
            _ if !value.is_finite() => {
                self.push(path, "must be a finite number");
                default
            }
            _ => value,
        }
    }

    /// A duration within `max`, `default` when absent.
    pub fn duration(
        &mut self,
        path: &str,
        leaf: &Leaf,
        default: Duration,
        allow_zero: bool,
    ) -> Duration {
        let text = match leaf {
            None | Some(Value::Null) => return default,
            Some(Value::String(s)) => s.as_str(),
            Some(_) => {
                self.push(path, "must be a duration such as 500ms, 30s, 5m, 1h or 1d");
                return default;
            }
        };
        match parse_duration(text) {
            Ok(d) if d.is_zero() && !allow_zero => {
                self.push(path, "must be longer than 0");
                default
            }
            Ok(d) if d > MAX_DURATION => {
                self.push(path, "must be at most 366d");
                default
            }
            Ok(d) => d,
            Err(message) => {
                self.push(path, message);
                default
            }
        }
    }
}

/// The longest window or duration a policy may name (keeps every computation in range).
pub const MAX_DURATION: Duration = Duration::from_secs(366 * 86_400);

#[cfg(test)]
mod tests {
    use super::*;

    fn count_message(yaml: &str, min: u64, max: u64) -> String {
        let value: Value = serde_yaml_ng::from_str(yaml).expect("a YAML number");
        let mut e = Errors::default();
        assert_eq!(e.count("n", &value, min, max), None);
        PolicyErrors(e.0).lines().join("; ")
    }

    #[test]
    fn a_whole_decimal_out_of_range_says_so_even_at_the_edge_of_u64() {
        // u64::MAX as f64 is 2^64, one past u64::MAX: still "at most".
        assert_eq!(
            count_message("18446744073709551615.0", 0, u64::MAX),
            format!("n: must be at most {}", u64::MAX)
        );
        assert_eq!(count_message("1e30", 1, 1_000), "n: must be at most 1000");
        assert_eq!(count_message("-3.0", 1, 1_000), "n: must be at least 1");
        assert_eq!(
            count_message("-0.0", 0, 10),
            "n: must be written as the whole number 0, without a decimal point or exponent"
        );
        assert_eq!(count_message("2.5", 0, 10), "n: must be a whole number");
        assert_eq!(count_message(".inf", 0, 10), "n: must be a whole number");
    }
}
