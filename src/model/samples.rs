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
use crate::engine::{
    CheckRequest, Cost, Decision, EndpointPath, Engine, FeatureTrace, SubjectHasher, path_of,
};
use crate::features::{ActivityWindow, Features, LimitOutcome, Recorder, SubjectFeatures};
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
    /// Requests in the window: the evidence behind the features.
    pub requests: u64,
    pub abuse: bool,
}

impl Sample {
    /// The features as the control loop scores them: with the requests behind them.
    pub fn observed(&self) -> SubjectFeatures {
        SubjectFeatures {
            features: self.features,
            requests: self.requests,
        }
    }
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
    let first = records.first().map_or(0, |r| at_micros(r.ts));
    let clock = ManualClock::starting_at(first);
    let store = MemoryStore::new(Arc::new(clock.clone()), 50_000_000);
    let engine = Engine::new(
        policy,
        store,
        SubjectHasher::from_secret("ratewarden train"),
    );
    let mut sampler = Sampler::new(options, interval);
    let mut next_cycle = (first / interval + 1) * interval;
    let mut now = first;
    for (done, record) in records.iter().enumerate() {
        now = now.max(at_micros(record.ts));
        while now >= next_cycle {
            if sampler.idle() {
                // Nothing left to sample until `now`: skip those cycles rather than run them
                // one by one (a stray `ts` of 0 would be 1.7 billion of them).
                let idle_cycles = (now - next_cycle) / interval;
                sampler.cycles += idle_cycles;
                next_cycle += idle_cycles * interval;
            }
            sampler.cycle(next_cycle);
            next_cycle += interval;
        }
        clock.set(now);
        let subject = engine.hasher().user(&record.user);
        sampler.note_subject(subject, record);
        let request = check_request(record);
        // The same values the daemon tells apart: the normalised path, and an address in its
        // canonical form (`::ffff:1.2.3.4` is `1.2.3.4`, `2001:DB8:0::1` is `2001:db8::1`).
        // Hashed without a key, so a retrain on the same traffic writes the same model.
        let trace = FeatureTrace {
            endpoint: hash64(&request.endpoint),
            ip: request.ip.map(|ip| hash64(&ip.to_canonical().to_string())),
        };
        let Ok(decision) = engine.check(&request).await else {
            sampler.out.undecidable += 1;
            continue;
        };
        sampler.record(subject, now, trace, record.status, &decision);
        if done % 16_384 == 0 {
            progress(done as u64);
        }
    }
    sampler.cycle(next_cycle);
    progress(records.len() as u64);
    sampler.out
}

/// What the engine is asked for one record.
fn check_request(record: &TrafficRecord) -> CheckRequest<'_> {
    let ip: Option<IpAddr> = record.ip.as_deref().and_then(|ip| ip.parse().ok());
    CheckRequest {
        user: &record.user,
        endpoint: EndpointPath::new(path_of(&record.endpoint)),
        tier: record.tier.as_deref(),
        ip,
        cost: record.cost.and_then(Cost::new).unwrap_or(Cost::ONE),
    }
}

/// The control loop's side of the replay: requests recorded as the daemon records them,
/// drained into the window every cycle, and sampled from it every `every`.
struct Sampler<'a> {
    options: &'a SampleOptions,
    cycles_per_sample: u64,
    cycles: u64,
    recorder: Recorder,
    window: ActivityWindow,
    /// Each subject's index into `out.subjects`.
    ids: HashMap<KeyHash, u32>,
    out: Samples,
}

impl<'a> Sampler<'a> {
    fn new(options: &'a SampleOptions, interval: Micros) -> Self {
        Sampler {
            options,
            cycles_per_sample: (micros(options.every) / interval).max(1),
            cycles: 0,
            recorder: Recorder::new(usize::MAX),
            window: ActivityWindow::new(options.window),
            ids: HashMap::new(),
            out: Samples::default(),
        }
    }

    /// One control cycle at `at`: what was recorded joins the window, what fell out of it
    /// goes, and every `cycles_per_sample`-th cycle is sampled.
    fn cycle(&mut self, at: Micros) {
        let window_len = micros(self.options.window);
        let pending = self.recorder.drain(at.saturating_sub(window_len));
        self.window.add_all(at, &pending);
        self.window.expire(at);
        self.cycles += 1;
        if self.cycles % self.cycles_per_sample == 0 {
            self.sample(at);
        }
    }

    /// Nothing in the window and no subject remembered: a cycle now changes nothing.
    fn idle(&self) -> bool {
        self.window.is_empty() && self.recorder.tracked() == 0
    }

    /// A sample of each subject with `min_requests` in the window.
    fn sample(&mut self, at: Micros) {
        let from = self.out.samples.len();
        for (subject, activity) in self.window.totals(at) {
            if activity.counters.requests < self.options.min_requests {
                continue;
            }
            if let Some(&index) = self.ids.get(&subject) {
                self.out.samples.push(Sample {
                    subject: index,
                    features: activity.features(),
                    requests: activity.counters.requests,
                    abuse: self.out.subjects[index as usize].abuse,
                });
            }
        }
        // The window is a hash map: its order changes from run to run; training must not.
        self.out.samples[from..].sort_by_key(|s| s.subject);
    }

    /// Adds the record's subject the first time it is seen, and its label every time.
    fn note_subject(&mut self, subject: KeyHash, record: &TrafficRecord) {
        let subjects = &mut self.out.subjects;
        let index = *self.ids.entry(subject).or_insert_with(|| {
            subjects.push(Subject {
                user: record.user.clone(),
                abuse: false,
                archetype: record.archetype.clone(),
            });
            (subjects.len() - 1) as u32
        });
        self.out.labelled |= record.label.is_some();
        self.out.subjects[index as usize].abuse |= record.label == Some(Label::Abuse);
    }

    /// Counts a decided request and records it (and, when allowed, its upstream status).
    fn record(
        &mut self,
        subject: KeyHash,
        now: Micros,
        trace: FeatureTrace,
        status: Option<u16>,
        decision: &Decision,
    ) {
        let allowed = decision.allowed;
        self.out.requests += 1;
        self.out.denied += u64::from(!allowed);
        self.recorder.record_request(
            subject,
            now,
            trace.endpoint,
            trace.ip,
            LimitOutcome {
                denied: decision.denied_as_written(),
                usage: decision.limit_usage,
                overflow: decision.limit_overflow,
            },
        );
        if let (true, Some(status)) = (allowed, status) {
            self.recorder.record_status(subject, now, status);
        }
    }
}
