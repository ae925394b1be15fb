//! The decision engine: the use cases every API adapter calls, and nothing of HTTP, gRPC or
//! Redis.
//!
//! Each use case ([`Engine::check`], [`Engine::check_batch`], [`Engine::check_descriptors`],
//! [`Engine::inspect_subject`], [`Engine::report`]) owns the whole sequence: the stored-tier
//! lookup, planning (tier, endpoint rule, keys), scaling by the factors the control loop
//! publishes in [`ScaleFactors`], the store round trip, the [`Decision`], its metrics and its
//! trace in the subject's features. Adapters translate a wire request into one call and the
//! result back into the wire's answer.

mod accounting;
mod check;
mod decision;
mod descriptors;
mod envoy_domain;
mod exemptions;
mod fallback;
mod flag_admin;
mod hasher;
mod inspect;
mod joint;
mod live_load;
mod native;
mod outage;
mod plan;
mod planner;
mod request;
mod resolve;
mod scale;
mod tiers;
mod upstream;

use crate::clock::{Clock, Micros, SystemClock};
use crate::features::Recorder;
use crate::metrics::Metrics;
use crate::policy::{LoadSource, Policy};
use crate::rules::Rules;
use crate::store::{Backend, MemoryStore, Store, StoreError};
use arc_swap::ArcSwap;
use std::sync::Arc;

pub use crate::policy::EndpointPath;
pub use check::BatchError;
pub use decision::{Decision, Reason};
pub use descriptors::{DescriptorOutcome, DescriptorsDecision};
pub use envoy_domain::{DescriptorRequest, LimitOverride};
pub use exemptions::{Exemption, Exemptions};
pub use flag_admin::FlaggedSubject;
pub use hasher::{SubjectHasher, hash_key};
pub use inspect::{InspectError, LimitUsage, SubjectInspection, SubjectQuery, TierSource};
pub use live_load::{Band, LiveLoad};
pub use outage::{Answered, StoreOutage};
pub use plan::{FeatureTrace, Plan};
pub use request::{
    CheckError, CheckRequest, Cost, MAX_COST, MAX_ENDPOINT_BYTES, MAX_USER_BYTES, path_of,
};
pub use resolve::{DescriptorLimit, Resolved};
pub use scale::{RuleLoadFactor, ScaleFactors, SubjectStanding, Thresholds};
pub use tiers::{SetTierError, TierCache};
pub use upstream::{
    IntervalOutcomes, MAX_LATENCIES_PER_INTERVAL, Outcome, ScopedOutcomes, UpstreamOutcomes,
};

pub struct Engine<S = Backend> {
    rules: ArcSwap<Rules>,
    store: S,
    /// The per-instance limiter for `on_error: local` (absent when the store is local already).
    fallback: Option<MemoryStore>,
    hasher: SubjectHasher,
    scale: Arc<ScaleFactors>,
    tiers: TierCache,
    metrics: Arc<Metrics>,
    /// This store's latency histogram, resolved once (a label lookup per decision is costly).
    store_latency: prometheus::Histogram,
    /// Every decision and report is recorded here for the control loop's features.
    recorder: Arc<Recorder>,
    /// Reported outcomes for the `upstream` load source, drained each control cycle.
    upstream: UpstreamOutcomes,
    clock: Arc<dyn Clock>,
    /// The store outage in progress, told once (request path and control loop alike).
    outage: Arc<StoreOutage>,
}

/// Subjects whose features are tracked at once (about 280 bytes each, window included); see
/// [`Recorder`].
pub const TRACKED_SUBJECTS: usize = 1_000_000;

/// Exports at 0 every series whose labels the policy and the store fix: the store's errors by
/// action, each limit's decisions for every tier it is checked for, and the load series of
/// every rule with its own source.
fn declare(metrics: &Metrics, policy: &Policy, store: &str) {
    metrics.declare_store(store);
    let shared: Vec<&str> = policy
        .endpoints
        .iter()
        .chain(std::iter::once(&policy.default_endpoint))
        .flat_map(|rule| rule.limits.iter().map(|l| l.name.as_str()))
        .collect();
    for tier in &policy.tiers {
        let own = tier.limits.iter().map(|l| l.name.as_str());
        for rule in own.chain(shared.iter().copied()) {
            metrics.declare_limit(rule, &tier.name);
        }
    }
    for rule in policy.endpoints.iter().filter(|r| r.load_source.is_some()) {
        metrics.load.declare(&rule.pattern.display());
    }
}

impl<S: Store> Engine<S> {
    /// An engine over `rules` (a [`Policy`] alone, or with its envoy configuration).
    pub fn new(rules: impl Into<Rules>, store: S, hasher: SubjectHasher) -> Self {
        let rules = rules.into();
        let scale = Arc::new(ScaleFactors::new(Thresholds::from_policy(&rules.policy)));
        let metrics = Arc::new(Metrics::new());
        declare(&metrics, &rules.policy, store.kind().label());
        Self {
            rules: ArcSwap::from_pointee(rules),
            fallback: None,
            hasher,
            scale,
            tiers: TierCache::new(metrics.clone()),
            store_latency: metrics
                .store_duration
                .with_label_values(&[store.kind().label()]),
            store,
            metrics,
            recorder: Arc::new(Recorder::new(TRACKED_SUBJECTS)),
            upstream: UpstreamOutcomes::default(),
            clock: Arc::new(SystemClock::new()),
            outage: Arc::new(StoreOutage::new()),
        }
    }

    /// Uses `clock` for the time of recorded activity (the store keeps its own clock).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Uses `metrics` (the daemon's one registry) instead of a private one.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        declare(
            &metrics,
            &self.rules.load().policy,
            self.store.kind().label(),
        );
        self.tiers = TierCache::new(metrics.clone());
        self.store_latency = metrics
            .store_duration
            .with_label_values(&[self.store.kind().label()]);
        self.metrics = metrics;
        self
    }

    /// Sets the per-instance limiter used while the store fails under `on_error: local`.
    pub fn with_fallback(mut self, fallback: MemoryStore) -> Self {
        self.fallback = Some(fallback);
        self
    }

    pub fn recorder(&self) -> &Arc<Recorder> {
        &self.recorder
    }

    /// The outcomes reported since the last control cycle (the `upstream` load source).
    pub fn upstream_outcomes(&self) -> &UpstreamOutcomes {
        &self.upstream
    }

    pub fn now(&self) -> Micros {
        self.clock.now()
    }

    pub fn policy(&self) -> Arc<Policy> {
        self.rules.load().policy.clone()
    }

    pub fn rules(&self) -> Arc<Rules> {
        self.rules.load_full()
    }

    /// Swaps in new rules. Usage stays with limits that keep their names, and the live
    /// thresholds reset to the file's values (the file is the source of truth).
    pub fn reload(&self, rules: impl Into<Rules>) {
        let rules = rules.into();
        declare(&self.metrics, &rules.policy, self.store.kind().label());
        let _writes = self.scale.lock_writes();
        self.scale
            .set_thresholds(Thresholds::from_policy(&rules.policy));
        self.rules.store(Arc::new(rules));
    }

    pub fn scale_factors(&self) -> &Arc<ScaleFactors> {
        &self.scale
    }

    pub fn hasher(&self) -> &SubjectHasher {
        &self.hasher
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The store outage tracker, which the control loop reports its store calls to as well.
    pub fn store_outage(&self) -> &Arc<StoreOutage> {
        &self.outage
    }

    /// A store call answered: ends an outage in progress.
    pub(super) fn store_answered(&self) {
        self.outage.answered(|| self.clock.now());
    }

    /// Whether the store answers (readiness).
    pub async fn ready(&self) -> Result<(), StoreError> {
        self.store.ping().await
    }

    /// Records an upstream's outcome: the status for its user (the error-rate feature), and
    /// status and latency for the `upstream` load source; counts it.
    pub fn report(&self, outcome: &Outcome<'_>) {
        self.metrics.record_report(outcome.status);
        let subject = self.hasher.user(outcome.user);
        self.recorder
            .record_status(subject, self.clock.now(), outcome.status);
        let policy = self.policy();
        // The rule the endpoint matches, when it has an `upstream` source of its own.
        let own_source = policy
            .endpoints
            .iter()
            .enumerate()
            .find(|(_, rule)| rule.pattern.matches(&outcome.endpoint))
            .filter(|(_, rule)| matches!(rule.load_source, Some(LoadSource::Upstream(_))))
            .map(|(i, rule)| (i, &rule.pattern));
        self.upstream
            .record(own_source, outcome.status, outcome.latency_ms);
    }
}
