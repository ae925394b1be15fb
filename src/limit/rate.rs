//! Which algorithm a limit uses, and the effective rate one check sees.
//!
//! Plain values, below the algorithms: the policy states them, stores carry them, and
//! the algorithms compute with them.

use crate::clock::Micros;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Which algorithm a limit uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    SlidingLog,
    SlidingWindow,
    FixedWindow,
    TokenBucket,
    Gcra,
}

impl Algorithm {
    pub const ALL: [Algorithm; 5] = [
        Algorithm::SlidingLog,
        Algorithm::SlidingWindow,
        Algorithm::FixedWindow,
        Algorithm::TokenBucket,
        Algorithm::Gcra,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::SlidingLog => "sliding_log",
            Algorithm::SlidingWindow => "sliding_window",
            Algorithm::FixedWindow => "fixed_window",
            Algorithm::TokenBucket => "token_bucket",
            Algorithm::Gcra => "gcra",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Whether the reported limit is the burst (bucket capacity) rather than `requests`.
    pub fn reports_burst(self) -> bool {
        matches!(self, Algorithm::TokenBucket | Algorithm::Gcra)
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An effective rate: a limit after scaling, as one check sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub algorithm: Algorithm,
    /// Window length in microseconds, at least 1.
    pub window: Micros,
    /// Requests per window (0 denies everything).
    pub requests: u64,
    /// Bucket capacity for `token_bucket` and `gcra`; ignored by the others.
    pub burst: u64,
}

impl Rate {
    /// The number a client sees as `limit`.
    pub fn capacity(&self) -> u64 {
        if self.algorithm.reports_burst() {
            self.burst
        } else {
            self.requests
        }
    }
}
