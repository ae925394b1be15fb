//! The load factors from the sources the policy names: `adaptive.load.source` for the whole
//! policy, and `endpoints[].load.source` for rules with a source of their own. The CPU is
//! sampled once per cycle for every scope that reads it; each scope keeps its own upstream
//! gradient and Prometheus query (see `scope`), and the rules' queries run concurrently.

use super::load::{LoadController, LoadSampler};
use super::prometheus::QueryError;
use super::scope::ScopeState;
use super::upstream::UpstreamSignal;
use crate::clock::Micros;
use crate::engine::{LiveLoad, ScopedOutcomes, Thresholds};
use crate::metrics::LoadMetrics;
use crate::policy::{LoadSource, PathPattern, Policy};
use hashbrown::HashMap;

/// What the chosen source measured this cycle.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadReading {
    pub factor: f64,
    /// What the factor is made of, for decisions to read against the live thresholds.
    pub live: LiveLoad,
    /// The source's signal: the smoothed CPU share or query value, or the upstream pressure.
    pub signal: Option<f64>,
    /// What the signal is compared with: `high` (CPU, Prometheus) or 1.0 (upstream pressure).
    pub target: f64,
    /// The upstream latency percentile and error share, when the source is `upstream`.
    pub upstream: Option<UpstreamSignal>,
    /// Why the Prometheus query failed this cycle.
    pub query_error: Option<QueryError>,
}

impl LoadReading {
    /// Logs a change of the factor with the signal behind it.
    pub fn log_change(&self, source: &LoadSource, t: &Thresholds) {
        let factor = self.factor;
        if self.query_error.is_some() {
            tracing::info!(
                load_factor = factor,
                "load factor {factor}: the Prometheus query keeps failing"
            );
        } else if let Some(u) = self.upstream {
            let latency = u
                .latency_ms
                .map_or("none".to_owned(), |ms| format!("{ms} ms"));
            tracing::info!(
                load_factor = factor,
                pressure = u.pressure,
                "load factor {factor}: upstream pressure {:.2} (latency at the percentile \
                 {latency}, 5xx share {:.3}; 1.0 is at target)",
                u.pressure,
                u.error_share
            );
        } else {
            let signal = self.signal.unwrap_or(0.0);
            let what = match source {
                LoadSource::Prometheus(_) => "Prometheus query value",
                _ => "CPU share",
            };
            tracing::info!(
                load_factor = factor,
                signal,
                "load factor {factor}: smoothed {what} {signal:.2} (limits scale by {} \
                 above adaptive.load.high {}, by {} below adaptive.load.low {})",
                t.load_high_factor,
                t.load_high,
                t.load_low_factor,
                t.load_low
            );
        }
    }

    /// Sets one scope's load series from a self.
    pub fn publish(&self, metrics: &LoadMetrics, scope: &str, source: &LoadSource) {
        let labels = [scope];
        metrics.factor.with_label_values(&labels).set(self.factor);
        metrics.target.with_label_values(&labels).set(self.target);
        if let Some(signal) = self.signal {
            metrics.signal.with_label_values(&labels).set(signal);
        }
        if let LoadSource::Upstream(targets) = source {
            metrics
                .upstream_latency_target
                .with_label_values(&labels)
                .set(targets.latency_target.as_secs_f64());
            metrics
                .upstream_error_target
                .with_label_values(&labels)
                .set(targets.error_target);
        }
        if let Some(u) = self.upstream {
            // An interval whose reports carried no latency has none: NaN, not the last one
            // (a dashboard would show a stale latency beside a pressure of 0).
            let seconds = u.latency_ms.map_or(f64::NAN, |ms| ms / 1000.0);
            metrics
                .upstream_latency
                .with_label_values(&labels)
                .set(seconds);
            metrics
                .upstream_errors
                .with_label_values(&labels)
                .set(u.error_share);
        }
        if self.query_error.is_some() {
            metrics.query_errors.with_label_values(&labels).inc();
        }
    }
}

pub struct LoadSources {
    sampler: Box<dyn LoadSampler>,
    cpu: LoadController,
    global: ScopeState,
    /// By the rule's pattern as written (`/api/export*`).
    rules: HashMap<String, ScopeState>,
    /// Prometheus sources give 1.0 without a query (a replay of past traffic).
    offline: bool,
}

/// One cycle's reading of an endpoint rule's own source.
#[derive(Debug, Clone)]
pub struct RuleReading {
    /// The rule's index in `endpoints`, and its pattern.
    pub index: usize,
    pub pattern: PathPattern,
    /// The pattern as written: the metrics' `scope` label.
    pub scope: String,
    pub source: LoadSource,
    pub reading: LoadReading,
}

impl LoadSources {
    pub fn new(sampler: Box<dyn LoadSampler>) -> Self {
        Self {
            sampler,
            cpu: LoadController::default(),
            global: ScopeState::default(),
            rules: HashMap::new(),
            offline: false,
        }
    }

    /// Never queries Prometheus: its sources give 1.0 (a replay cannot ask the past).
    pub fn offline(mut self) -> Self {
        self.offline = true;
        self
    }

    /// The CPU's smoothing and band (sampled whatever the source: the gauge tells operators
    /// what the host does).
    pub fn cpu(&self) -> &LoadController {
        &self.cpu
    }

    /// Samples the CPU and reads every scope's source: the policy's, then each rule's.
    pub async fn read(
        &mut self,
        now: Micros,
        policy: &Policy,
        thresholds: &Thresholds,
        mut outcomes: ScopedOutcomes,
    ) -> (LoadReading, Vec<RuleReading>) {
        let settings = &policy.adaptive.load;
        let smoothing = settings.smoothing;
        self.cpu
            .update(self.sampler.sample(now), smoothing, thresholds);
        let cpu = &self.cpu;
        let offline = self.offline;
        let global_outcomes = std::mem::take(&mut outcomes.global);
        let global = self.global.read(
            &settings.source,
            smoothing,
            thresholds,
            global_outcomes,
            cpu,
            offline,
        );
        // Rules whose source is gone lose their state with it.
        let mut states = std::mem::take(&mut self.rules);
        let rules = policy
            .endpoints
            .iter()
            .enumerate()
            .filter_map(|(index, rule)| {
                let source = rule.load_source.clone()?;
                let scope = rule.pattern.display();
                let state = states.remove(&scope).unwrap_or_default();
                let rule_outcomes = outcomes.take_rule(index, &rule.pattern);
                Some(async move {
                    let mut state = state;
                    let reading = state
                        .read(&source, smoothing, thresholds, rule_outcomes, cpu, offline)
                        .await;
                    let read = RuleReading {
                        index,
                        pattern: rule.pattern.clone(),
                        scope,
                        source,
                        reading,
                    };
                    (state, read)
                })
            });
        let (global, rules) =
            futures_util::future::join(global, futures_util::future::join_all(rules)).await;
        let mut readings = Vec::with_capacity(rules.len());
        for (state, read) in rules {
            self.rules.insert(read.scope.clone(), state);
            readings.push(read);
        }
        (global, readings)
    }
}
