//! The leader's copy of the fleet's activity window, built from what every daemon appended to
//! the bucket lists and read a little more each cycle (only the values appended since the last
//! read), so a cycle reads the fleet's new activity, not every subject of the window again.

use super::fleet_codec::decode_activity;
use super::fleet_state::{Bucket, ListTail};
use crate::clock::Micros;
use crate::features::window::{bucket_len, oldest_bucket};
use crate::features::{ActivityWindow, SubjectFeatures};
use crate::limit::KeyHash;
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

pub struct FleetWindow {
    window: ActivityWindow,
    length: Duration,
    /// Per bucket index, what of its list is merged into `window`.
    merged: BTreeMap<u64, Merged>,
}

/// What of one bucket's list is merged: how many of its values to skip when reading it, and a
/// digest of every value merged, so a list read again from its start adds nothing twice.
#[derive(Default)]
struct Merged {
    read: usize,
    digests: HashSet<Digest>,
}

/// The first 16 bytes of a value's BLAKE3 hash. Every value holds its subjects' first and
/// last request times in microseconds: two uploads are never equal bytes.
type Digest = [u8; 16];

fn digest(value: &[u8]) -> Digest {
    let mut out = [0; 16];
    out.copy_from_slice(&blake3::hash(value).as_bytes()[..16]);
    out
}

impl FleetWindow {
    pub fn new(length: Duration) -> Self {
        Self {
            window: ActivityWindow::new(length),
            length,
            merged: BTreeMap::new(),
        }
    }

    /// The bucket length of `length`'s window.
    pub fn bucket_len(length: Duration) -> Micros {
        bucket_len(length)
    }

    pub fn length(&self) -> Duration {
        self.length
    }

    /// The buckets of the window at `now`, each with the index to read its list from (0 for a
    /// bucket not read yet); forgets the buckets that left the window.
    pub fn buckets_to_read(&mut self, now: Micros) -> Vec<(Bucket, usize)> {
        let len = self.window.bucket_len();
        let oldest = oldest_bucket(now, len);
        self.merged.retain(|index, _| *index >= oldest);
        (oldest..=now / len)
            .map(|index| {
                let from = self.merged.get(&index).map_or(0, |m| m.read);
                (Bucket { len, index }, from)
            })
            .collect()
    }

    /// Merges the values read for `asked` (in its order); how many were not understood.
    ///
    /// A list shorter than what was read of it changed under the reader: Redis restarted or
    /// was flushed (a new list), or a failover lost its newest values (the same list, cut
    /// short). Either way it is read again from its start next time, and only values not
    /// merged before are merged: what was merged of the old list stays, once.
    pub fn merge(&mut self, asked: &[(Bucket, usize)], tails: Vec<ListTail>) -> usize {
        let mut refused = 0;
        for ((bucket, from), (len, values)) in asked.iter().zip(tails) {
            let merged = self.merged.entry(bucket.index).or_default();
            if len < *from {
                merged.read = 0;
                continue;
            }
            merged.read = from + values.len();
            for value in values {
                if !merged.digests.insert(digest(&value)) {
                    continue;
                }
                let Ok(items) = decode_activity(&value) else {
                    refused += 1;
                    continue;
                };
                self.window.add_all_to_bucket(bucket.index, &items);
            }
        }
        refused
    }

    /// Every subject with requests in the window at `now`, and its features.
    pub fn observed(&mut self, now: Micros) -> Vec<(KeyHash, SubjectFeatures)> {
        self.window.expire(now);
        // As a daemon's own window: what the daemons' recorders let in stays bounded.
        self.window.forget_lightest(crate::engine::TRACKED_SUBJECTS);
        self.window
            .totals(now)
            .map(|(subject, activity)| (subject, super::observe(&activity)))
            .filter(|(_, observed)| observed.requests > 0)
            .collect()
    }
}
