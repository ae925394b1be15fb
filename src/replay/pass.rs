//! One replay pass: the daemon's engine, embedded store and control loop on a manual clock
//! set to each record's time, a control cycle every `adaptive.interval` of log time.
//!
//! Nothing here decides anything: requests go through [`Engine::check`], upstream statuses of
//! allowed requests through [`Engine::report`] (a denied request never reached the upstream),
//! scores and flags come from [`ControlLoop::cycle`]. A log says nothing of the CPU the daemon
//! would have had, and the Prometheus of its time cannot be asked: those sources give 1.0.
//! The `upstream` source follows the statuses (and latencies, where the log has them) of the
//! allowed requests, so a replay shows how adaptive limits would have behaved; the policy's
//! `adaptive.load.factor_override` pins the factor as in the daemon.

use super::summary::{LoadStats, Scoring, Summary, Tally};
use super::traffic::{Record, Traffic};
use crate::clock::{ManualClock, Micros, micros};
use crate::control::{ControlLoop, ModelSlot, NoLoad};
use crate::engine::{
    CheckError, CheckRequest, Decision, EndpointPath, Engine, Outcome, SubjectHasher,
};
use crate::features::window::bucket_len;
use crate::limit::KeyHash;
use crate::policy::{LoadSource, Policy};
use crate::simulate::Label;
use crate::store::{Backend, MemoryStore};
use hashbrown::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Keys the embedded store may hold (the daemon's memory bound does not apply to a replay).
const MAX_KEYS: u64 = 50_000_000;
/// How often (in log time) expired keys are swept from the store, as the daemon does.
const SWEEP_EVERY: Duration = Duration::from_secs(60);
/// Records between two progress reports.
const PROGRESS_EVERY: usize = 8192;

/// What a pass needs besides the traffic.
pub struct PassSetup<'a> {
    pub policy: &'a Policy,
    /// The model file (`adaptive.anomaly.model`); `None` or unreadable: no anomaly scaling.
    pub model: Option<&'a Path>,
    /// The secret of the keyed hashes (`RATEWARDEN_HASH_KEY`).
    pub secret: &'a str,
    pub threshold: f64,
}

/// Replays `traffic` once; `each` sees every request's record and decision in time order,
/// `progress` the records done so far.
pub async fn replay_pass(
    traffic: &Traffic,
    labels: &[Option<Label>],
    setup: &PassSetup<'_>,
    mut each: impl FnMut(&Record, &Result<Decision, CheckError>),
    progress: impl Fn(u64),
) -> Summary {
    let anomaly = &setup.policy.adaptive.anomaly;
    let scoring = Scoring {
        model: setup.model.is_some(),
        min_requests: anomaly.min_requests.get(),
        window: as_written(anomaly.window),
    };
    let mut tally = Tally::new(traffic, setup.threshold, scoring);
    let Some(first) = traffic.first() else {
        return tally.finish(traffic, labels);
    };
    let mut daemon = Daemon::new(traffic, setup, first);
    for (done, record) in traffic.records.iter().enumerate() {
        daemon.cycles_until(record.at, &mut tally).await;
        let result = daemon.check(record).await;
        tally.add(record, &result);
        each(record, &result);
        if done % PROGRESS_EVERY == 0 {
            progress(done as u64);
        }
    }
    // One more cycle, so subjects flagged by their last requests are counted.
    daemon.cycle(daemon.next_cycle, &mut tally).await;
    progress(traffic.records.len() as u64);
    let mut summary = tally.finish(traffic, labels);
    summary.load = daemon.load;
    summary
}

/// A duration as a policy writes it: `10m`, `1h`, `90s`, `250ms`.
fn as_written(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        _ if ms % 3_600_000 == 0 && ms > 0 => format!("{}h", ms / 3_600_000),
        _ if ms % 60_000 == 0 && ms > 0 => format!("{}m", ms / 60_000),
        _ if ms % 1000 == 0 => format!("{}s", ms / 1000),
        _ => format!("{ms}ms"),
    }
}

/// The daemon's parts on the manual clock, and when its next control cycle and store sweep
/// are due in log time.
struct Daemon<'t> {
    traffic: &'t Traffic,
    clock: ManualClock,
    engine: Arc<Engine>,
    control: ControlLoop,
    /// Each subject's index in the traffic, by its hash in the engine.
    by_hash: HashMap<KeyHash, u32>,
    interval: Micros,
    /// After this long without requests every window is empty and every flag has ended:
    /// cycles change nothing until the next request, so they are skipped. A request leaves the
    /// window a bucket after the window's length (buckets expire whole), so that counts too.
    quiet: Micros,
    next_cycle: Micros,
    next_sweep: Micros,
    last_request: Micros,
    /// The `upstream` source's factors so far (`None` with another source), and when the
    /// factor in force began.
    load: Option<LoadStats>,
    factor_since: (f64, Micros),
}

impl<'t> Daemon<'t> {
    fn new(traffic: &'t Traffic, setup: &PassSetup<'_>, first: Micros) -> Self {
        let policy = setup.policy;
        let clock = ManualClock::starting_at(first);
        let store = MemoryStore::new(Arc::new(clock.clone()), MAX_KEYS);
        let engine = Arc::new(
            Engine::new(
                policy.clone(),
                Backend::Memory(store),
                SubjectHasher::from_secret(setup.secret),
            )
            .with_clock(Arc::new(clock.clone())),
        );
        let mut thresholds = engine.scale_factors().thresholds();
        thresholds.anomaly_threshold = setup.threshold;
        engine.scale_factors().set_thresholds(thresholds);
        let model = Arc::new(ModelSlot::new(engine.metrics().clone()));
        // An unreadable model leaves the slot empty: limits without anomaly scaling, as the
        // daemon does (the command reports it).
        let _ = model.load(setup.model);
        let control = ControlLoop::new(engine.clone(), model, Box::new(NoLoad)).offline();
        let by_hash = traffic
            .subjects
            .iter()
            .enumerate()
            .map(|(i, s)| (engine.hasher().user(s), i as u32))
            .collect();
        let interval = micros(policy.adaptive.interval).max(1);
        let anomaly = &policy.adaptive.anomaly;
        Daemon {
            traffic,
            clock,
            engine,
            control,
            by_hash,
            interval,
            quiet: micros(anomaly.window)
                + bucket_len(anomaly.window)
                + micros(anomaly.hold)
                + 2 * interval,
            next_cycle: first + interval,
            next_sweep: first + micros(SWEEP_EVERY),
            last_request: first,
            load: matches!(policy.adaptive.load.source, LoadSource::Upstream(_)).then_some(
                LoadStats {
                    lowest_factor: 1.0,
                    highest_factor: 1.0,
                    seconds_below_one: 0.0,
                    seconds_above_one: 0.0,
                    latencies: 0,
                    reported: 0,
                },
            ),
            factor_since: (1.0, first),
        }
    }

    /// Runs the control cycles due up to `at`, skipping those of a quiet stretch.
    async fn cycles_until(&mut self, at: Micros, tally: &mut Tally) {
        while self.next_cycle <= at {
            if self.next_cycle > self.last_request.saturating_add(self.quiet) {
                self.next_cycle += (at - self.next_cycle) / self.interval * self.interval;
            }
            self.cycle(self.next_cycle, tally).await;
            self.next_cycle += self.interval;
        }
    }

    /// One control cycle at `at`; the subjects it leaves flagged go to the tally.
    async fn cycle(&mut self, at: Micros, tally: &mut Tally) {
        self.clock.set(at);
        let report = self.control.cycle().await;
        self.track_load(at, report.load_factor);
        let standings = self.engine.scale_factors().standings();
        if report.scored > 0 {
            let by_hash = &self.by_hash;
            tally.scored(
                standings
                    .iter()
                    .filter_map(|(h, s)| Some((*by_hash.get(h)?, s.abuse_score, s.novel))),
            );
        }
        if report.flagged > 0 || tally.any_flagged_now() {
            let threshold = self.engine.scale_factors().thresholds().anomaly_threshold;
            tally.flagged(
                at,
                standings
                    .iter()
                    .filter(|(_, s)| s.flagged(threshold, at))
                    .filter_map(|(h, s)| Some((*self.by_hash.get(h)?, s.abuse_score))),
            );
            // Why each was flagged, at its first flag: the daemon's flag log line.
            tally.explain_first_flags(
                report.begun.into_iter().filter_map(|flag| {
                    Some((*self.by_hash.get(&flag.subject)?, flag.top_features))
                }),
            );
        }
    }

    /// Counts the log time the previous factor was in force, and the new factor's extremes.
    fn track_load(&mut self, at: Micros, factor: f64) {
        let Some(load) = &mut self.load else {
            return;
        };
        let (previous, since) = self.factor_since;
        let seconds = at.saturating_sub(since) as f64 / 1e6;
        if previous < 1.0 {
            load.seconds_below_one += seconds;
        } else if previous > 1.0 {
            load.seconds_above_one += seconds;
        }
        load.lowest_factor = load.lowest_factor.min(factor);
        load.highest_factor = load.highest_factor.max(factor);
        self.factor_since = (factor, at);
    }

    /// Decides one request at its time, and reports its upstream status when it was allowed.
    async fn check(&mut self, record: &Record) -> Result<Decision, CheckError> {
        let traffic = self.traffic;
        self.clock.set(record.at);
        if record.at >= self.next_sweep {
            self.engine.store().sweep();
            self.next_sweep = record.at + micros(SWEEP_EVERY);
        }
        self.last_request = record.at;
        let subject = &traffic.subjects[record.subject as usize];
        let request = CheckRequest {
            user: subject,
            // Normal already (interned so): borrowed.
            endpoint: EndpointPath::new(&traffic.endpoints[record.endpoint as usize]),
            tier: record.tier.map(|t| &*traffic.tiers[t as usize]),
            ip: record.ip,
            cost: record.cost,
        };
        let result = self.engine.check(&request).await;
        if let (Ok(decision), Some(status)) = (&result, record.status) {
            if decision.allowed {
                if let Some(load) = &mut self.load {
                    load.reported += 1;
                    load.latencies += u64::from(record.latency_ms.is_some());
                }
                self.engine.report(&Outcome {
                    user: subject,
                    endpoint: request.endpoint.clone(),
                    status,
                    latency_ms: record.latency_ms.map(f64::from),
                });
            }
        }
        result
    }
}
