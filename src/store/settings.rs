//! What a daemon's store is: where it lives, how long a call may take, how keys are named, and
//! what decisions do while it fails.
//!
//! The store owns these settings (the policy file's `store:` section compiles into them) so
//! that opening a store needs nothing from the policy.

use super::{StoreUrl, TlsCa};
use std::num::NonZeroU64;
use std::time::Duration;

/// The `store:` section of a policy, valid by construction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSettings {
    pub url: StoreUrl,
    /// The CA that TLS server certificates must chain to instead of the system's roots
    /// (`store.tls_ca`; only with a TLS URL).
    pub tls_ca: Option<TlsCa>,
    pub on_error: OnError,
    pub timeout: Duration,
    pub key_prefix: String,
    /// The most keys the embedded store tracks at once (see README, "Memory").
    pub max_keys: NonZeroU64,
}

/// What a decision does while the store fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    Allow,
    Deny,
    Local,
}

impl OnError {
    /// As the policy file writes it.
    pub fn label(self) -> &'static str {
        match self {
            OnError::Allow => "allow",
            OnError::Deny => "deny",
            OnError::Local => "local",
        }
    }
}
