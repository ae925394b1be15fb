//! One scope's load source state (the policy's, or one endpoint rule's): its upstream
//! gradient and its Prometheus query. A change of the source's settings (a reload) starts it
//! afresh; the CPU controller is shared by every scope and passed in.

use super::load::LoadController;
use super::prometheus::PrometheusLoad;
use super::source::LoadReading;
use super::upstream::UpstreamGradient;
use crate::engine::{IntervalOutcomes, LiveLoad, Thresholds};
use crate::policy::{LoadSource, UpstreamTargets};

#[derive(Default)]
pub struct ScopeState {
    upstream: UpstreamGradient,
    /// The targets the gradient was built for.
    upstream_for: Option<UpstreamTargets>,
    prometheus: Option<PrometheusLoad>,
}

impl ScopeState {
    /// This interval's reading of `source`; `cpu` has taken this cycle's sample already.
    pub async fn read(
        &mut self,
        source: &LoadSource,
        smoothing: f64,
        thresholds: &Thresholds,
        outcomes: IntervalOutcomes,
        cpu: &LoadController,
        offline: bool,
    ) -> LoadReading {
        match source {
            // A replay: the Prometheus of the log's time cannot be asked.
            LoadSource::Prometheus(_) if offline => LoadReading {
                factor: 1.0,
                live: LiveLoad::Fixed(1.0),
                signal: None,
                target: thresholds.load_high,
                upstream: None,
                query_error: None,
            },
            LoadSource::Cpu => LoadReading {
                factor: cpu.factor(thresholds),
                live: cpu.live(),
                signal: cpu.smoothed(),
                target: thresholds.load_high,
                upstream: None,
                query_error: None,
            },
            LoadSource::Upstream(targets) => {
                if self.upstream_for.as_ref() != Some(targets) {
                    self.upstream = UpstreamGradient::default();
                    self.upstream_for = Some(*targets);
                }
                let signal = self.upstream.measure(outcomes, targets);
                let factor = self.upstream.update(signal, smoothing, thresholds);
                LoadReading {
                    factor,
                    live: LiveLoad::Bounded(factor),
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
                let reading = source.read(smoothing, thresholds).await;
                LoadReading {
                    factor: reading.factor,
                    live: source.load().live(),
                    signal: reading.smoothed,
                    target: thresholds.load_high,
                    upstream: None,
                    query_error: reading.error,
                }
            }
        }
    }
}
