//! SubjectActivity over the anomaly window, kept in process: a few time buckets per subject, so old
//! traffic leaves the window a bucket at a time. (With a shared Redis the fleet's leader keeps
//! one for the whole fleet, from what every daemon flushed; see `control::fleet`.)
//!
//! Memory is what bounds how many subjects a daemon can watch, so a bucket is one flat row
//! (its counts narrowed to 32 bits, its two distinct-count sketches inline: 144 bytes, no
//! heap), and the rows of every subject sit in one vector sorted by subject and bucket: no
//! hash table's empty slots, no per-subject allocation. A subject seen in one bucket costs
//! one row; a subject active all window long, six.

use super::{Counters, NewActivity, Sketch, SubjectActivity};
use crate::clock::Micros;
use crate::limit::KeyHash;
use std::time::Duration;

/// How many buckets a window is cut into: traffic leaves the window within 1/BUCKETS of it.
pub const BUCKETS: u64 = 6;

/// One subject's traffic in one bucket. Counts saturate at `u32::MAX` (four billion
/// decisions of one subject in a sixth of the window); the first and last request times are
/// not kept (no feature reads them).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Row {
    subject: KeyHash,
    bucket: u64,
    usage_sum: f64,
    gap_sum: f64,
    gap_sum_sq: f64,
    requests: u32,
    denied: u32,
    reports: u32,
    client_errors: u32,
    auth_failures: u32,
    not_found: u32,
    gaps: u32,
    endpoints: Sketch,
    ips: Sketch,
}

fn narrow(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl Row {
    fn new(subject: KeyHash, bucket: u64) -> Self {
        Row {
            subject,
            bucket,
            usage_sum: 0.0,
            gap_sum: 0.0,
            gap_sum_sq: 0.0,
            requests: 0,
            denied: 0,
            reports: 0,
            client_errors: 0,
            auth_failures: 0,
            not_found: 0,
            gaps: 0,
            endpoints: Sketch::default(),
            ips: Sketch::default(),
        }
    }

    fn order(&self) -> (KeyHash, u64) {
        (self.subject, self.bucket)
    }

    fn add(&mut self, pending: &NewActivity) {
        let c = &pending.counters;
        let add = |to: &mut u32, n: u64| *to = narrow(u64::from(*to).saturating_add(n));
        add(&mut self.requests, c.requests);
        add(&mut self.denied, c.denied);
        add(&mut self.reports, c.reports);
        add(&mut self.client_errors, c.client_errors);
        add(&mut self.auth_failures, c.auth_failures);
        add(&mut self.not_found, c.not_found);
        add(&mut self.gaps, c.gaps);
        self.usage_sum += c.usage_sum;
        self.gap_sum += c.gap_sum;
        self.gap_sum_sq += c.gap_sum_sq;
        for &e in &pending.endpoints {
            self.endpoints.insert_hash(e);
        }
        for &ip in &pending.ips {
            self.ips.insert_hash(ip);
        }
    }

    fn add_to(&self, total: &mut SubjectActivity) {
        total.counters.add(&Counters {
            requests: self.requests.into(),
            denied: self.denied.into(),
            reports: self.reports.into(),
            client_errors: self.client_errors.into(),
            auth_failures: self.auth_failures.into(),
            not_found: self.not_found.into(),
            usage_sum: self.usage_sum,
            gaps: self.gaps.into(),
            gap_sum: self.gap_sum,
            gap_sum_sq: self.gap_sum_sq,
            ..Counters::default()
        });
        total.endpoints.merge(&self.endpoints);
        total.ips.merge(&self.ips);
    }
}

pub struct ActivityWindow {
    bucket_len: Micros,
    /// Sorted by (subject, bucket), no two alike.
    rows: Vec<Row>,
}

impl ActivityWindow {
    pub fn new(window: Duration) -> Self {
        Self {
            bucket_len: bucket_len(window),
            rows: Vec::new(),
        }
    }

    /// Subjects with a bucket kept (one pass over the rows).
    pub fn len(&self) -> usize {
        self.rows.chunk_by(|a, b| a.subject == b.subject).count()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The length of one bucket.
    pub fn bucket_len(&self) -> Micros {
        self.bucket_len
    }

    /// Adds one interval's pending activity of each subject at `now`.
    pub fn add_all(&mut self, now: Micros, pending: &[(KeyHash, NewActivity)]) {
        self.add_all_to_bucket(now / self.bucket_len, pending);
    }

    /// Adds pending activity of each subject to bucket `bucket` (`now / bucket length`): the
    /// fleet's leader adds what every daemon flushed, in any order of buckets.
    pub fn add_all_to_bucket(&mut self, bucket: u64, pending: &[(KeyHash, NewActivity)]) {
        let mut fresh: Vec<Row> = Vec::new();
        for (subject, activity) in pending {
            match self
                .rows
                .binary_search_by(|r| r.order().cmp(&(*subject, bucket)))
            {
                Ok(at) => self.rows[at].add(activity),
                Err(_) => {
                    let mut row = Row::new(*subject, bucket);
                    row.add(activity);
                    fresh.push(row);
                }
            }
        }
        fresh.sort_unstable_by_key(Row::order);
        fresh.dedup_by(|later, kept| {
            let same = later.order() == kept.order();
            if same {
                merge_rows(kept, later);
            }
            same
        });
        self.merge_in(&fresh);
    }

    /// Merges sorted new rows into the sorted rows, from the back, in place. The vector grows
    /// by at least an eighth, so growing costs little and wastes at most that.
    fn merge_in(&mut self, fresh: &[Row]) {
        let Some(&filler) = fresh.first() else {
            return;
        };
        let old = self.rows.len();
        let needed = old + fresh.len();
        if needed > self.rows.capacity() {
            self.rows.reserve_exact(fresh.len().max(old / 8));
        }
        self.rows.resize(needed, filler);
        let (mut i, mut j) = (old, fresh.len());
        for w in (0..needed).rev() {
            if j == 0 {
                break;
            }
            if i > 0 && self.rows[i - 1].order() > fresh[j - 1].order() {
                self.rows[w] = self.rows[i - 1];
                i -= 1;
            } else {
                self.rows[w] = fresh[j - 1];
                j -= 1;
            }
        }
    }

    /// Drops buckets that left the window (a subject goes with its last one), and returns
    /// memory once less than half the rows are in use.
    pub fn expire(&mut self, now: Micros) {
        let oldest = oldest_bucket(now, self.bucket_len);
        self.rows.retain(|r| r.bucket >= oldest);
        if self.rows.len() < self.rows.capacity() / 2 {
            self.rows.shrink_to_fit();
        }
    }

    /// The activity of one subject over the window at `now`.
    pub fn activity(&self, subject: KeyHash, now: Micros) -> Option<SubjectActivity> {
        let start = self.rows.partition_point(|r| r.subject < subject);
        let end = start + self.rows[start..].partition_point(|r| r.subject == subject);
        total(&self.rows[start..end], oldest_bucket(now, self.bucket_len))
    }

    /// Every subject with activity in the window, and its total, in subject order.
    pub fn totals(&self, now: Micros) -> impl Iterator<Item = (KeyHash, SubjectActivity)> + '_ {
        let oldest = oldest_bucket(now, self.bucket_len);
        self.rows
            .chunk_by(|a, b| a.subject == b.subject)
            .filter_map(move |rows| Some((rows[0].subject, total(rows, oldest)?)))
    }
}

/// The sum of a subject's rows still in the window; `None` if none is.
fn total(rows: &[Row], oldest: u64) -> Option<SubjectActivity> {
    let mut live = rows.iter().filter(|r| r.bucket >= oldest).peekable();
    live.peek()?;
    let mut sum = SubjectActivity::default();
    for row in live {
        row.add_to(&mut sum);
    }
    Some(sum)
}

fn merge_rows(into: &mut Row, from: &Row) {
    let add = |to: &mut u32, n: u32| *to = to.saturating_add(n);
    add(&mut into.requests, from.requests);
    add(&mut into.denied, from.denied);
    add(&mut into.reports, from.reports);
    add(&mut into.client_errors, from.client_errors);
    add(&mut into.auth_failures, from.auth_failures);
    add(&mut into.not_found, from.not_found);
    add(&mut into.gaps, from.gaps);
    into.usage_sum += from.usage_sum;
    into.gap_sum += from.gap_sum;
    into.gap_sum_sq += from.gap_sum_sq;
    into.endpoints.merge(&from.endpoints);
    into.ips.merge(&from.ips);
}

/// The length of one bucket: a sixth of the window, at least 1 ms.
pub fn bucket_len(window: Duration) -> Micros {
    (crate::clock::micros(window) / BUCKETS).max(1_000)
}

/// The oldest bucket index still (partly) inside the window ending at `now`.
pub fn oldest_bucket(now: Micros, bucket_len: Micros) -> u64 {
    (now / bucket_len).saturating_sub(BUCKETS)
}

const _: () = assert!(std::mem::size_of::<Row>() <= 144);
