//! The leader's copy of the fleet's activity window, built from what every daemon appended to
//! the bucket lists and read a little more each cycle (only the values appended since the last
//! read), so a cycle reads the fleet's new activity, not every subject of the window again.

use super::fleet_codec::decode_activity;
use super::fleet_state::{Bucket, ListTail};
use crate::clock::Micros;
use crate::features::window::{bucket_len, oldest_bucket};
use crate::features::{ActivityWindow, SubjectFeatures};
use crate::limit::KeyHash;
use std::collections::BTreeMap;
use std::time::Duration;

pub struct FleetWindow {
    window: ActivityWindow,
    length: Duration,
    /// Per bucket index, how many values of its list are merged into `window`.
    merged: BTreeMap<u64, usize>,
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
                let from = self.merged.get(&index).copied().unwrap_or(0);
                (Bucket { len, index }, from)
            })
            .collect()
    }

    /// Merges the values read for `asked` (in its order); how many were not understood. A list
    /// shorter than what was merged of it was lost (Redis restarted or flushed): it is read
    /// from its start next time, what was merged of the old one stays.
    pub fn merge(&mut self, asked: &[(Bucket, usize)], tails: Vec<ListTail>) -> usize {
        let mut refused = 0;
        for ((bucket, from), (len, values)) in asked.iter().zip(tails) {
            let merged = if len < *from { 0 } else { from + values.len() };
            self.merged.insert(bucket.index, merged);
            for value in values {
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
        self.window
            .totals(now)
            .map(|(subject, activity)| (subject, super::observe(&activity)))
            .filter(|(_, observed)| observed.requests > 0)
            .collect()
    }
}
