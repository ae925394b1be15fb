//! The control loop: every `adaptive.interval` it samples the load, turns recorded activity
//! into per-subject features, scores them with the abuse model, and publishes the scale
//! factors (load factor, standings) that the request path reads.
//!
//! With a shared Redis and a model, every daemon appends its activity to the store (one value
//! per interval), one daemon at a time (the holder of a lease) scores every subject, and the
//! others read its standings (one value): the whole fleet enforces one verdict, within two
//! intervals.

mod cgroup;
mod flags;
mod fleet;
mod fleet_codec;
mod fleet_redis;
mod fleet_state;
mod fleet_window;
mod load;
mod model_slot;
mod prometheus;
mod scope;
mod scoring;
mod source;
mod upstream;

pub use cgroup::CgroupCpu;
pub use flags::{EndedFlag, Flag, FlagTracker, Scored};
pub use fleet_redis::fleet_for;
pub use fleet_state::{Bucket, FleetFuture, FleetState, ListTail, Published};
pub use load::{LoadController, LoadSampler, NoLoad, SystemLoad};
pub use model_slot::ModelSlot;
pub use prometheus::{PrometheusLoad, PrometheusReading, QueryError, query_once};
pub use scoring::{BegunFlag, SECOND_SIGNAL_DEMAND, SECOND_SIGNAL_DENIED_RATIO};
pub use source::{LoadReading, LoadSources, RuleReading};
pub use upstream::{AGREEING, MARGIN, UpstreamGradient, UpstreamSignal, percentile};

use crate::clock::Micros;
use crate::engine::{Engine, Exemption, LiveLoad, RuleLoadFactor, SubjectStanding, Thresholds};
use crate::features::{ActivityWindow, ObservedSubjects, SubjectActivity, SubjectFeatures};
use crate::limit::KeyHash;
use crate::metrics::GLOBAL_SCOPE;
use crate::policy::{LoadSource, Policy};
use crate::store::Backend;
use fleet::FleetControl;
use hashbrown::HashMap;
use scoring::{NovelSubjects, decide_with};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one cycle did, for tests and logs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CycleReport {
    pub load_factor: f64,
    /// The smoothed CPU share (sampled whatever the load source).
    pub smoothed_load: Option<f64>,
    /// The policy's load source's signal (see [`LoadReading::signal`]).
    pub load_signal: Option<f64>,
    /// Subjects with activity in the window.
    pub active: usize,
    /// Subjects scored (at least `min_requests` in the window, and a model in force).
    pub scored: usize,
    pub flagged: usize,
    /// Whether this daemon decided the standings (always, without a shared store).
    pub leader: bool,
    /// The flags that began this cycle (allowlisted subjects left out), with why.
    pub begun: Vec<BegunFlag>,
    /// The flags that ended by themselves this cycle (not cleared nor allowlisted).
    pub ended: Vec<EndedFlag>,
}

pub struct ControlLoop {
    engine: Arc<Engine<Backend>>,
    model: Arc<ModelSlot>,
    sources: LoadSources,
    /// The scopes whose last Prometheus load query failed, and how (logged once per streak
    /// and kind of failure).
    failing_queries: hashbrown::HashMap<String, std::mem::Discriminant<QueryError>>,
    /// Per scope, the load factor the last "load factor" line named (1 before any): a line is
    /// logged when the factor moves to the other side of 1 from it, so a move made while an
    /// override pinned the factor is told once the override is lifted.
    told_factors: hashbrown::HashMap<String, f64>,
    window: ActivityWindow,
    window_len: Duration,
    judge: FlagTracker,
    fleet: Option<FleetControl>,
    /// `--pin-load-factor`: the factor in place of the measured one.
    pinned_load: Option<f64>,
    novel_subjects: NovelSubjects,
    /// The recorder's count of events it had no room for, when last read.
    untracked_before: u64,
}

impl ControlLoop {
    pub fn new(
        engine: Arc<Engine<Backend>>,
        model: Arc<ModelSlot>,
        sampler: Box<dyn LoadSampler>,
    ) -> Self {
        let window_len = engine.policy().adaptive.anomaly.window;
        let outage = engine.store_outage().clone();
        let errors = engine.metrics().control_store_errors.clone();
        let fleet = fleet_for(engine.store()).map(|f| FleetControl::new(f, outage, errors));
        engine
            .metrics()
            .declare_flag_features(&scoring::TOP_FEATURE_LABELS);
        Self {
            engine,
            model,
            sources: LoadSources::new(sampler),
            failing_queries: hashbrown::HashMap::new(),
            told_factors: hashbrown::HashMap::new(),
            window: ActivityWindow::new(window_len),
            window_len,
            judge: FlagTracker::default(),
            fleet,
            pinned_load: None,
            novel_subjects: NovelSubjects::default(),
            untracked_before: 0,
        }
    }

    /// Never queries Prometheus (its sources give 1.0): for a replay of past traffic, where
    /// only the reported upstream outcomes say what the load was.
    pub fn offline(mut self) -> Self {
        self.sources = self.sources.offline();
        self
    }

    /// Uses `factor` as the load factor instead of the one the CPU samples give.
    pub fn with_pinned_load_factor(mut self, factor: f64) -> Self {
        self.pinned_load = Some(factor);
        self
    }

    /// One cycle at the engine's clock's time.
    pub async fn cycle(&mut self) -> CycleReport {
        let started = Instant::now();
        let now = self.engine.now();
        let policy = self.engine.policy();
        let scale = self.engine.scale_factors().clone();
        let metrics = self.engine.metrics().clone();

        let thresholds = scale.thresholds();
        let load_signal = self.update_load_factor(now, &policy, &thresholds).await;

        let anomaly = &policy.adaptive.anomaly;
        if anomaly.window != self.window_len {
            // A reload changed the window: counts kept in the old buckets no longer fit.
            self.window = ActivityWindow::new(anomaly.window);
            self.window_len = anomaly.window;
        }
        let dropped = self.drop_exempt_flags(now);
        let forget_before = now.saturating_sub(crate::clock::micros(anomaly.window));
        let pending = self.engine.recorder().drain(forget_before);
        self.report_untracked();

        let mut report = CycleReport {
            load_factor: scale.load_factor(),
            smoothed_load: self.sources.cpu().smoothed(),
            load_signal,
            leader: true,
            ..CycleReport::default()
        };
        // With no model nothing reads the fleet's activity or standings (nobody is scored):
        // the shared store is left alone, and this daemon keeps its own window for the
        // observed features it reports. A lease it held expires by itself.
        let fleet = match &mut self.fleet {
            Some(fleet) if self.model.get().is_some() => Some(fleet),
            Some(fleet) => {
                fleet.step_down();
                None
            }
            None => None,
        };
        let capacity = self.engine.recorder().capacity();
        // Allowlisted subjects are scored but hold no flag, in what this daemon publishes to
        // the fleet too.
        let allowlisted = scale.exemptions().allowlisted(now);
        let verdict = match fleet {
            None => Some(on_blocking_thread(|| {
                self.window.add_all(now, &pending);
                self.window.expire(now);
                self.window.forget_lightest(capacity);
                let totals: Vec<(KeyHash, SubjectFeatures)> = self
                    .window
                    .totals(now)
                    .map(|(subject, activity)| (subject, observe(&activity)))
                    .collect();
                self.decide(&policy, now, totals, &allowlisted)
            })),
            Some(fleet) => {
                let threshold = thresholds.anomaly_threshold;
                fleet
                    .cycle(&policy, now, &pending, &mut self.judge, |judge, totals| {
                        on_blocking_thread(|| {
                            decide_with(
                                &self.model,
                                judge,
                                &policy,
                                threshold,
                                now,
                                totals,
                                &allowlisted,
                            )
                        })
                    })
                    .await
            }
        };
        report.leader = self.fleet.as_ref().is_none_or(|f| f.is_leader());
        let mut verdict = verdict;
        if let (Some(verdict), false) = (verdict.as_mut(), report.leader) {
            // A follower adopts the leader's standings without scoring; the subjects the
            // leader scored come with their features, so it names the novel ones itself, for
            // its gauge and log lines as on the leader.
            if let Some(model) = self.model.get() {
                // As the leader counts them: scored this cycle (not only held), and novel.
                let min_requests = policy.adaptive.anomaly.min_requests.get();
                verdict.novel = on_blocking_thread(|| {
                    verdict
                        .observed
                        .iter()
                        .filter(|(s, o)| {
                            o.requests >= min_requests
                                && verdict.standings.contains_key(*s)
                                && model.is_novel(&o.features)
                        })
                        .map(|(s, _)| *s)
                        .collect()
                });
            }
        }
        if let Some(verdict) = verdict {
            self.novel_subjects.announce(&self.model, &verdict);
            let threshold = thresholds.anomaly_threshold;
            self.publish(verdict, threshold, now, &allowlisted, &mut report);
        }
        self.publish_flag_starts(&dropped);
        metrics
            .control_cycle_duration
            .observe(started.elapsed().as_secs_f64());
        report
    }

    /// Counts and tells what the recorder had no room for since the last cycle: a flood of
    /// made-up subjects can fill it, and then every new subject, abusive or not, goes unscored.
    fn report_untracked(&mut self) {
        let recorder = self.engine.recorder();
        let total = recorder.dropped();
        let new = total.saturating_sub(self.untracked_before);
        self.untracked_before = total;
        if new > 0 {
            self.engine.metrics().untracked_events.inc_by(new);
            tracing::warn!(
                untracked = new,
                capacity = recorder.capacity(),
                "the abuse model tracked as many subjects as it can ({}): {new} decisions or reports of new subjects were not recorded since the last cycle; each cycle forgets the subjects with the fewest requests to make room",
                recorder.capacity()
            );
        }
    }

    /// Reads the load sources (even when pinned: their gauges still tell operators what the
    /// service does) and sets the load factors; returns the policy source's signal.
    async fn update_load_factor(
        &mut self,
        now: Micros,
        policy: &Policy,
        thresholds: &Thresholds,
    ) -> Option<f64> {
        let settings = &policy.adaptive.load;
        let outcomes = self.engine.upstream_outcomes().drain();
        let scale = self.engine.scale_factors().clone();
        let metrics = self.engine.metrics().clone();
        let (reading, rules) = self.sources.read(now, policy, thresholds, outcomes).await;
        self.tell(GLOBAL_SCOPE, &settings.source, &reading, thresholds);
        scale.set_load(self.pinned_load.map_or(reading.live, LiveLoad::Fixed));
        metrics.load_factor.set(scale.load_factor());
        if let Some(smoothed) = self.sources.cpu().smoothed() {
            metrics.system_cpu_ratio.set(smoothed);
        }
        reading.publish(&metrics.load, GLOBAL_SCOPE, &settings.source);

        let mut rule_factors = vec![None; policy.endpoints.len()];
        for rule in rules {
            self.tell(&rule.scope, &rule.source, &rule.reading, thresholds);
            rule.reading
                .publish(&metrics.load, &rule.scope, &rule.source);
            if let Some(slot) = rule_factors.get_mut(rule.index) {
                *slot = Some(RuleLoadFactor {
                    pattern: rule.pattern,
                    load: self.pinned_load.map_or(rule.reading.live, LiveLoad::Fixed),
                });
            }
        }
        scale.publish_rule_load_factors(rule_factors);
        reading.signal
    }

    /// Logs what changed for one scope: its factor crossing 1, its query failing or answering.
    fn tell(
        &mut self,
        scope: &str,
        source: &LoadSource,
        reading: &LoadReading,
        thresholds: &Thresholds,
    ) {
        let span = tracing::info_span!("load", scope).entered();
        let failing = self.failing_queries.get(scope).copied();
        match (&reading.query_error, failing) {
            (Some(error), None) => {
                tracing::warn!(
                    %error,
                    "load: the Prometheus query failed; the last factor stays for \
                     adaptive.load.prometheus.keep_last cycles, then 1.0"
                );
                self.failing_queries
                    .insert(scope.to_owned(), std::mem::discriminant(error));
            }
            // A new reason within the streak: the one logged first is stale.
            (Some(error), Some(kind)) if kind != std::mem::discriminant(error) => {
                tracing::warn!(%error, "load: the Prometheus query still fails, now otherwise");
                self.failing_queries
                    .insert(scope.to_owned(), std::mem::discriminant(error));
            }
            (None, Some(_)) => {
                tracing::info!("load: the Prometheus query answers again");
                self.failing_queries.remove(scope);
            }
            _ => {}
        }
        // Pinned (the flag, the policy's override or the admin API's), the reading's factor is
        // not the one in force: a line naming it would contradict `ratewarden_load_factor`.
        let pinned = self.pinned_load.is_some() || thresholds.load_factor_override.is_some();
        let told = self.told_factors.get(scope).copied().unwrap_or(1.0);
        if reading.factor.total_cmp(&1.0) != told.total_cmp(&1.0) && !pinned {
            // Limits start or stop shrinking (or growing): say why, once per change (not at
            // every step of the upstream gradient).
            reading.log_change(source, thresholds);
            self.told_factors.insert(scope.to_owned(), reading.factor);
        }
        drop(span);
    }

    /// Drops the flags the admin API cleared or allowlisted, before judging; which.
    fn drop_exempt_flags(&mut self, now: Micros) -> Vec<KeyHash> {
        let dropped = self.engine.scale_factors().exemptions().for_cycle(now);
        for subject in &dropped {
            self.judge.remove(*subject);
        }
        dropped
    }

    /// Publishes when each flag in force began. An allowlisted subject holds no flag either:
    /// its first flag after the allowlisting starts when it is judged again.
    fn publish_flag_starts(&mut self, dropped: &[KeyHash]) {
        let exemptions = self.engine.scale_factors().exemptions();
        for subject in dropped {
            if matches!(exemptions.get(*subject), Some(Exemption::Until(_))) {
                self.judge.remove(*subject);
            }
        }
        let starts = self.judge.flags().iter().map(|(s, f)| (*s, f.since));
        exemptions.publish_flag_starts(starts.collect());
        exemptions.cycle_published(dropped);
    }

    /// Hands a cycle's standings and features to the request path, and counts them.
    fn publish(
        &self,
        verdict: CycleOutcome,
        threshold: f64,
        now: Micros,
        allowlisted: &hashbrown::HashSet<KeyHash>,
        report: &mut CycleReport,
    ) {
        report.active = verdict.observed.len();
        report.scored = verdict.scores.len();
        // An allowlisted subject is judged every cycle (its score stays visible) but is never
        // flagged: no flag line, no flag counted, not in the gauge. The set is the one the cycle
        // judged with.
        let is_allowlisted =
            |subject: &KeyHash| !allowlisted.is_empty() && allowlisted.contains(subject);
        // The gauge counts subjects at or over the threshold, not held ones nor novel ones
        // whose score alone flags nothing.
        report.flagged = verdict
            .standings
            .iter()
            .filter(|(subject, s)| {
                s.abuse_score >= threshold && !s.novel && !is_allowlisted(subject)
            })
            .count();
        let metrics = self.engine.metrics();
        for score in &verdict.scores {
            metrics.abuse_score.observe(*score);
        }
        metrics.flagged_subjects.set(report.flagged as i64);
        metrics.novel_subjects.set(verdict.novel.len() as i64);
        for flag in verdict.begun {
            if !is_allowlisted(&flag.subject) {
                flag.announce(metrics);
                report.begun.push(flag);
            }
        }
        for flag in verdict.ended {
            scoring::announce_ended(&flag, now);
            report.ended.push(flag);
        }
        let scale = self.engine.scale_factors();
        scale.publish_standings(verdict.standings);
        scale.publish_observed(verdict.observed);
    }

    fn decide(
        &mut self,
        policy: &Policy,
        now: Micros,
        totals: Vec<(KeyHash, SubjectFeatures)>,
        allowlisted: &hashbrown::HashSet<KeyHash>,
    ) -> CycleOutcome {
        let threshold = self.engine.scale_factors().thresholds().anomaly_threshold;
        decide_with(
            &self.model,
            &mut self.judge,
            policy,
            threshold,
            now,
            totals,
            allowlisted,
        )
    }

    /// Runs a cycle every `adaptive.interval` (re-read each time: a reload may change it)
    /// until `stop` resolves.
    pub async fn run(mut self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        let mut due = tokio::time::Instant::now();
        loop {
            // A cycle starts every interval whatever the last one took (a Prometheus query
            // waiting out its timeout included), so `keep_last` and the window count in real
            // intervals; one that overran is followed at once, never by a burst.
            let interval = self.engine.policy().adaptive.interval;
            due = (due + interval).max(tokio::time::Instant::now());
            tokio::select! {
                biased;
                () = &mut stop => return,
                () = tokio::time::sleep_until(due) => {}
            }
            let report = self.cycle().await;
            tracing::debug!(?report, "control cycle");
        }
    }
}

/// Runs a cycle's CPU work (tens of milliseconds with 100,000 subjects) without holding up
/// the async worker's other tasks, on the daemon's multi-threaded runtime.
fn on_blocking_thread<T>(work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

/// One cycle's outcome: standings to publish, the scores behind them, what was observed.
pub struct CycleOutcome {
    pub standings: HashMap<KeyHash, SubjectStanding>,
    pub scores: Vec<f64>,
    pub observed: ObservedSubjects,
    /// Scored subjects the model would extrapolate for (see [`crate::model::Model::is_novel`]).
    pub novel: Vec<KeyHash>,
    /// The flags that began this cycle, with why.
    pub begun: Vec<BegunFlag>,
    /// The flags that ended by themselves this cycle.
    pub ended: Vec<EndedFlag>,
}

fn observe(activity: &SubjectActivity) -> SubjectFeatures {
    SubjectFeatures {
        features: activity.features(),
        requests: activity.counters.requests,
    }
}
