//! The embedded store (`memory://`): sharded maps of per-key state, each key expiring when its
//! state has fully decayed, with a hard cap on tracked keys.
//!
//! A request locks the shards of its keys in ascending order (so two requests never wait on
//! each other in a cycle), evaluates every check, and consumes only if all enforced checks
//! pass: all or nothing, with no lock held across an await.

use super::{Applied, Check, CheckResult, Request, Store, StoreError, StoreKind};
use crate::algorithm::{self, State};
use crate::clock::{Clock, Micros};
use crate::limit::{KeyHash, Rate};
use hashbrown::HashMap;
use parking_lot::{Mutex, MutexGuard, RwLock};
use smallvec::SmallVec;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const SHARDS: usize = 256;

struct Slot {
    state: Option<State>,
    expires_at: Micros,
}

#[derive(Default)]
struct Shard {
    slots: HashMap<u128, Slot>,
}

impl Shard {
    fn live(&self, key: u128, now: Micros) -> Option<&State> {
        self.slots
            .get(&key)
            .filter(|s| s.expires_at > now)
            .and_then(|s| s.state.as_ref())
    }

    fn sweep(&mut self, now: Micros) {
        self.slots.retain(|_, s| s.expires_at > now);
    }
}

/// The embedded, in-process store.
pub struct MemoryStore {
    shards: Box<[Mutex<Shard>]>,
    /// The tier store: subject hash to tier name.
    tiers: RwLock<HashMap<KeyHash, String>>,
    any_tiers: AtomicBool,
    clock: Arc<dyn Clock>,
    max_keys_per_shard: usize,
    /// When the store last logged that it is full: it says so once a minute, not per request.
    full_logged_at: AtomicU64,
}

/// How often a full store says so in the log.
const FULL_LOG_EVERY: Micros = 60_000_000;

impl MemoryStore {
    /// A store reading time from `clock` that tracks at most about `max_keys` keys.
    pub fn new(clock: Arc<dyn Clock>, max_keys: u64) -> Self {
        let per_shard = usize::try_from(max_keys.div_ceil(SHARDS as u64)).unwrap_or(usize::MAX);
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            tiers: RwLock::default(),
            any_tiers: AtomicBool::new(false),
            clock,
            max_keys_per_shard: per_shard.max(1),
            full_logged_at: AtomicU64::new(0),
        }
    }

    /// Drops every key whose state has fully decayed. The daemon calls it every second; keys
    /// are also swept from a shard that would otherwise refuse a new key.
    pub fn sweep_expired(&self) {
        let now = self.clock.now();
        for shard in self.shards.iter() {
            shard.lock().sweep(now);
        }
    }

    /// Keys tracked now (expired ones included until swept).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().slots.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Both halves of the key count: a key's low bits are its subject's alone (the limit's
    /// mix leaves them zero), which once put every key of a subject in one shard.
    fn shard_of(key: u128) -> usize {
        (((key >> 64) as u64 ^ key as u64) as usize) % SHARDS
    }

    /// Applies one request under the locks of its shards.
    pub fn apply_now(&self, request: &Request<'_>) -> Result<Applied, StoreError> {
        let keys: SmallVec<[u128; 4]> = request
            .checks
            .iter()
            .map(|c| c.subject.with_limit(&c.limit))
            .collect();
        let mut shard_ids: SmallVec<[usize; 4]> = keys.iter().map(|k| Self::shard_of(*k)).collect();
        shard_ids.sort_unstable();
        shard_ids.dedup();
        let mut guards: SmallVec<[(usize, MutexGuard<'_, Shard>); 4]> = shard_ids
            .iter()
            .map(|&i| (i, self.shards[i].lock()))
            .collect();
        let now = self.clock.now();
        let guard_of: SmallVec<[usize; 4]> = keys
            .iter()
            .map(|k| {
                shard_ids
                    .binary_search(&Self::shard_of(*k))
                    .unwrap_or_default()
            })
            .collect();

        let mut checks = super::CheckResults::new();
        let mut admitted = true;
        for ((check, &key), &at) in request.checks.iter().zip(&keys).zip(&guard_of) {
            let result = evaluate(guards[at].1.live(key, now), now, check);
            admitted &= result.outcome.allowed || !check.enforce;
            checks.push(result);
        }
        if admitted && !request.dry_run {
            self.make_room(&mut guards, &keys, now)?;
            for ((check, &key), &at) in request.checks.iter().zip(&keys).zip(&guard_of) {
                let slot = guards[at].1.slots.entry(key).or_insert(Slot {
                    state: None,
                    expires_at: 0,
                });
                if slot.expires_at <= now {
                    slot.state = None;
                }
                let decayed = algorithm::consume(&mut slot.state, now, &check.rate, check.cost);
                slot.expires_at = decayed.max(algorithm::decayed_at_slowest(
                    &slot.state,
                    &check.rate,
                    check.slowest,
                ));
            }
        }
        Ok(Applied { admitted, checks })
    }

    /// Ensures every new key of a request fits under the cap, sweeping full shards first.
    /// Warns that a shard is full, at most once a minute: requests of new subjects are denied
    /// meanwhile, and a metric alone is easy to miss.
    fn log_full(&self, now: Micros) {
        let last = self.full_logged_at.load(Ordering::Relaxed);
        let due = last == 0 || now.saturating_sub(last) >= FULL_LOG_EVERY;
        if due
            && self
                .full_logged_at
                .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(
                max_keys_per_shard = self.max_keys_per_shard,
                "the embedded store is full and none of its keys has expired: requests that need \
                 a new key are denied until some expire; raise store.max_keys"
            );
        }
    }

    fn make_room(
        &self,
        guards: &mut [(usize, MutexGuard<'_, Shard>)],
        keys: &[u128],
        now: Micros,
    ) -> Result<(), StoreError> {
        for (id, shard) in guards.iter_mut() {
            let new_keys = keys
                .iter()
                .filter(|k| Self::shard_of(**k) == *id && !shard.slots.contains_key(*k))
                .count();
            if shard.slots.len() + new_keys > self.max_keys_per_shard {
                shard.sweep(now);
                if shard.slots.len() + new_keys > self.max_keys_per_shard {
                    self.log_full(now);
                    return Err(StoreError::Full);
                }
            }
        }
        Ok(())
    }
}

fn evaluate(state: Option<&State>, now: Micros, check: &Check<'_>) -> CheckResult {
    let outcome = algorithm::peek(state, now, &check.rate, check.cost);
    let at = |rate: &Option<Rate>| match rate {
        Some(rate) => algorithm::peek(state, now, rate, check.cost),
        None => outcome,
    };
    let probes = [at(&check.probes[0]), at(&check.probes[1])];
    // The limit as written is often a probe's rate already (a factor of 1 on the other side).
    let written = match check.written {
        Some(rate) if check.probes[0] == Some(rate) => probes[0],
        Some(rate) if check.probes[1] == Some(rate) => probes[1],
        written => at(&written),
    };
    CheckResult {
        outcome,
        probes: probes.map(|p| p.allowed),
        written: written.into(),
    }
}

impl Store for MemoryStore {
    fn kind(&self) -> StoreKind {
        StoreKind::Memory
    }

    async fn apply(&self, request: &Request<'_>) -> Result<Applied, StoreError> {
        self.apply_now(request)
    }

    async fn apply_batch(&self, requests: &[Request<'_>]) -> Vec<Result<Applied, StoreError>> {
        requests.iter().map(|r| self.apply_now(r)).collect()
    }

    async fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn has_tiers(&self) -> bool {
        self.any_tiers.load(Ordering::Relaxed)
    }

    async fn tier(&self, subject: KeyHash) -> Result<Option<String>, StoreError> {
        Ok(self.tiers.read().get(&subject).cloned())
    }

    async fn tiers(&self, subjects: &[KeyHash]) -> Result<Vec<Option<String>>, StoreError> {
        let tiers = self.tiers.read();
        Ok(subjects.iter().map(|s| tiers.get(s).cloned()).collect())
    }

    async fn set_tier(&self, subject: KeyHash, tier: Option<&str>) -> Result<(), StoreError> {
        let mut tiers = self.tiers.write();
        match tier {
            Some(tier) => tiers.insert(subject, tier.to_owned()),
            None => tiers.remove(&subject),
        };
        self.any_tiers.store(!tiers.is_empty(), Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit::{KeyHash, LimitId, hash_limit_id};

    /// One subject's keys spread over the shards like anyone's: all in one shard, a store of
    /// 2 keys a shard refused a subject's first request of 3 limits.
    #[test]
    fn a_subject_s_keys_spread_over_the_shards() {
        let subject = KeyHash(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);
        let shards: std::collections::BTreeSet<usize> = (0..32)
            .map(|i| {
                let id = format!("t:free:limit{i}");
                let limit = LimitId {
                    name: &id,
                    hash: hash_limit_id(&id),
                };
                MemoryStore::shard_of(subject.with_limit(&limit))
            })
            .collect();
        assert!(shards.len() > 24, "{shards:?}");
    }
}
