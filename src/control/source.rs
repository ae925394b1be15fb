//! The load factor from the source the policy names (`adaptive.load.source`): the CPU, the
//! reported upstream outcomes, or a Prometheus query. Each source keeps its own state; a
//! reload that changes a source's settings starts that source afresh.

use super::load::{LoadController, LoadSampler};
use super::prometheus::{PrometheusLoad, QueryError};
use super::upstream::{UpstreamGradient, UpstreamSignal};
use crate::clock::Micros;
use crate::engine::{IntervalOutcomes, Thresholds};
use crate::metrics::LoadMetrics;
use crate::policy::{LoadSettings, LoadSource};

/// What the chosen source measured this cycle.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadReading {
    pub factor: f64,
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
            if let Some(ms) = u.latency_ms {
                metrics
                    .upstream_latency
                    .with_label_values(&labels)
                    .set(ms / 1000.0);
            }
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
    upstream: UpstreamGradient,
    /// Settings the gradient was built for: new targets start it afresh.
    upstream_for: Option<crate::policy::UpstreamTargets>,
    prometheus: Option<PrometheusLoad>,
}

impl LoadSources {
    pub fn new(sampler: Box<dyn LoadSampler>) -> Self {
        Self {
            sampler,
            cpu: LoadController::default(),
            upstream: UpstreamGradient::default(),
            upstream_for: None,
            prometheus: None,
        }
    }

    /// The CPU's smoothing and band (sampled whatever the source: the gauge tells operators
    /// what the host does).
    pub fn cpu(&self) -> &LoadController {
        &self.cpu
    }

    /// Samples the CPU, reads the chosen source, and returns its factor and signal.
    pub async fn read(
        &mut self,
        now: Micros,
        settings: &LoadSettings,
        thresholds: &Thresholds,
        mut outcomes: IntervalOutcomes,
    ) -> LoadReading {
        let cpu_factor = self
            .cpu
            .update(self.sampler.sample(now), settings.smoothing, thresholds);
        match &settings.source {
            LoadSource::Cpu => LoadReading {
                factor: cpu_factor,
                signal: self.cpu.smoothed(),
                target: thresholds.load_high,
                upstream: None,
                query_error: None,
            },
            LoadSource::Upstream(targets) => {
                if self.upstream_for.as_ref() != Some(targets) {
                    self.upstream = UpstreamGradient::default();
                    self.upstream_for = Some(*targets);
                }
                let signal = UpstreamSignal::measure(&mut outcomes, targets);
                let factor = self.upstream.update(signal, settings.smoothing, thresholds);
                LoadReading {
                    factor,
                    signal: signal.map(|s| s.pressure),
                    target: 1.0,
                    upstream: signal,
                    query_error: None,
                }
            }
            LoadSource::Prometheus(query) => {
                let source = match &mut self.prometheus {
                    Some(p) if p.query() == query => p,
                    slot => slot.insert(PrometheusLoad::new(query.clone())),
                };
                let reading = source.read(settings.smoothing, thresholds).await;
                LoadReading {
                    factor: reading.factor,
                    signal: reading.smoothed,
                    target: thresholds.load_high,
                    upstream: None,
                    query_error: reading.error,
                }
            }
        }
    }
}
