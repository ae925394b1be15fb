//! Policy errors: each names its path in the file, and a policy reports all of them at once.

use std::fmt;

/// One problem in a policy file, e.g. `tiers.free.limits[1].requests: must be at least 1`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
pub struct PolicyError {
    pub path: String,
    pub message: String,
}

/// Every problem found in one policy file, in file order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct PolicyErrors(pub Vec<PolicyError>);

impl PolicyErrors {
    pub fn single(path: &str, message: impl Into<String>) -> Self {
        PolicyErrors(vec![PolicyError {
            path: path.to_owned(),
            message: message.into(),
        }])
    }

    /// The messages, one per line, as `check-policy` prints them.
    pub fn lines(&self) -> Vec<String> {
        self.0.iter().map(ToString::to_string).collect()
    }

    /// The messages after a `policy FILE:` heading: one on the heading's line, several one per
    /// line below it (an unreadable file is one message, and reads as one line).
    pub fn after_heading(&self) -> String {
        match self.0.as_slice() {
            [only] => format!(" {only}"),
            _ => format!("\n{self}"),
        }
    }
}

impl fmt::Display for PolicyErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.lines().join("\n"))
    }
}
