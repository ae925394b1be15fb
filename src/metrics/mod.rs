//! The Prometheus metrics: one `Metrics`, registered once and passed down.
//!
//! Labels carry the policy's own names and path patterns, never a value from a request (a
//! user id, an address, a requested path).

use prometheus::core::Collector;
use prometheus::{
    Encoder, Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};
use std::time::Duration;

mod load;

pub use load::{GLOBAL_SCOPE, LoadMetrics};

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
    pub flags: IntCounterVec,
    pub novel_subjects: IntGauge,
    pub untracked_events: IntCounter,
    pub control_cycle_duration: Histogram,
    pub tier_cache_requests: IntCounterVec,
    pub tier_lookup_errors: IntCounter,
    pub unknown_stored_tiers: IntCounterVec,
    pub config_reloads: IntCounterVec,
    pub model_info: IntGaugeVec,
    pub policy_file_refused: IntGauge,
    pub model_file_refused: IntGauge,
    pub reports: IntCounterVec,
    pub envoy_unmatched: IntCounterVec,
    pub envoy_refused: IntCounter,
    pub control_store_errors: IntCounter,
    /// The load sources' signals, targets and factors.
    pub load: LoadMetrics,
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

/// A metric's name and help text, and its label names when it has any.
struct Family {
    name: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
}

// The catalogue, one family per `Metrics` field.
const DECISIONS: Family = Family {
    name: "ratewarden_decisions_total",
    help: "Decisions, by the limit that denied (else the one with the least remaining)",
    labels: &["rule", "tier", "outcome"],
};
const REJECTIONS: Family = Family {
    name: "ratewarden_rejections_total",
    help: "Denied requests by reason",
    labels: &["rule", "tier", "reason"],
};
const BURSTS: Family = Family {
    name: "ratewarden_bursts_total",
    help: "Denials by a burst limit while the sustained limit still had room",
    labels: &["rule", "tier"],
};
const NEAR_LIMIT: Family = Family {
    name: "ratewarden_near_limit_total",
    help: "Allowed requests with 20% or less of the limit left",
    labels: &["rule", "tier"],
};
const DECISION_DURATION: Family = Family {
    name: "ratewarden_decision_duration_seconds",
    help: "Time to decide a request, by API",
    labels: &["api"],
};
const STORE_DURATION: Family = Family {
    name: "ratewarden_store_duration_seconds",
    help: "Time of one store round trip",
    labels: &["store"],
};
const STORE_ERRORS: Family = Family {
    name: "ratewarden_store_errors_total",
    help: "Store failures, by what the decision did (store.on_error)",
    labels: &["store", "action"],
};
const TIER_CACHE_REQUESTS: Family = Family {
    name: "ratewarden_tier_cache_requests_total",
    help: "Lookups of the local tier cache",
    labels: &["result"],
};
const TIER_LOOKUP_ERRORS: Family = Family {
    name: "ratewarden_tier_lookup_errors_total",
    help: "Tier store lookups that failed; those requests got the default tier",
    labels: &[],
};
const UNKNOWN_STORED_TIERS: Family = Family {
    name: "ratewarden_unknown_stored_tier_total",
    help: "Decisions whose subject's stored tier (set through the admin API) the policy in force does not have, by that tier's name; those requests got default_tier",
    labels: &["tier"],
};
const CONFIG_RELOADS: Family = Family {
    name: "ratewarden_config_reloads_total",
    help: "Policy and model reloads",
    labels: &["kind", "result"],
};
const REPORTS: Family = Family {
    name: "ratewarden_reports_total",
    help: "Upstream outcomes reported through /v1/report, by status class",
    labels: &["class"],
};
const ENVOY_UNMATCHED: Family = Family {
    name: "ratewarden_envoy_unmatched_total",
    help: "Envoy descriptors that matched no limit, by domain (\"native\" for domains no envoy configuration file names)",
    labels: &["domain"],
};
const ENVOY_REFUSED: Family = Family {
    name: "ratewarden_envoy_refused_total",
    help: "Native Envoy descriptors answered OVER_LIMIT because the policy cannot decide on their values (a subject or endpoint it refuses, an unknown tier, a bad or missing address); each is logged at debug",
    labels: &[],
};
const CONTROL_STORE_ERRORS: Family = Family {
    name: "ratewarden_control_store_errors_total",
    help: "Control cycles whose shared-state store calls failed (fleet mode): this daemon's activity, the lease or the standings did not reach the store, so scoring across the fleet may have stopped",
    labels: &[],
};
const LOAD_FACTOR: Family = Family {
    name: "ratewarden_load_factor",
    help: "The load factor in force",
    labels: &[],
};
const SYSTEM_CPU_RATIO: Family = Family {
    name: "ratewarden_system_cpu_ratio",
    help: "Smoothed CPU use, 0 to 1",
    labels: &[],
};
const FLAGGED_SUBJECTS: Family = Family {
    name: "ratewarden_flagged_subjects",
    help: "Subjects at or over the anomaly threshold",
    labels: &[],
};
const FLAGS: Family = Family {
    name: "ratewarden_flags_total",
    help: "Flags begun, by the feature that contributed most to the score",
    labels: &["top_feature"],
};
const NOVEL_SUBJECTS: Family = Family {
    name: "ratewarden_novel_subjects",
    help: "Scored subjects with a feature outside the model's training range",
    labels: &[],
};
const UNTRACKED_EVENTS: Family = Family {
    name: "ratewarden_anomaly_untracked_events_total",
    help: "Decisions and reports the abuse model did not record because it already tracked as many subjects as it can: their subjects go unscored",
    labels: &[],
};
const ABUSE_SCORE: Family = Family {
    name: "ratewarden_abuse_score",
    help: "Every abuse score of every control cycle",
    labels: &[],
};
const CONTROL_CYCLE_DURATION: Family = Family {
    name: "ratewarden_control_cycle_duration_seconds",
    help: "Time of one control cycle",
    labels: &[],
};
const MODEL_INFO: Family = Family {
    name: "ratewarden_model_info",
    help: "The abuse model in force (1)",
    labels: &["version", "kind"],
};

const POLICY_FILE_REFUSED: Family = Family {
    name: "ratewarden_policy_file_refused",
    help: "1 while the policy file on disk was refused at its last reload and an older policy is in force",
    labels: &[],
};

const MODEL_FILE_REFUSED: Family = Family {
    name: "ratewarden_model_file_refused",
    help: "1 while the model file the policy names was refused when last read (start-up included)",
    labels: &[],
};

/// `store_errors_total{action}`: what a decision did when the store failed.
pub const STORE_ERROR_ACTIONS: [&str; 3] = ["local", "allowed", "denied"];
/// `rejections_total{reason}` of a limit (`store_unavailable` names no limit).
pub const LIMIT_REASONS: [&str; 4] = ["quota", "burst", "load", "anomaly"];
/// `reports_total{class}`.
pub const REPORT_CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];
/// `decision_duration_seconds{api}`.
pub const APIS: [Api; 4] = [Api::Http, Api::Batch, Api::Auth, Api::Grpc];

/// Registers `metric` and hands it back: the registry keeps a clone, which shares its series.
fn registered<M: Collector + Clone + 'static>(
    registry: &Registry,
    metric: prometheus::Result<M>,
) -> M {
    let metric = metric.expect("valid metric");
    registry
        .register(Box::new(metric.clone()))
        .expect("registered once");
    metric
}

impl Family {
    fn opts(&self) -> Opts {
        Opts::new(self.name, self.help)
    }

    fn histogram_opts(&self, buckets: Vec<f64>) -> HistogramOpts {
        HistogramOpts::new(self.name, self.help).buckets(buckets)
    }

    fn counter_vec(&self, registry: &Registry) -> IntCounterVec {
        registered(registry, IntCounterVec::new(self.opts(), self.labels))
    }

    fn histogram_vec(&self, registry: &Registry, buckets: &[f64]) -> HistogramVec {
        let opts = self.histogram_opts(buckets.to_vec());
        registered(registry, HistogramVec::new(opts, self.labels))
    }

    fn histogram(&self, registry: &Registry, buckets: Vec<f64>) -> Histogram {
        registered(registry, Histogram::with_opts(self.histogram_opts(buckets)))
    }

    fn gauge(&self, registry: &Registry) -> Gauge {
        registered(registry, Gauge::with_opts(self.opts()))
    }

    fn int_counter(&self, registry: &Registry) -> IntCounter {
        registered(registry, IntCounter::with_opts(self.opts()))
    }

    fn int_gauge(&self, registry: &Registry) -> IntGauge {
        registered(registry, IntGauge::with_opts(self.opts()))
    }

    fn int_gauge_vec(&self, registry: &Registry) -> IntGaugeVec {
        registered(registry, IntGaugeVec::new(self.opts(), self.labels))
    }
}

/// Abuse score buckets: tenths from 0.1 to 1.
fn score_buckets() -> Vec<f64> {
    (1..=10).map(|i| f64::from(i) / 10.0).collect()
}

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let metrics = Self {
            decisions: DECISIONS.counter_vec(&registry),
            rejections: REJECTIONS.counter_vec(&registry),
            bursts: BURSTS.counter_vec(&registry),
            near_limit: NEAR_LIMIT.counter_vec(&registry),
            decision_duration: DECISION_DURATION.histogram_vec(&registry, LATENCY_BUCKETS),
            store_duration: STORE_DURATION.histogram_vec(&registry, LATENCY_BUCKETS),
            store_errors: STORE_ERRORS.counter_vec(&registry),
            tier_cache_requests: TIER_CACHE_REQUESTS.counter_vec(&registry),
            tier_lookup_errors: TIER_LOOKUP_ERRORS.int_counter(&registry),
            unknown_stored_tiers: UNKNOWN_STORED_TIERS.counter_vec(&registry),
            config_reloads: CONFIG_RELOADS.counter_vec(&registry),
            reports: REPORTS.counter_vec(&registry),
            envoy_unmatched: ENVOY_UNMATCHED.counter_vec(&registry),
            envoy_refused: ENVOY_REFUSED.int_counter(&registry),
            control_store_errors: CONTROL_STORE_ERRORS.int_counter(&registry),
            load_factor: LOAD_FACTOR.gauge(&registry),
            system_cpu_ratio: SYSTEM_CPU_RATIO.gauge(&registry),
            flagged_subjects: FLAGGED_SUBJECTS.int_gauge(&registry),
            flags: FLAGS.counter_vec(&registry),
            novel_subjects: NOVEL_SUBJECTS.int_gauge(&registry),
            untracked_events: UNTRACKED_EVENTS.int_counter(&registry),
            abuse_score: ABUSE_SCORE.histogram(&registry, score_buckets()),
            control_cycle_duration: CONTROL_CYCLE_DURATION
                .histogram(&registry, LATENCY_BUCKETS.to_vec()),
            model_info: MODEL_INFO.int_gauge_vec(&registry),
            policy_file_refused: POLICY_FILE_REFUSED.int_gauge(&registry),
            model_file_refused: MODEL_FILE_REFUSED.int_gauge(&registry),
            load: LoadMetrics::new(&registry),
            registry,
        };
        // Every series from the start, at 0: Prometheus sees no increase in a series that is
        // born at 1, so a first failed reload would otherwise never fire an alert.
        for kind in ["policy", "model"] {
            for result in ["success", "error"] {
                metrics.config_reloads.with_label_values(&[kind, result]);
            }
        }
        for result in ["hit", "miss"] {
            metrics.tier_cache_requests.with_label_values(&[result]);
        }
        for class in REPORT_CLASSES {
            metrics.reports.with_label_values(&[class]);
        }
        for api in APIS {
            metrics.decision_duration.with_label_values(&[api.label()]);
        }
        metrics.load_factor.set(1.0);
        metrics.load.declare(GLOBAL_SCOPE);
        metrics
    }

    /// Exports the series of the store in use at 0: its latency and its errors by every
    /// action.
    pub fn declare_store(&self, store: &str) {
        self.store_duration.with_label_values(&[store]);
        for action in STORE_ERROR_ACTIONS {
            self.store_errors.with_label_values(&[store, action]);
        }
    }

    /// Exports `flags_total` at 0 for every value its `top_feature` can take.
    pub fn declare_flag_features(&self, features: &[&str]) {
        for feature in features {
            self.flags.with_label_values(&[feature]);
        }
    }

    /// Exports the decision series of one limit (`rule`) checked for `tier` at 0: every
    /// outcome, every reason, bursts and near-limit.
    pub fn declare_limit(&self, rule: &str, tier: &str) {
        for outcome in [Outcome::Allowed, Outcome::Denied, Outcome::ShadowDenied] {
            self.decisions
                .with_label_values(&[rule, tier, outcome.label()]);
        }
        for reason in LIMIT_REASONS {
            self.rejections.with_label_values(&[rule, tier, reason]);
        }
        self.bursts.with_label_values(&[rule, tier]);
        self.near_limit.with_label_values(&[rule, tier]);
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
            100..=199 => REPORT_CLASSES[0],
            200..=299 => REPORT_CLASSES[1],
            300..=399 => REPORT_CLASSES[2],
            400..=499 => REPORT_CLASSES[3],
            _ => REPORT_CLASSES[4],
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
