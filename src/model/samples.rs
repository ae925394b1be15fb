//! Training data as the daemon would see it: recorded traffic replayed through the real
//! engine and feature code, sampled the way the control loop scores.
//!
//! Requests go in time order through an [`Engine`] on the embedded store with a manual
//! clock (so `denied_ratio` is the policy's own), into a [`Recorder`] drained every
//! `adaptive.interval` into an [`ActivityWindow`] of `anomaly.window`; every `every` of
//! simulated time, each subject with at least `anomaly.min_requests` requests in the window
//! gives one sample: its features at that instant. Upstream statuses of allowed requests feed
//! the error ratio (a denied request never reaches the upstream, so nothing reports it).

use crate::clock::{ManualClock, Micros, micros};
use crate::engine::{CheckRequest, Cost, Engine, SubjectHasher};
use crate::features::{ActivityWindow, Features, Recorder};
use crate::limit::KeyHash;
use crate::policy::Policy;
use crate::simulate::{Label, TrafficRecord};
use crate::store::MemoryStore;
use hashbrown::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// How often each active subject is sampled, by default: every 10 s of traffic.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct SampleOptions {
    pub interval: Duration,
    pub window: Duration,
    pub min_requests: u64,
    pub every: Duration,
}

impl SampleOptions {
    /// The policy's control interval, anomaly window and `min_requests`.
    pub fn from_policy(policy: &Policy, every: Duration) -> Self {
        SampleOptions {
            interval: policy.adaptive.interval,
            window: policy.adaptive.anomaly.window,
            min_requests: policy.adaptive.anomaly.min_requests.get(),
            every,
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "interval {:?}, window {:?}, min_requests {}, a sample per subject every {:?}",
            self.interval, self.window, self.min_requests, self.every
        )
    }
}

/// One subject's features at one control cycle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Index into [`Samples::subjects`].
    pub subject: u32,
    pub features: Features,
    pub abuse: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Subject {
    pub user: String,
    pub abuse: bool,
    pub archetype: Option<String>,
}

#[derive(Debug, Default)]
pub struct Samples {
    pub samples: Vec<Sample>,
    pub subjects: Vec<Subject>,
    pub requests: u64,
    pub denied: u64,
    /// Requests the policy could not decide (an unknown tier, say), left out.
    pub undecidable: u64,
    /// Whether any record carried a label.
    pub labelled: bool,
}

/// A record's time in µs since the epoch.
fn at_micros(ts: f64) -> Micros {
    (ts.max(0.0) * 1e6).round() as Micros
}

fn hash64(text: &str) -> u64 {
    let digest = blake3::hash(text.as_bytes());
    u64::from_le_bytes(digest.as_bytes()[..8].try_into().unwrap_or_default())
}

/// Replays `records` (in time order) and samples features; `progress` gets the count of
/// records done now and then.
pub async fn feature_samples(
    policy: Policy,
    records: &[TrafficRecord],
    options: &SampleOptions,
    mut progress: impl FnMut(u64),
) -> Samples {
    let interval = micros(options.interval).max(1);
    let window_len = micros(options.window);
    let cycles_per_sample = (micros(options.every) / interval).max(1);
    let first = records.first().map_or(0, |r| at_micros(r.ts));
    let clock = ManualClock::starting_at(first);
    let store = MemoryStore::new(Arc::new(clock.clone()), 50_000_000);
    let engine = Engine::new(
        policy,
        store,
        SubjectHasher::from_secret("ratewarden train"),
    );
    let recorder = Recorder::new(usize::MAX);
    let mut window = ActivityWindow::new(options.window);
    let mut ids: HashMap<KeyHash, u32> = HashMap::new();
    let mut out = Samples::default();
    let mut next_cycle = (first / interval + 1) * interval;
    let mut cycles = 0u64;
    let mut now = first;

    let mut cycle = |at: Micros,
                     window: &mut ActivityWindow,
                     out: &mut Samples,
                     ids: &HashMap<KeyHash, u32>| {
        for (subject, pending) in recorder.drain(at.saturating_sub(window_len)) {
            window.add(subject, at, &pending);
        }
        window.expire(at);
        cycles += 1;
        if cycles % cycles_per_sample == 0 {
            let from = out.samples.len();
            for (subject, activity) in window.totals(at) {
                if activity.counters.requests < options.min_requests {
                    continue;
                }
                if let Some(&index) = ids.get(&subject) {
                    out.samples.push(Sample {
                        subject: index,
                        features: activity.features(at),
                        abuse: out.subjects[index as usize].abuse,
                    });
                }
            }
            // The window is a hash map: its order changes from run to run; training must not.
            out.samples[from..].sort_by_key(|s| s.subject);
        }
    };

    for (done, record) in records.iter().enumerate() {
        now = now.max(at_micros(record.ts));
        while now >= next_cycle {
            cycle(next_cycle, &mut window, &mut out, &ids);
            next_cycle += interval;
        }
        clock.set(now);
        let subject = engine.hasher().user(&record.user);
        let index = *ids.entry(subject).or_insert_with(|| {
            out.subjects.push(Subject {
                user: record.user.clone(),
                abuse: false,
                archetype: record.archetype.clone(),
            });
            (out.subjects.len() - 1) as u32
        });
        out.labelled |= record.label.is_some();
        out.subjects[index as usize].abuse |= record.label == Some(Label::Abuse);
        let ip: Option<IpAddr> = record.ip.as_deref().and_then(|ip| ip.parse().ok());
        let request = CheckRequest {
            user: &record.user,
            endpoint: &record.endpoint,
            tier: record.tier.as_deref(),
            ip,
            cost: record.cost.and_then(Cost::new).unwrap_or(Cost::ONE),
        };
        let Ok(decision) = engine.check(&request).await else {
            out.undecidable += 1;
            continue;
        };
        out.requests += 1;
        out.denied += u64::from(!decision.allowed);
        let ip_hash = record.ip.as_deref().map(hash64);
        recorder.record_request(
            subject,
            now,
            hash64(&record.endpoint),
            ip_hash,
            !decision.allowed,
        );
        if let (true, Some(status)) = (decision.allowed, record.status) {
            recorder.record_status(subject, now, status);
        }
        if done % 16_384 == 0 {
            progress(done as u64);
        }
    }
    cycle(next_cycle, &mut window, &mut out, &ids);
    progress(records.len() as u64);
    out
}
