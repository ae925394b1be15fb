//! SubjectActivity over the anomaly window, kept in process: a few time buckets per subject, so old
//! traffic leaves the window a bucket at a time. (With a shared Redis the fleet's leader keeps
//! one for the whole fleet, from what every daemon flushed; see `control::fleet`.)
//!
//! Memory is what bounds how many subjects a daemon can watch, so a bucket is one flat row
//! (its counts narrowed to 32 bits, its two distinct-count sketches inline: 144 bytes, no
//! heap), and the rows of every subject sit in one vector sorted by subject and bucket: no
//! hash table's empty slots, no per-subject allocation. A subject seen in one bucket costs
//! one row; a subject active all window long, six.

use super::lightest::Lightest;
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
    // f32: each request adds a share in 0..=1, a bucket's sums need no finer grain, and two fit
    // where one f64 did.
    usage_sum: f32,
    overflow_sum: f32,
    // The gaps but the longest, and the longest apart, in f32: the short gaps of a steady
    // subject stay exact next to a long pause (one f32 sum of both would round them away). The
    // squares keep f64: a steady subject's variance is a small difference of two large sums.
    gap_rest: f32,
    longest_gap: f32,
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
            overflow_sum: 0.0,
            gap_rest: 0.0,
            longest_gap: 0.0,
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
        self.overflow_sum += c.overflow_sum;
        let new_longest = if c.longest_gap.is_finite() {
            c.longest_gap.clamp(0.0, c.gap_sum.max(0.0))
        } else {
            0.0
        };
        let new_rest = c.gap_sum - new_longest;
        let kept = f64::from(self.longest_gap);
        let (longest, shorter) = if new_longest > kept {
            (new_longest, kept)
        } else {
            (kept, new_longest)
        };
        self.gap_rest = (f64::from(self.gap_rest) + new_rest + shorter) as f32;
        self.longest_gap = longest as f32;
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
            overflow_sum: self.overflow_sum,
            gaps: self.gaps.into(),
            gap_sum: f64::from(self.gap_rest) + f64::from(self.longest_gap),
            gap_sum_sq: self.gap_sum_sq,
            longest_gap: self.longest_gap.into(),
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
    /// No row is of an older bucket: `expire` skips its pass over every row until the window
    /// has moved past it.
    lowest_bucket: u64,
}

impl ActivityWindow {
    pub fn new(window: Duration) -> Self {
        Self {
            bucket_len: bucket_len(window),
            rows: Vec::new(),
            lowest_bucket: u64::MAX,
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
    ///
    /// The pending subjects are visited in subject order, each found by galloping forward from
    /// the previous one's place: a binary search over all rows per subject misses the cache
    /// at nearly every step once the rows outgrow it, and cost most of a control cycle. A
    /// recorder's drain is in that order already; other activity is visited through a sorted
    /// index.
    pub fn add_all_to_bucket(&mut self, bucket: u64, pending: &[(KeyHash, NewActivity)]) {
        if pending.is_sorted_by_key(|(subject, _)| *subject) {
            return self.add_in_order(bucket, pending.iter().map(|(s, a)| (*s, a)));
        }
        let mut visit: Vec<(KeyHash, usize)> = pending
            .iter()
            .enumerate()
            .map(|(at, (subject, _))| (*subject, at))
            .collect();
        visit.sort_unstable();
        self.add_in_order(bucket, visit.iter().map(|&(s, at)| (s, &pending[at].1)));
    }

    /// [`Self::add_all_to_bucket`] for activity that comes in subject order.
    fn add_in_order<'a>(
        &mut self,
        bucket: u64,
        in_order: impl Iterator<Item = (KeyHash, &'a NewActivity)>,
    ) {
        let mut fresh: Vec<Row> = Vec::new();
        let mut cursor = 0;
        for (subject, activity) in in_order {
            let target = (subject, bucket);
            cursor += gallop(&self.rows[cursor..], target);
            match self.rows.get_mut(cursor) {
                Some(row) if row.order() == target => row.add(activity),
                _ => match fresh.last_mut() {
                    Some(row) if row.order() == target => row.add(activity),
                    _ => {
                        let mut row = Row::new(subject, bucket);
                        row.add(activity);
                        fresh.push(row);
                    }
                },
            }
        }
        if !fresh.is_empty() {
            self.lowest_bucket = self.lowest_bucket.min(bucket);
        }
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
        if self.lowest_bucket >= oldest {
            return;
        }
        let mut lowest = u64::MAX;
        self.rows.retain(|r| {
            let kept = r.bucket >= oldest;
            if kept {
                lowest = lowest.min(r.bucket);
            }
            kept
        });
        self.lowest_bucket = lowest;
        if self.rows.len() < self.rows.capacity() / 2 {
            self.rows.shrink_to_fit();
        }
    }

    /// Past `max` subjects, forgets the lightest (fewest requests in the window) until three
    /// quarters of `max` remain, and returns how many went. The recorder sheds its lightest
    /// subjects when it is nearly full, so newcomers keep being let in; this keeps what they
    /// leave behind from outgrowing memory in their place.
    pub fn forget_lightest(&mut self, max: usize) -> usize {
        // A subject has at least one row; counting subjects is one pass without allocating,
        // which a control cycle pays only once the rows outnumber `max`.
        if self.rows.len() <= max || self.len() <= max {
            return 0;
        }
        let requests: Vec<u64> = self
            .rows
            .chunk_by(|a, b| a.subject == b.subject)
            .map(|rows| rows.iter().map(|r| u64::from(r.requests)).sum())
            .collect();
        let excess = requests.len() - (max - max / 4);
        let Some(mut lightest) = Lightest::new(requests.clone(), excess) else {
            return 0;
        };
        let forget: Vec<bool> = requests.iter().map(|&n| lightest.forget(n)).collect();
        let mut subject = 0;
        let mut previous = None;
        self.rows.retain(|row| {
            if previous.is_some_and(|p| p != row.subject) {
                subject += 1;
            }
            previous = Some(row.subject);
            !forget[subject]
        });
        excess
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

/// The first index of `rows` whose order is not below `target`, probing 1, 2, 4, ... rows
/// ahead before a binary search of the last stretch: cheap when it is near the start.
fn gallop(rows: &[Row], target: (KeyHash, u64)) -> usize {
    let mut end = 1;
    while end < rows.len() && rows[end - 1].order() < target {
        end *= 2;
    }
    let end = end.min(rows.len());
    let start = end / 2;
    start + rows[start..end].partition_point(|r| r.order() < target)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::LimitOutcome;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn one_request(usage: f32) -> NewActivity {
        let mut pending = NewActivity::default();
        pending.counters.requests = 1;
        pending.counters.usage_sum = usage;
        pending
    }

    #[test]
    fn a_pause_kept_in_a_row_leaves_a_steady_rhythm_steady_to_the_last_microsecond() {
        // A request, a pause of 1500.00003 s, then 60 requests 10 ms apart over two buckets: the
        // pause is left out exactly (rows keep the longest gap in f32), whatever its length.
        for pause in [1_500_000_030, 1_500_000_061, 1_500_000_062, 67_500_003] {
            let mut window = ActivityWindow::new(Duration::from_secs(1800));
            let mut first = NewActivity::default();
            first
                .counters
                .record_request(0, None, LimitOutcome::default());
            first
                .counters
                .record_request(pause, Some(pause), LimitOutcome::default());
            let mut rest = NewActivity::default();
            for i in 1..60 {
                let pending = if i < 20 { &mut first } else { &mut rest };
                let at = pause + i * 10_000;
                pending
                    .counters
                    .record_request(at, Some(10_000), LimitOutcome::default());
            }
            let subject = KeyHash(1);
            window.add_all_to_bucket(1, &[(subject, first)]);
            window.add_all_to_bucket(2, &[(subject, rest)]);
            let total = window.activity(subject, 3 * window.bucket_len()).unwrap();
            let cv = total.features().interarrival_cv;
            assert!(cv < 1e-3, "pause {pause} µs: cv {cv}");
        }
    }

    #[test]
    fn a_window_past_its_cap_forgets_its_lightest_subjects_whole() {
        let mut window = ActivityWindow::new(Duration::from_secs(60));
        // Subject n has n + 1 requests, spread over two buckets.
        for n in 0..10u128 {
            for i in 0..=n {
                let bucket = 1 + (i % 2) as u64;
                window.add_all_to_bucket(bucket, &[(KeyHash(n), one_request(0.1))]);
            }
        }
        assert_eq!(window.forget_lightest(10), 0);
        assert_eq!(window.forget_lightest(8), 4);
        let now = 3 * window.bucket_len();
        let left: Vec<(u128, u64)> = window
            .totals(now)
            .map(|(s, a)| (s.0, a.counters.requests))
            .collect();
        assert_eq!(left, (4..10).map(|n| (n, n as u64 + 1)).collect::<Vec<_>>());
        assert_eq!(window.len(), 6);
    }

    proptest! {
        /// Whatever the order of subjects and buckets (the fleet's leader adds flushes in any
        /// order, a subject may come twice in one call; a recorder's drain comes sorted) and of
        /// expiries, each subject's total over the window is the plain sum of what was added to
        /// its buckets still inside it.
        #[test]
        fn totals_match_a_plain_sum_per_bucket(
            calls in proptest::collection::vec(
                (0u64..12, proptest::collection::vec(0u128..40, 0..30)),
                1..25,
            ),
            now_bucket in 6u64..14,
            expire_after in proptest::collection::vec(any::<bool>(), 25),
            sorted in any::<bool>(),
        ) {
            let mut window = ActivityWindow::new(Duration::from_secs(60));
            let mut reference: BTreeMap<(u128, u64), u64> = BTreeMap::new();
            let now = now_bucket * window.bucket_len();
            for ((bucket, subjects), expire) in calls.iter().zip(expire_after) {
                let mut subjects = subjects.clone();
                if sorted {
                    subjects.sort_unstable();
                }
                let pending: Vec<_> = subjects
                    .iter()
                    .map(|&s| (KeyHash(s), one_request(0.5)))
                    .collect();
                window.add_all_to_bucket(*bucket, &pending);
                for &s in &subjects {
                    *reference.entry((s, *bucket)).or_default() += 1;
                }
                if expire {
                    window.expire(now);
                }
            }
            let oldest = oldest_bucket(now, window.bucket_len());
            let mut expected: BTreeMap<u128, u64> = BTreeMap::new();
            for (&(s, bucket), &n) in &reference {
                if bucket >= oldest {
                    *expected.entry(s).or_default() += n;
                }
            }
            let got: BTreeMap<u128, u64> = window
                .totals(now)
                .map(|(s, total)| (s.0, total.counters.requests))
                .collect();
            prop_assert_eq!(&got, &expected);
            for (&s, &n) in &expected {
                let one = window.activity(KeyHash(s), now).map(|a| a.counters.requests);
                prop_assert_eq!(one, Some(n));
            }
        }
    }
}
