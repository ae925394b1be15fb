//! The local cache in front of the tier store, so a remote store is not asked on every request.

use crate::limit::KeyHash;
use crate::metrics::Metrics;
use crate::store::StoreError;
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
                tracing::debug!(%error, "tier store failed; using the default tier");
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
            Err(error) => tracing::debug!(%error, "tier store failed; using the default tier"),
        }
        found
    }

    pub async fn forget(&self, subject: KeyHash) {
        self.cache.invalidate(&subject).await;
    }
}
