//! The request path's side of features: each decision and report is added to the subject's
//! pending counts, which the control loop drains once per interval.
//!
//! Sharded mutexes keep recording to a short, rarely contended critical section. Memory is
//! bounded: at most [`Recorder::capacity`] subjects are tracked; past that, new subjects are not
//! recorded (counted in [`Recorder::dropped`]) until a drain makes room. A drain forgets idle
//! subjects, and when a shard is nearly full, its lightest subjects too (fewest requests): a
//! flood of made-up subjects, a request or two each, then gives way to the next newcomers
//! instead of shutting them all out for a window.

use super::lightest::Lightest;
use super::{Counters, LimitOutcome};
use crate::clock::Micros;
use crate::limit::KeyHash;
use hashbrown::HashMap;
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const SHARDS: usize = 64;

/// A subject's shard, by the top bits of its hash: each shard holds one stretch of the subjects'
/// order, so a drain that sorts each shard's subjects returns them all in order (and the
/// window, which keeps its rows in that order, reads the drained activity front to back).
fn shard_of(subject: KeyHash) -> usize {
    const SHARD_BITS: u32 = SHARDS.trailing_zeros();
    const _: () = assert!(SHARDS == 1 << SHARD_BITS);
    (subject.0 >> (u128::BITS - SHARD_BITS)) as usize
}

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

/// One shard: pending activity of the subjects active since the last drain, and when each
/// subject recently seen last made a request. Kept apart so that an idle subject costs only its
/// [`Seen`] (24 bytes, keyed by 64 bits of its hash: a collision, about one in 10^9 among a
/// shard's subjects, at worst skews one interarrival gap), not a whole pending record.
#[derive(Default)]
struct Shard {
    pending: HashMap<KeyHash, NewActivity>,
    last_seen: HashMap<u64, Seen>,
    /// Subjects in `pending` or `last_seen`, counted against the capacity.
    tracked: usize,
}

/// A tracked subject's last request, and how many of its requests were counted since it was
/// first tracked: what decides who is forgotten first when a shard is nearly full.
#[derive(Debug, Clone, Copy)]
struct Seen {
    last: Micros,
    requests: u32,
}

fn seen_key(subject: KeyHash) -> u64 {
    // The low half: the top bits pick the shard, so they are alike within one.
    subject.0 as u64
}

pub struct Recorder {
    shards: Box<[Mutex<Shard>]>,
    tracked: AtomicUsize,
    capacity: usize,
    dropped: AtomicU64,
    /// Subjects the last drain returned.
    last_drained: AtomicUsize,
}

impl Recorder {
    pub fn new(capacity: usize) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            tracked: AtomicUsize::new(0),
            capacity,
            dropped: AtomicU64::new(0),
            last_drained: AtomicUsize::new(0),
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

    /// Runs `f` on the subject's pending activity and the time of its previous request, if
    /// the subject is tracked or there is room for it.
    fn with_pending(&self, subject: KeyHash, f: impl FnOnce(&mut NewActivity, Option<Micros>)) {
        let mut shard = self.shards[shard_of(subject)].lock();
        let shard = &mut *shard;
        let seen = shard.last_seen.get(&seen_key(subject)).map(|s| s.last);
        if let Some(pending) = shard.pending.get_mut(&subject) {
            let previous = if pending.counters.requests > 0 {
                Some(pending.counters.last.max(seen.unwrap_or(0)))
            } else {
                seen
            };
            return f(pending, previous);
        }
        if seen.is_none() {
            if self.tracked.fetch_add(1, Ordering::Relaxed) >= self.capacity {
                self.tracked.fetch_sub(1, Ordering::Relaxed);
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            shard.tracked += 1;
        }
        f(shard.pending.entry(subject).or_default(), seen);
    }

    /// Records one decision about `subject` (a keyed hash: raw ids never get here).
    pub fn record_request(
        &self,
        subject: KeyHash,
        at: Micros,
        endpoint: u64,
        ip: Option<u64>,
        outcome: LimitOutcome,
    ) {
        self.with_pending(subject, |pending, previous| {
            let gap = previous.map(|last| at.saturating_sub(last));
            pending.counters.record_request(at, gap, outcome);
            insert_distinct(&mut pending.endpoints, endpoint);
            if let Some(ip) = ip {
                insert_distinct(&mut pending.ips, ip);
            }
        });
    }

    /// Records an upstream status reported for `subject` (when does not matter: a report
    /// alone keeps no subject tracked past the next drain).
    pub fn record_status(&self, subject: KeyHash, _at: Micros, status: u16) {
        self.with_pending(subject, |pending, _| pending.counters.record_status(status));
    }

    /// Takes every subject's pending activity, and forgets subjects whose last request was
    /// before `forget_before`, then the lightest of a shard past nine tenths of its share of
    /// the capacity, down to three quarters of it. The subjects come in order.
    pub fn drain(&self, forget_before: Micros) -> Vec<(KeyHash, NewActivity)> {
        let share = self.capacity / SHARDS;
        // Room for as many as last time: growing a vector of 100,000 records copies them.
        let last = self.last_drained.load(Ordering::Relaxed);
        let mut drained = Vec::with_capacity(last.saturating_add(last / 8));
        for shard in self.shards.iter() {
            let mut pending = self.take_pending(&mut shard.lock(), forget_before, share);
            // The shard's stretch of the order, sorted outside its lock: its subjects sorted,
            // then each record moved once (sorting the records would move each many times).
            let mut subjects: Vec<KeyHash> = pending
                .iter()
                .filter(|(_, a)| a.counters.requests > 0 || a.counters.reports > 0)
                .map(|(subject, _)| *subject)
                .collect();
            subjects.sort_unstable();
            drained.extend(
                subjects
                    .into_iter()
                    .filter_map(|subject| Some((subject, pending.remove(&subject)?))),
            );
        }
        self.last_drained.store(drained.len(), Ordering::Relaxed);
        drained
    }

    /// A shard's pending activity, after noting each subject's last request and forgetting
    /// the idle and, past nine tenths of `share`, the lightest.
    fn take_pending(
        &self,
        shard: &mut Shard,
        forget_before: Micros,
        share: usize,
    ) -> HashMap<KeyHash, NewActivity> {
        let pending = std::mem::take(&mut shard.pending);
        for (subject, activity) in &pending {
            let c = &activity.counters;
            if c.requests > 0 {
                let seen = shard.last_seen.entry(seen_key(*subject)).or_insert(Seen {
                    last: 0,
                    requests: 0,
                });
                seen.last = seen.last.max(c.last);
                let requests = u32::try_from(c.requests).unwrap_or(u32::MAX);
                seen.requests = seen.requests.saturating_add(requests);
            }
        }
        shard.last_seen.retain(|_, seen| seen.last >= forget_before);
        if shard.last_seen.len() > share - share / 10 {
            forget_lightest(&mut shard.last_seen, share - share / 4);
        }
        let forgotten = shard.tracked.saturating_sub(shard.last_seen.len());
        shard.tracked = shard.last_seen.len();
        self.tracked.fetch_sub(forgotten, Ordering::Relaxed);
        pending
    }
}

/// Forgets the subjects with the fewest requests until `keep` remain.
fn forget_lightest(seen: &mut HashMap<u64, Seen>, keep: usize) {
    let counts: Vec<u32> = seen.values().map(|s| s.requests).collect();
    let Some(mut lightest) = Lightest::new(counts, seen.len().saturating_sub(keep)) else {
        return;
    };
    seen.retain(|_, s| !lightest.forget(s.requests));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(n: u64) -> KeyHash {
        // Distinct low halves (the key of `last_seen`), all in shard 0.
        KeyHash(u128::from(n))
    }

    #[test]
    fn a_drain_returns_every_active_subject_once_in_subject_order() {
        let recorder = Recorder::new(10_000);
        // Spread over every shard, as keyed hashes are; each subject twice.
        let subjects: Vec<KeyHash> = (1..=2_000u128)
            .map(|n| KeyHash(n.wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)))
            .collect();
        for round in 0..2 {
            for &subject in &subjects {
                recorder.record_request(subject, round, 0, None, LimitOutcome::default());
            }
        }
        recorder.record_status(KeyHash(7), 5, 404);
        let drained = recorder.drain(0);
        let mut expected = subjects.clone();
        expected.push(KeyHash(7));
        expected.sort_unstable();
        let order: Vec<KeyHash> = drained.iter().map(|(s, _)| *s).collect();
        assert_eq!(order, expected);
        assert!(
            drained
                .iter()
                .all(|(s, a)| a.counters.requests == 2 || *s == KeyHash(7))
        );
    }

    #[test]
    fn a_nearly_full_recorder_forgets_its_lightest_subjects_and_takes_newcomers() {
        // One shard's share is 100 subjects; every subject here lands in shard 0.
        let recorder = Recorder::new(100 * SHARDS);
        let outcome = LimitOutcome::default();
        for n in 0..10 {
            for i in 0..30 {
                recorder.record_request(subject(n), i, 0, None, outcome);
            }
        }
        for n in 10..95 {
            recorder.record_request(subject(n), 0, 0, None, outcome);
        }
        recorder.drain(0);
        // 95 tracked, past 90 of 100: the one-request subjects go down to 75 in all.
        assert_eq!(recorder.tracked(), 75);
        for n in 0..10 {
            assert!(
                recorder.shards[0]
                    .lock()
                    .last_seen
                    .contains_key(&seen_key(subject(n)))
            );
        }
        // Room again: a newcomer is recorded, nothing is dropped.
        recorder.record_request(subject(1000), 5, 0, None, outcome);
        assert_eq!(recorder.dropped(), 0);
        assert_eq!(recorder.tracked(), 76);
    }

    #[test]
    fn forgetting_the_lightest_cuts_ties_to_exactly_what_must_go() {
        let mut seen: HashMap<u64, Seen> = (0..10u64)
            .map(|n| {
                (
                    n,
                    Seen {
                        last: 0,
                        requests: if n < 6 { 1 } else { 9 },
                    },
                )
            })
            .collect();
        forget_lightest(&mut seen, 7);
        assert_eq!(seen.len(), 7);
        assert_eq!(seen.values().filter(|s| s.requests == 9).count(), 4);
        forget_lightest(&mut seen, 9);
        assert_eq!(seen.len(), 7);
    }
}
