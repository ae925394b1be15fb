//! Stored tiers: the tier store's use cases, and the local cache in front of it so a remote
//! store is not asked on every request.

use super::{CheckRequest, Engine};
use crate::limit::KeyHash;
use crate::metrics::Metrics;
use crate::store::{Store, StoreError};
use moka::future::Cache;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// How long a looked-up tier (or its absence) is trusted: an operator's change reaches every
/// daemon within this time (and the daemon that made it at once).
pub const TIER_CACHE_TTL: Duration = Duration::from_secs(10);
const TIER_CACHE_ENTRIES: u64 = 100_000;

pub struct TierCache {
    cache: Cache<KeyHash, Option<Arc<str>>>,
    metrics: Arc<Metrics>,
}

impl TierCache {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            cache: Cache::builder()
                .max_capacity(TIER_CACHE_ENTRIES)
                .time_to_live(TIER_CACHE_TTL)
                .build(),
            metrics,
        }
    }

    /// The cached tier, else what `lookup` says (cached unless the store failed).
    pub async fn get<F, Fut>(&self, subject: KeyHash, lookup: F) -> Option<Arc<str>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Option<String>, StoreError>>,
    {
        if let Some(tier) = self.cache.get(&subject).await {
            self.metrics
                .tier_cache_requests
                .with_label_values(&["hit"])
                .inc();
            return tier;
        }
        self.metrics
            .tier_cache_requests
            .with_label_values(&["miss"])
            .inc();
        match lookup().await {
            Ok(tier) => {
                let tier: Option<Arc<str>> = tier.map(Into::into);
                self.cache.insert(subject, tier.clone()).await;
                tier
            }
            Err(error) => {
                self.lookup_failed(&error, 1);
                None
            }
        }
    }

    /// The tiers of several subjects: cached ones from the cache, the others with one
    /// `lookup` of all of them (one round trip for a whole batch).
    pub async fn get_many<F, Fut>(&self, subjects: &[KeyHash], lookup: F) -> Vec<Option<Arc<str>>>
    where
        F: FnOnce(Vec<KeyHash>) -> Fut,
        Fut: Future<Output = Result<Vec<Option<String>>, StoreError>>,
    {
        let mut found = Vec::with_capacity(subjects.len());
        let mut missing = Vec::new();
        for subject in subjects {
            match self.cache.get(subject).await {
                Some(tier) => {
                    self.metrics
                        .tier_cache_requests
                        .with_label_values(&["hit"])
                        .inc();
                    found.push(tier);
                }
                None => {
                    self.metrics
                        .tier_cache_requests
                        .with_label_values(&["miss"])
                        .inc();
                    found.push(None);
                    if !missing.contains(subject) {
                        missing.push(*subject);
                    }
                }
            }
        }
        if missing.is_empty() {
            return found;
        }
        match lookup(missing.clone()).await {
            Ok(tiers) => {
                for (subject, tier) in missing.iter().zip(tiers) {
                    let tier: Option<Arc<str>> = tier.map(Into::into);
                    self.cache.insert(*subject, tier.clone()).await;
                    for (i, s) in subjects.iter().enumerate() {
                        if s == subject {
                            found[i] = tier.clone();
                        }
                    }
                }
            }
            Err(error) => self.lookup_failed(&error, missing.len()),
        }
        found
    }

    /// Counted, and logged at `debug` only: a slow store would otherwise log every request.
    fn lookup_failed(&self, error: &StoreError, subjects: usize) {
        self.metrics.tier_lookup_errors.inc_by(subjects as u64);
        tracing::debug!(%error, "tier store failed; using the default tier");
    }

    pub async fn forget(&self, subject: KeyHash) {
        self.cache.invalidate(&subject).await;
    }
}

impl<S: Store> Engine<S> {
    /// The tier stored for a user, through the local cache; `None` when none is stored or the
    /// store cannot say (the default tier applies then).
    pub async fn stored_tier(&self, user: &str) -> Option<Arc<str>> {
        if !self.store.has_tiers() {
            return None;
        }
        self.stored_tier_by_hash(self.hasher.user(user)).await
    }

    /// The tier stored for a subject's keyed hash, through the local cache.
    pub(super) async fn stored_tier_by_hash(&self, subject: KeyHash) -> Option<Arc<str>> {
        if !self.store.has_tiers() {
            return None;
        }
        self.tiers.get(subject, || self.store.tier(subject)).await
    }

    /// The tier stored for a request that names none (a named tier needs no lookup).
    pub(super) async fn stored_tier_of(&self, request: &CheckRequest<'_>) -> Option<Arc<str>> {
        match request.tier {
            Some(_) => None,
            None => self.stored_tier(request.user).await,
        }
    }

    /// The stored tiers of a batch's users (those without a `tier`), in one lookup.
    pub(super) async fn stored_tiers(
        &self,
        requests: &[CheckRequest<'_>],
    ) -> Vec<Option<Arc<str>>> {
        if !self.store.has_tiers() {
            return vec![None; requests.len()];
        }
        let asking: Vec<usize> = (0..requests.len())
            .filter(|&i| requests[i].tier.is_none())
            .collect();
        let subjects: Vec<KeyHash> = asking
            .iter()
            .map(|&i| self.hasher.user(requests[i].user))
            .collect();
        let found = self
            .tiers
            .get_many(&subjects, |missing| async move {
                self.store.tiers(&missing).await
            })
            .await;
        let mut stored = vec![None; requests.len()];
        for (i, tier) in asking.into_iter().zip(found) {
            stored[i] = tier;
        }
        stored
    }

    /// Stores (or removes) a user's tier; the local cache forgets it at once.
    pub async fn set_stored_tier(
        &self,
        user: &str,
        tier: Option<&str>,
    ) -> Result<KeyHash, SetTierError> {
        let subject = self.hasher.user(user);
        self.set_stored_tier_by_hash(subject, tier).await?;
        Ok(subject)
    }

    /// As [`Engine::set_stored_tier`], for a subject's keyed hash (the flagged list's).
    pub async fn set_stored_tier_by_hash(
        &self,
        subject: KeyHash,
        tier: Option<&str>,
    ) -> Result<(), SetTierError> {
        if let Some(name) = tier {
            if self.policy().tier_index(name).is_none() {
                return Err(SetTierError::UnknownTier(name.to_owned()));
            }
        }
        self.store.set_tier(subject, tier).await?;
        self.tiers.forget(subject).await;
        Ok(())
    }
}

/// Why a tier could not be stored.
#[derive(Debug, thiserror::Error)]
pub enum SetTierError {
    #[error("unknown tier \"{0}\"")]
    UnknownTier(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}
