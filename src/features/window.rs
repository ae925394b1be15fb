//! SubjectActivity over the anomaly window, kept in process: a few time buckets per subject, so old
//! traffic leaves the window a bucket at a time. (With a shared Redis the fleet's leader keeps
//! one for the whole fleet, from what every daemon flushed; see `control::fleet`.)

use super::{NewActivity, SubjectActivity};
use crate::clock::Micros;
use crate::limit::KeyHash;
use hashbrown::HashMap;
use smallvec::SmallVec;
use std::time::Duration;

/// How many buckets a window is cut into: traffic leaves the window within 1/BUCKETS of it.
pub const BUCKETS: u64 = 6;

pub struct ActivityWindow {
    bucket_len: Micros,
    subjects: HashMap<KeyHash, SmallVec<[(u64, SubjectActivity); 2]>>,
}

impl ActivityWindow {
    pub fn new(window: Duration) -> Self {
        Self {
            bucket_len: bucket_len(window),
            subjects: HashMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.subjects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.subjects.is_empty()
    }

    /// Adds one interval's pending activity of a subject at `now`.
    pub fn add(&mut self, subject: KeyHash, now: Micros, pending: &NewActivity) {
        self.add_to_bucket(subject, now / self.bucket_len, pending);
    }

    /// Adds one interval's pending activity of a subject to bucket `index` (`now / bucket
    /// length`): the fleet's leader adds what every daemon flushed, in any order.
    pub fn add_to_bucket(&mut self, subject: KeyHash, index: u64, pending: &NewActivity) {
        let buckets = self.subjects.entry(subject).or_default();
        let at = match buckets.iter().rposition(|(i, _)| *i <= index) {
            Some(at) if buckets[at].0 == index => at,
            found => {
                let at = found.map_or(0, |at| at + 1);
                buckets.insert(at, (index, SubjectActivity::default()));
                at
            }
        };
        let bucket = &mut buckets[at].1;
        bucket.counters.add(&pending.counters);
        for &e in &pending.endpoints {
            bucket.endpoints.insert_hash(e);
        }
        for &ip in &pending.ips {
            bucket.ips.insert_hash(ip);
        }
    }

    pub fn bucket_len(&self) -> Micros {
        self.bucket_len
    }

    /// Drops buckets that left the window and subjects left with none.
    pub fn expire(&mut self, now: Micros) {
        let oldest = oldest_bucket(now, self.bucket_len);
        self.subjects.retain(|_, buckets| {
            buckets.retain(|(i, _)| *i >= oldest);
            !buckets.is_empty()
        });
    }

    /// The activity of one subject over the window at `now`.
    pub fn activity(&self, subject: KeyHash, now: Micros) -> Option<SubjectActivity> {
        let oldest = oldest_bucket(now, self.bucket_len);
        let buckets = self.subjects.get(&subject)?;
        let mut total = SubjectActivity::default();
        for (_, bucket) in buckets.iter().filter(|(i, _)| *i >= oldest) {
            total.merge(bucket);
        }
        Some(total)
    }

    /// Every subject with activity in the window, and its total.
    pub fn totals(&self, now: Micros) -> impl Iterator<Item = (KeyHash, SubjectActivity)> + '_ {
        let oldest = oldest_bucket(now, self.bucket_len);
        self.subjects.iter().filter_map(move |(subject, buckets)| {
            let mut live = buckets.iter().filter(|(i, _)| *i >= oldest);
            let (_, first) = live.next()?;
            let mut total = first.clone();
            for (_, bucket) in live {
                total.merge(bucket);
            }
            Some((*subject, total))
        })
    }
}

/// The length of one bucket: a sixth of the window, at least 1 ms.
pub fn bucket_len(window: Duration) -> Micros {
    (crate::clock::micros(window) / BUCKETS).max(1_000)
}

/// The oldest bucket index still (partly) inside the window ending at `now`.
pub fn oldest_bucket(now: Micros, bucket_len: Micros) -> u64 {
    (now / bucket_len).saturating_sub(BUCKETS)
}
