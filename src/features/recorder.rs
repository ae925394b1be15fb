//! The request path's side of features: each decision and report is added to the subject's
//! pending counts, which the control loop drains once per interval.
//!
//! Sharded mutexes keep recording to a short, rarely contended critical section. Memory is
//! bounded: at most [`Recorder::capacity`] subjects are tracked; past that, new subjects are not
//! recorded until idle ones are forgotten (counted in [`Recorder::dropped`]).

use super::Counters;
use crate::clock::Micros;
use crate::limit::KeyHash;
use hashbrown::HashMap;
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const SHARDS: usize = 64;

/// Distinct endpoint and address hashes kept per subject between two drains; more are
/// dropped (a subject walking over this many paths per interval is already unmistakable).
pub const MAX_DISTINCT_PER_INTERVAL: usize = 64;

/// One subject's activity since the last drain.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewActivity {
    pub counters: Counters,
    pub endpoints: SmallVec<[u64; 4]>,
    pub ips: SmallVec<[u64; 2]>,
}

fn insert_distinct<const N: usize>(set: &mut SmallVec<[u64; N]>, value: u64) {
    if set.len() < MAX_DISTINCT_PER_INTERVAL && !set.contains(&value) {
        set.push(value);
    }
}

#[derive(Debug, Default)]
struct Entry {
    pending: NewActivity,
    /// The subject's last request, kept across drains to measure the gap to the next one.
    last_seen: Option<Micros>,
    last_active: Micros,
}

pub struct Recorder {
    shards: Box<[Mutex<HashMap<KeyHash, Entry>>]>,
    tracked: AtomicUsize,
    capacity: usize,
    dropped: AtomicU64,
}

impl Recorder {
    pub fn new(capacity: usize) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            tracked: AtomicUsize::new(0),
            capacity,
            dropped: AtomicU64::new(0),
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Events not recorded because the recorder was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    pub fn tracked(&self) -> usize {
        self.tracked.load(Ordering::Relaxed)
    }

    fn with_entry(&self, subject: KeyHash, now: Micros, f: impl FnOnce(&mut Entry)) {
        let mut shard = self.shards[(subject.0 as usize) % SHARDS].lock();
        if let Some(entry) = shard.get_mut(&subject) {
            entry.last_active = now;
            return f(entry);
        }
        if self.tracked.fetch_add(1, Ordering::Relaxed) >= self.capacity {
            self.tracked.fetch_sub(1, Ordering::Relaxed);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let entry = shard.entry(subject).or_default();
        entry.last_active = now;
        f(entry);
    }

    /// Records one decision about `subject` (a keyed hash: raw ids never get here).
    pub fn record_request(
        &self,
        subject: KeyHash,
        at: Micros,
        endpoint: u64,
        ip: Option<u64>,
        denied: bool,
        usage: f64,
    ) {
        self.with_entry(subject, at, |entry| {
            let gap = entry.last_seen.map(|last| at.saturating_sub(last));
            entry.last_seen = Some(entry.last_seen.map_or(at, |last| last.max(at)));
            let pending = &mut entry.pending;
            pending.counters.record_request(at, gap, denied, usage);
            insert_distinct(&mut pending.endpoints, endpoint);
            if let Some(ip) = ip {
                insert_distinct(&mut pending.ips, ip);
            }
        });
    }

    /// Records an upstream status reported for `subject`.
    pub fn record_status(&self, subject: KeyHash, at: Micros, status: u16) {
        self.with_entry(subject, at, |entry| {
            entry.pending.counters.record_status(status)
        });
    }

    /// Takes every subject's pending activity, and forgets subjects idle since `forget_before`.
    pub fn drain(&self, forget_before: Micros) -> Vec<(KeyHash, NewActivity)> {
        let mut drained = Vec::new();
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            let before = shard.len();
            shard.retain(|subject, entry| {
                let pending = std::mem::take(&mut entry.pending);
                let active = pending.counters.requests > 0 || pending.counters.reports > 0;
                if active {
                    drained.push((*subject, pending));
                }
                active || entry.last_active >= forget_before
            });
            self.tracked
                .fetch_sub(before - shard.len(), Ordering::Relaxed);
        }
        drained
    }
}
