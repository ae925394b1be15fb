//! The load sources' series, by `scope` (`global`, or the endpoint rule with its own source):
//! the signal, what it is held to, the factor it gives, and for `upstream` the latency and
//! error share behind the signal. Dashboards plot signal against target per source.

use super::{Family, registered};
use prometheus::{GaugeVec, IntCounterVec, Opts, Registry};

/// The scope of `adaptive.load`, the policy-wide source.
pub const GLOBAL_SCOPE: &str = "global";

const LOAD_SIGNAL: Family = Family {
    name: "ratewarden_load_signal",
    help: "The load source's smoothed signal: the CPU share or query value (0 to 1), or the upstream pressure (1 at target)",
    labels: &["scope"],
};
const LOAD_TARGET: Family = Family {
    name: "ratewarden_load_target",
    help: "What the signal is held to: adaptive.load.high (cpu, prometheus) or 1 (upstream)",
    labels: &["scope"],
};
const LOAD_SOURCE_FACTOR: Family = Family {
    name: "ratewarden_load_source_factor",
    help: "The factor the scope's load source gives (before factor_override and --pin-load-factor)",
    labels: &["scope"],
};
const UPSTREAM_LATENCY: Family = Family {
    name: "ratewarden_upstream_latency_seconds",
    help: "The reported upstream latency at the policy's percentile, last interval",
    labels: &["scope"],
};
const UPSTREAM_LATENCY_TARGET: Family = Family {
    name: "ratewarden_upstream_latency_target_seconds",
    help: "adaptive.load.upstream.latency_target",
    labels: &["scope"],
};
const UPSTREAM_ERROR: Family = Family {
    name: "ratewarden_upstream_error_ratio",
    help: "The share of reported upstream outcomes with a 5xx status, last interval",
    labels: &["scope"],
};
const UPSTREAM_ERROR_TARGET: Family = Family {
    name: "ratewarden_upstream_error_target_ratio",
    help: "adaptive.load.upstream.error_target",
    labels: &["scope"],
};
const LOAD_QUERY_ERRORS: Family = Family {
    name: "ratewarden_load_query_errors_total",
    help: "Prometheus load queries that failed or timed out",
    labels: &["scope"],
};

pub struct LoadMetrics {
    pub signal: GaugeVec,
    pub target: GaugeVec,
    pub factor: GaugeVec,
    pub upstream_latency: GaugeVec,
    pub upstream_latency_target: GaugeVec,
    pub upstream_errors: GaugeVec,
    pub upstream_error_target: GaugeVec,
    pub query_errors: IntCounterVec,
}

fn gauge_vec(family: &Family, registry: &Registry) -> GaugeVec {
    registered(
        registry,
        GaugeVec::new(Opts::new(family.name, family.help), family.labels),
    )
}

impl LoadMetrics {
    pub(super) fn new(registry: &Registry) -> Self {
        Self {
            signal: gauge_vec(&LOAD_SIGNAL, registry),
            target: gauge_vec(&LOAD_TARGET, registry),
            factor: gauge_vec(&LOAD_SOURCE_FACTOR, registry),
            upstream_latency: gauge_vec(&UPSTREAM_LATENCY, registry),
            upstream_latency_target: gauge_vec(&UPSTREAM_LATENCY_TARGET, registry),
            upstream_errors: gauge_vec(&UPSTREAM_ERROR, registry),
            upstream_error_target: gauge_vec(&UPSTREAM_ERROR_TARGET, registry),
            query_errors: LOAD_QUERY_ERRORS.counter_vec(registry),
        }
    }

    /// Exports every series of `scope` (the factor at 1, the others at 0). A scope already
    /// exported keeps its values: a reload declares every rule's scope again, and a rule's
    /// factor is not back at 1 until its source says so.
    pub fn declare(&self, scope: &str) {
        if self.declared(scope) {
            return;
        }
        for gauge in [
            &self.signal,
            &self.target,
            &self.upstream_latency,
            &self.upstream_latency_target,
            &self.upstream_errors,
            &self.upstream_error_target,
        ] {
            gauge.with_label_values(&[scope]);
        }
        self.factor.with_label_values(&[scope]).set(1.0);
        self.query_errors.with_label_values(&[scope]);
    }

    /// Whether `scope`'s factor is exported (read off the collected series: only a start-up
    /// or a reload asks).
    fn declared(&self, scope: &str) -> bool {
        use prometheus::core::Collector;
        self.factor.collect().iter().any(|family| {
            family.get_metric().iter().any(|metric| {
                metric
                    .get_label()
                    .iter()
                    .any(|label| label.name() == "scope" && label.value() == scope)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declaring_a_scope_again_keeps_its_factor() {
        let metrics = LoadMetrics::new(&Registry::new());
        metrics.declare("/api/export*");
        assert_eq!(
            metrics.factor.with_label_values(&["/api/export*"]).get(),
            1.0
        );
        metrics
            .factor
            .with_label_values(&["/api/export*"])
            .set(0.345);
        // A reload declares every rule's scope again: the factor its source gave stays.
        metrics.declare("/api/export*");
        assert_eq!(
            metrics.factor.with_label_values(&["/api/export*"]).get(),
            0.345
        );
        metrics.declare("/api/new*");
        assert_eq!(metrics.factor.with_label_values(&["/api/new*"]).get(), 1.0);
    }
}
