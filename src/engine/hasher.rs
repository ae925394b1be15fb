//! Keyed hashing of subjects: what stores and metrics see instead of user ids and addresses.
//!
//! BLAKE3 in keyed mode with a key derived from `RATEWARDEN_HASH_KEY`, so a dump of the store
//! reveals nothing without the secret, and every daemon with the same secret agrees on keys.

use crate::limit::KeyHash;
use quick_cache::sync::Cache;
use std::net::IpAddr;
use std::sync::Arc;

const CONTEXT: &str = "ratewarden 2026-11-22 subject keys";

/// Bytes hashed before a value, so equal bytes of different kinds (a user id and an address,
/// an endpoint and an address) never share a hash.
mod tag {
    pub const USER: u8 = b'u';
    pub const IPV4: u8 = b'4';
    pub const IPV6: u8 = b'6';
    pub const DESCRIPTOR: u8 = b'd';
    pub const ENDPOINT: u8 = b'e';
}

/// How many users' hashes are kept: hot subjects then skip BLAKE3, a third of a decision.
const CACHED_USERS: usize = 1 << 16;

#[derive(Clone)]
pub struct SubjectHasher {
    key: [u8; 32],
    /// A SipHash key for feature values (endpoints, addresses): keyed like the rest, so a
    /// shared store's distinct-count sketches reveal nothing, but several times faster.
    feature_key: (u64, u64),
    /// Recently seen user ids and their hashes, in process memory only.
    users: Arc<Cache<Box<str>, KeyHash>>,
}

impl std::fmt::Debug for SubjectHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubjectHasher(..)")
    }
}

impl SubjectHasher {
    /// Derives the hashing key from an operator's secret (any non-empty string).
    pub fn from_secret(secret: &str) -> Self {
        Self::with_key(blake3::derive_key(CONTEXT, secret.as_bytes()))
    }

    /// A key of this process only: keys then differ between instances.
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        if getrandom::fill(&mut key).is_err() {
            // No OS randomness: fall back on what differs between processes and runs.
            let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
            key = blake3::derive_key(CONTEXT, seed.as_bytes());
        }
        Self::with_key(key)
    }

    fn with_key(key: [u8; 32]) -> Self {
        let derived = blake3::derive_key("ratewarden 2026-11-22 feature values", &key);
        let half = |i: usize| {
            let mut word = [0u8; 8];
            word.copy_from_slice(&derived[i..i + 8]);
            u64::from_le_bytes(word)
        };
        Self {
            key,
            feature_key: (half(0), half(8)),
            users: Arc::new(Cache::new(CACHED_USERS)),
        }
    }

    fn hash(&self, tag: u8, bytes: &[u8]) -> KeyHash {
        // Most ids are short: hash them in one call from the stack, which is much faster than
        // an incremental hasher for a single block.
        let mut buffer = [0u8; 64];
        let digest = if bytes.len() < buffer.len() {
            buffer[0] = tag;
            buffer[1..=bytes.len()].copy_from_slice(bytes);
            blake3::keyed_hash(&self.key, &buffer[..=bytes.len()])
        } else {
            let mut hasher = blake3::Hasher::new_keyed(&self.key);
            hasher.update(&[tag]);
            hasher.update(bytes);
            hasher.finalize()
        };
        let mut first = [0u8; 16];
        first.copy_from_slice(&digest.as_bytes()[..16]);
        KeyHash(u128::from_le_bytes(first))
    }

    pub fn user(&self, user: &str) -> KeyHash {
        if let Some(hash) = self.users.get(user) {
            return hash;
        }
        let hash = self.hash(tag::USER, user.as_bytes());
        self.users.insert(user.into(), hash);
        hash
    }

    /// IPv4-mapped IPv6 addresses hash as their IPv4 form: one client, one key.
    pub fn ip(&self, ip: IpAddr) -> KeyHash {
        match ip.to_canonical() {
            IpAddr::V4(v4) => self.hash(tag::IPV4, &v4.octets()),
            IpAddr::V6(v6) => self.hash(tag::IPV6, &v6.octets()),
        }
    }

    /// A hash for other identifiers (Envoy descriptor values), kept apart from users and IPs.
    pub fn other(&self, domain: &str, value: &str) -> KeyHash {
        let mut hasher = blake3::Hasher::new_keyed(&self.key);
        hasher.update(&[tag::DESCRIPTOR]);
        hasher.update(&(domain.len() as u64).to_le_bytes());
        hasher.update(domain.as_bytes());
        hasher.update(value.as_bytes());
        let mut first = [0u8; 16];
        first.copy_from_slice(&hasher.finalize().as_bytes()[..16]);
        KeyHash(u128::from_le_bytes(first))
    }

    /// The keyed 64-bit hash of an endpoint path (a feature value).
    pub fn feature_endpoint(&self, endpoint: &str) -> u64 {
        self.feature(tag::ENDPOINT, endpoint.as_bytes())
    }

    /// A 64-bit keyed hash of a feature value (an endpoint path, an address).
    fn feature(&self, tag: u8, bytes: &[u8]) -> u64 {
        use std::hash::Hasher;
        let mut hasher =
            siphasher::sip::SipHasher13::new_with_keys(self.feature_key.0, self.feature_key.1);
        hasher.write_u8(tag);
        hasher.write(bytes);
        hasher.finish()
    }

    /// The keyed 64-bit hash of an address, in its canonical form (a feature value).
    pub fn feature_ip(&self, ip: IpAddr) -> u64 {
        match ip.to_canonical() {
            IpAddr::V4(v4) => self.feature(tag::IPV4, &v4.octets()),
            IpAddr::V6(v6) => self.feature(tag::IPV6, &v6.octets()),
        }
    }
}

/// Any non-empty string. An empty one is refused rather than read as unset: a secret that a
/// template or a missing file left empty would give each daemon its own random key, so daemons
/// sharing a Redis would each count apart.
pub fn hash_key(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err(
            "the hash key (--hash-key, RATEWARDEN_HASH_KEY) is empty: set a secret, or leave it unset"
                .into(),
        );
    }
    Ok(text.to_owned())
}
