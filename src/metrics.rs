//! The Prometheus metrics: one `Metrics`, registered once and passed down.
//!
//! Labels carry rule and tier names from the policy, never raw user ids, IPs or paths.

use prometheus::{
    Encoder, Gauge, Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec,
    Opts, Registry, TextEncoder,
};
use std::time::Duration;

/// Which API a decision came through (`api` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Http,
    Batch,
    Auth,
    Grpc,
}

impl Api {
    pub fn label(self) -> &'static str {
        match self {
            Api::Http => "http",
            Api::Batch => "batch",
            Api::Auth => "auth",
            Api::Grpc => "grpc",
        }
    }
}

/// What one decision is counted under: plain label values, so this module needs no engine type.
#[derive(Debug, Clone, Copy)]
pub struct DecisionLabels<'a> {
    /// The limit that denied, else the one with the least remaining (`none` without one).
    pub rule: &'a str,
    pub tier: &'a str,
    pub outcome: Outcome,
    /// Why it was denied (`quota`, `burst`, ...); `None` when allowed.
    pub reason: Option<&'a str>,
    /// A burst limit denied while the sustained limit still had room.
    pub burst: bool,
    /// The headline limit's name, when 20% or less of it is left after an allowed request.
    pub near_limit: Option<&'a str>,
}

/// A decision's `outcome` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Allowed,
    Denied,
    /// Allowed, but a shadow limit (or shadowed anomaly factor) would have denied.
    ShadowDenied,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Allowed => "allowed",
            Outcome::Denied => "denied",
            Outcome::ShadowDenied => "shadow_denied",
        }
    }
}

pub struct Metrics {
    registry: Registry,
    pub decisions: IntCounterVec,
    pub rejections: IntCounterVec,
    pub bursts: IntCounterVec,
    pub near_limit: IntCounterVec,
    pub decision_duration: HistogramVec,
    pub store_duration: HistogramVec,
    pub store_errors: IntCounterVec,
    pub load_factor: Gauge,
    pub system_cpu_ratio: Gauge,
    pub abuse_score: Histogram,
    pub flagged_subjects: IntGauge,
    pub control_cycle_duration: Histogram,
    pub tier_cache_requests: IntCounterVec,
    pub config_reloads: IntCounterVec,
    pub model_info: IntGaugeVec,
    pub reports: IntCounterVec,
    pub envoy_unmatched: IntCounterVec,
}

/// Latency buckets from 10 µs to 1 s: decisions take microseconds in memory, milliseconds
/// over a network.
const LATENCY_BUCKETS: &[f64] = &[
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025,
    0.05, 0.1, 0.25, 0.5, 1.0,
];

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
            registry
                .register(Box::new(c.clone()))
                .expect("registered once");
            c
        };
        let histogram = |name: &str, help: &str, labels: &[&str], buckets: &[f64]| {
            let h = HistogramVec::new(
                HistogramOpts::new(name, help).buckets(buckets.to_vec()),
                labels,
            )
            .expect("valid metric");
            registry
                .register(Box::new(h.clone()))
                .expect("registered once");
            h
        };
        let decisions = counter(
            "ratewarden_decisions_total",
            "Decisions, by the limit that denied (else the one with the least remaining)",
            &["rule", "tier", "outcome"],
        );
        let rejections = counter(
            "ratewarden_rejections_total",
            "Denied requests by reason",
            &["rule", "tier", "reason"],
        );
        let bursts = counter(
            "ratewarden_bursts_total",
            "Denials by a burst limit while the sustained limit still had room",
            &["rule", "tier"],
        );
        let near_limit = counter(
            "ratewarden_near_limit_total",
            "Allowed requests with 20% or less of the limit left",
            &["rule", "tier"],
        );
        let decision_duration = histogram(
            "ratewarden_decision_duration_seconds",
            "Time to decide a request, by API",
            &["api"],
            LATENCY_BUCKETS,
        );
        let store_duration = histogram(
            "ratewarden_store_duration_seconds",
            "Time of one store round trip",
            &["store"],
            LATENCY_BUCKETS,
        );
        let store_errors = counter(
            "ratewarden_store_errors_total",
            "Store failures, by what the decision did (store.on_error)",
            &["store", "action"],
        );
        let tier_cache_requests = counter(
            "ratewarden_tier_cache_requests_total",
            "Lookups of the local tier cache",
            &["result"],
        );
        let config_reloads = counter(
            "ratewarden_config_reloads_total",
            "Policy and model reloads",
            &["kind", "result"],
        );
        // Every series from the start, at 0: Prometheus sees no increase in a series that is
        // born at 1, so a first failed reload would otherwise never fire an alert.
        for kind in ["policy", "model"] {
            for result in ["success", "error"] {
                config_reloads.with_label_values(&[kind, result]);
            }
        }
        let reports = counter(
            "ratewarden_reports_total",
            "Upstream outcomes reported through /v1/report, by status class",
            &["class"],
        );
        let envoy_unmatched = counter(
            "ratewarden_envoy_unmatched_total",
            "Envoy descriptors that matched no limit, by domain (\"native\" for domains no envoy configuration file names)",
            &["domain"],
        );
        let load_factor =
            Gauge::new("ratewarden_load_factor", "The load factor in force").expect("valid metric");
        let system_cpu_ratio =
            Gauge::new("ratewarden_system_cpu_ratio", "Smoothed CPU use, 0 to 1")
                .expect("valid metric");
        let flagged_subjects = IntGauge::new(
            "ratewarden_flagged_subjects",
            "Subjects at or over the anomaly threshold",
        )
        .expect("valid metric");
        let abuse_score = Histogram::with_opts(
            HistogramOpts::new(
                "ratewarden_abuse_score",
                "Scores of the subjects scored in the last cycle",
            )
            .buckets((1..=10).map(|i| f64::from(i) / 10.0).collect()),
        )
        .expect("valid metric");
        let control_cycle_duration = Histogram::with_opts(
            HistogramOpts::new(
                "ratewarden_control_cycle_duration_seconds",
                "Time of one control cycle",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
        )
        .expect("valid metric");
        let model_info = IntGaugeVec::new(
            Opts::new("ratewarden_model_info", "The abuse model in force (1)"),
            &["version", "kind"],
        )
        .expect("valid metric");
        for metric in [
            Box::new(load_factor.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(system_cpu_ratio.clone()),
            Box::new(flagged_subjects.clone()),
            Box::new(abuse_score.clone()),
            Box::new(control_cycle_duration.clone()),
            Box::new(model_info.clone()),
        ] {
            registry.register(metric).expect("registered once");
        }
        load_factor.set(1.0);
        Self {
            registry,
            decisions,
            rejections,
            bursts,
            near_limit,
            decision_duration,
            store_duration,
            store_errors,
            load_factor,
            system_cpu_ratio,
            abuse_score,
            flagged_subjects,
            control_cycle_duration,
            tier_cache_requests,
            config_reloads,
            model_info,
            reports,
            envoy_unmatched,
        }
    }

    /// The time one API call took to decide (a whole batch counts once).
    pub fn observe_decision(&self, api: Api, elapsed: Duration) {
        self.decision_duration
            .with_label_values(&[api.label()])
            .observe(elapsed.as_secs_f64());
    }

    /// Counts one decision: outcome, reason, bursts, near-limit.
    pub fn record_decision(&self, decision: &DecisionLabels<'_>) {
        let DecisionLabels { rule, tier, .. } = *decision;
        self.decisions
            .with_label_values(&[rule, tier, decision.outcome.label()])
            .inc();
        if let Some(reason) = decision.reason {
            self.rejections
                .with_label_values(&[rule, tier, reason])
                .inc();
            if decision.burst {
                self.bursts.with_label_values(&[rule, tier]).inc();
            }
        }
        if let Some(headline) = decision.near_limit {
            self.near_limit.with_label_values(&[headline, tier]).inc();
        }
    }

    /// Counts one upstream status reported through `/v1/report`, by its class (`4xx`).
    pub fn record_report(&self, status: u16) {
        let class = match status {
            100..=199 => "1xx",
            200..=299 => "2xx",
            300..=399 => "3xx",
            400..=499 => "4xx",
            _ => "5xx",
        };
        self.reports.with_label_values(&[class]).inc();
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut buffer = Vec::new();
        if let Err(error) = TextEncoder::new().encode(&self.registry.gather(), &mut buffer) {
            tracing::error!(%error, "cannot encode metrics");
        }
        String::from_utf8(buffer).unwrap_or_default()
    }
}
