//! The parts of a store key: a keyed hash of the subject, and a limit's stable name.
//!
//! Raw identifiers never get here: the engine hashes them with the daemon's secret first.
//! Limit ids are hashed once, when a policy or envoy configuration is compiled.

use std::fmt;

/// 128 bits of a keyed hash of a subject (user id or IP). Shown as 32 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyHash(pub u128);

impl fmt::Display for KeyHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// A limit's stable name (`t:free:hourly`) and a hash of it, computed once per policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitId<'a> {
    pub name: &'a str,
    pub hash: u64,
}

impl KeyHash {
    /// One 128-bit key for (subject, limit). The subject part is already a secret-keyed hash,
    /// so a collision needs two subjects whose hashes differ by exactly this mix: 2^-128.
    pub fn with_limit(self, limit: &LimitId<'_>) -> u128 {
        let h = u128::from(limit.hash);
        self.0
            ^ (h << 64 | h.rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)
    }
}

/// The 64-bit hash of a limit id that stores mix into their keys.
pub fn hash_limit_id(id: &str) -> u64 {
    let digest = blake3::hash(id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest.as_bytes()[..8]);
    u64::from_le_bytes(first)
}
