//! The decision engine: resolves the policy for a request, scales its limits, and asks the
//! store to apply them all at once.
//!
//! It knows nothing of HTTP, gRPC or Redis: adapters hand it a [`CheckRequest`] and get a
//! [`Decision`] back; the store is whatever [`Store`] it was built with; the scale factors
//! are read from [`ScaleFactors`], which the control loop writes.

mod decision;
mod descriptor;
mod hasher;
mod plan;
mod request;
mod resolve;
mod scale;
mod tiers;
mod together;

use crate::clock::{Clock, Micros, SystemClock};
use crate::features::Recorder;
use crate::limit::KeyHash;
use crate::metrics::Metrics;
use crate::policy::{KeyScope, Policy};
use crate::store::OnError;
use crate::store::{Applied, Backend, MemoryStore, Request, Store, StoreError};
use arc_swap::ArcSwap;
use std::sync::Arc;

pub use decision::{Decision, Reason};
pub use descriptor::{Described, DescriptorRequest, LimitOverride};
pub use hasher::SubjectHasher;
pub use plan::{Activity, Plan};
pub use request::{CheckError, CheckRequest, Cost, MAX_COST, path_of};
pub use resolve::{DescriptorLimit, Resolved};
pub use scale::{ScaleFactors, Standing, Thresholds};
pub use tiers::TierCache;
pub use together::Together;

/// A batch item the policy cannot decide, with its position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("requests[{index}]: {error}")]
pub struct BatchError {
    pub index: usize,
    pub error: CheckError,
}

pub struct Engine<S = Backend> {
    policy: ArcSwap<Policy>,
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
    clock: Arc<dyn Clock>,
}

/// Subjects whose features are tracked at once (about 200 bytes each); see [`Recorder`].
pub const TRACKED_SUBJECTS: usize = 1_000_000;

impl<S: Store> Engine<S> {
    pub fn new(policy: Policy, store: S, hasher: SubjectHasher) -> Self {
        let scale = Arc::new(ScaleFactors::new(Thresholds::from_policy(&policy)));
        let metrics = Arc::new(Metrics::new());
        Self {
            policy: ArcSwap::from_pointee(policy),
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
            clock: Arc::new(SystemClock::new()),
        }
    }

    /// Uses `clock` for the time of recorded activity (the store keeps its own clock).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    pub fn recorder(&self) -> &Arc<Recorder> {
        &self.recorder
    }

    pub fn now(&self) -> Micros {
        self.clock.now()
    }

    /// Records an upstream's status for a user (the error-rate feature).
    pub fn report(&self, user: &str, status: u16) {
        let subject = self.hasher.user(user);
        self.recorder
            .record_status(subject, self.clock.now(), status);
    }

    /// Uses `metrics` (the daemon's one registry) instead of a private one.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
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

    pub fn policy(&self) -> Arc<Policy> {
        self.policy.load_full()
    }

    /// Swaps in a new policy. Usage stays with limits that keep their names, and the live
    /// thresholds reset to the file's values (the file is the source of truth).
    pub fn reload(&self, policy: Policy) {
        let _writes = self.scale.lock_writes();
        self.scale.set_thresholds(Thresholds::from_policy(&policy));
        self.policy.store(Arc::new(policy));
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

    /// The tier stored for a user, through the local cache; `None` when none is stored or the
    /// store cannot say (the default tier applies then).
    pub async fn stored_tier(&self, user: &str) -> Option<Arc<str>> {
        if !self.store.has_tiers() {
            return None;
        }
        let subject = self.hasher.user(user);
        self.tiers.get(subject, || self.store.tier(subject)).await
    }

    /// The stored tiers of a batch's users (those without a `tier`), in one lookup.
    async fn stored_tiers(&self, requests: &[CheckRequest<'_>]) -> Vec<Option<Arc<str>>> {
        if !self.store.has_tiers() {
            return vec![None; requests.len()];
        }
        let asking: Vec<usize> = (0..requests.len())
            .filter(|&i| requests[i].tier.is_none())
            .collect();
        let subjects: Vec<KeyHash> = asking
            .iter()
            .map(|&i| self.hasher.user(requests[i].user))
            .collect();
        let found = self
            .tiers
            .get_many(&subjects, |missing| async move {
                self.store.tiers(&missing).await
            })
            .await;
        let mut stored = vec![None; requests.len()];
        for (i, tier) in asking.into_iter().zip(found) {
            stored[i] = tier;
        }
        stored
    }

    /// Stores (or removes) a user's tier; the local cache forgets it at once.
    pub async fn set_stored_tier(
        &self,
        user: &str,
        tier: Option<&str>,
    ) -> Result<KeyHash, SetTierError> {
        if let Some(name) = tier {
            if self.policy().tier_index(name).is_none() {
                return Err(SetTierError::UnknownTier(name.to_owned()));
            }
        }
        let subject = self.hasher.user(user);
        self.store.set_tier(subject, tier).await?;
        self.tiers.forget(subject).await;
        Ok(subject)
    }

    /// Resolves tier, rule, keys and scales for a request. A tier named by the request must
    /// exist; a stored tier the policy no longer has falls back to the default tier.
    pub fn plan(
        &self,
        request: &CheckRequest<'_>,
        stored_tier: Option<&str>,
    ) -> Result<Plan, CheckError> {
        self.plan_with(request, stored_tier, |policy, tier| {
            Resolved::new(policy, tier, request.endpoint)
        })
    }

    /// Like [`Engine::plan`], but with the limits of `default_endpoint` whatever
    /// `request.endpoint` would match (the admin view of a subject without an endpoint).
    pub fn plan_default_endpoint(
        &self,
        request: &CheckRequest<'_>,
        stored_tier: Option<&str>,
    ) -> Result<Plan, CheckError> {
        self.plan_with(request, stored_tier, Resolved::default_endpoint)
    }

    fn plan_with(
        &self,
        request: &CheckRequest<'_>,
        stored_tier: Option<&str>,
        resolve: impl FnOnce(Arc<Policy>, usize) -> Resolved,
    ) -> Result<Plan, CheckError> {
        let policy = self.policy.load_full();
        let tier = match request.tier {
            Some(name) => policy
                .tier_index(name)
                .ok_or_else(|| CheckError::UnknownTier(name.to_owned()))?,
            None => stored_tier
                .and_then(|name| policy.tier_index(name))
                .unwrap_or(policy.default_tier),
        };
        let resolved = resolve(policy, tier);
        let rule = resolved.rule();
        let ip = match (rule.key, request.ip) {
            (KeyScope::Ip, Some(ip)) => Some(self.hasher.ip(ip)),
            (KeyScope::Ip, None) if !rule.limits.is_empty() => {
                return Err(CheckError::MissingIp {
                    rule: rule.path_in_file.clone(),
                    path: rule.pattern.display(),
                });
            }
            _ => None,
        };
        let user = self.hasher.user(request.user);
        let activity = Activity {
            endpoint: self.hasher.feature(b'e', request.endpoint.as_bytes()),
            ip: request.ip.map(|ip| self.hasher.feature_ip(ip)),
        };
        Ok(self.scaled_plan(resolved, user, ip, Some(user), request.cost, Some(activity)))
    }

    /// A plan counting under `key`, scaled by the load factor and by the anomaly standing of
    /// `subject` (none for a request without one).
    fn scaled_plan(
        &self,
        resolved: Resolved,
        key: KeyHash,
        ip: Option<KeyHash>,
        subject: Option<KeyHash>,
        cost: Cost,
        activity: Option<Activity>,
    ) -> Plan {
        let standing = subject.and_then(|s| self.scale.standing(s));
        let thresholds = self.scale.thresholds();
        let flagged =
            standing.is_some_and(|s| s.flagged(thresholds.anomaly_threshold, self.clock.now()));
        Plan {
            resolved,
            user: key,
            ip,
            cost: cost.get(),
            load_factor: thresholds
                .load_factor_override
                .unwrap_or_else(|| self.scale.measured_load_factor()),
            anomaly_factor: if flagged {
                thresholds.anomaly_factor
            } else {
                1.0
            },
            anomaly_enforced: !thresholds.anomaly_shadow,
            abuse_score: standing.map(|s| s.abuse_score),
            flagged,
            activity,
        }
    }

    /// Decides one request, consuming its cost when it is allowed.
    pub async fn check(&self, request: &CheckRequest<'_>) -> Result<Decision, CheckError> {
        let stored = match request.tier {
            Some(_) => None,
            None => self.stored_tier(request.user).await,
        };
        let plan = self.plan(request, stored.as_deref())?;
        Ok(self.decide(plan).await)
    }

    /// Decides a planned request.
    pub async fn decide(&self, plan: Plan) -> Decision {
        let started = quanta::Instant::now();
        let result = self.store.apply(&plan.store_request(false)).await;
        self.observe_store(started);
        self.conclude(plan, result)
    }

    /// Decides requests in order, each as if sent alone, in one store round trip.
    pub async fn check_batch(
        &self,
        requests: &[CheckRequest<'_>],
    ) -> Result<Vec<Decision>, BatchError> {
        let stored = self.stored_tiers(requests).await;
        let mut plans = Vec::with_capacity(requests.len());
        for (index, (request, stored)) in requests.iter().zip(&stored).enumerate() {
            plans.push(
                self.plan(request, stored.as_deref())
                    .map_err(|error| BatchError { index, error })?,
            );
        }
        Ok(self.decide_batch(plans).await)
    }

    pub async fn decide_batch(&self, plans: Vec<Plan>) -> Vec<Decision> {
        let requests: Vec<_> = plans.iter().map(|p| p.store_request(false)).collect();
        let started = quanta::Instant::now();
        let results = self.store.apply_batch(&requests).await;
        self.observe_store(started);
        drop(requests);
        plans
            .into_iter()
            .zip(results)
            .map(|(plan, result)| self.conclude(plan, result))
            .collect()
    }

    /// Evaluates a request without consuming anything (the admin view of a subject).
    pub async fn inspect(&self, plan: &Plan) -> Result<Applied, StoreError> {
        self.store.apply(&plan.store_request(true)).await
    }

    fn observe_store(&self, started: quanta::Instant) {
        self.store_latency.observe(started.elapsed().as_secs_f64());
    }

    fn conclude(&self, plan: Plan, result: Result<Applied, StoreError>) -> Decision {
        let trace = plan.activity.map(|a| (plan.user, a));
        let decision = match result {
            Ok(applied) => Decision::from_applied(plan, &applied),
            Err(error) => self.on_store_error(plan, &error),
        };
        self.record(trace, &decision);
        decision
    }

    /// Adds a decision to its subject's features. `denied_ratio` is the policy's own verdict on
    /// the subject, as in the model's training data: a denial while the store failed, or one
    /// only the load or anomaly scaling caused, is not counted (else a flag would feed itself).
    fn record(&self, trace: Option<(KeyHash, Activity)>, decision: &Decision) {
        if let Some((subject, activity)) = trace {
            let denied = !decision.allowed
                && !decision.degraded
                && matches!(decision.reason, Some(Reason::Quota | Reason::Burst));
            self.recorder.record_request(
                subject,
                self.clock.now(),
                activity.endpoint,
                activity.ip,
                denied,
            );
        }
    }

    fn on_store_error(&self, plan: Plan, error: &StoreError) -> Decision {
        let outcome = {
            let request = plan.store_request(false);
            self.fall_back(&request, error, plan.resolved.policy.store.on_error)
        };
        let mut decision = match outcome {
            Ok(applied) => Decision::from_applied(plan, &applied),
            Err(on_error) => Self::without_store(plan, on_error),
        };
        decision.degraded = true;
        decision
    }

    /// While the store fails: the per-instance limiter's answer to `request` under
    /// `on_error: local`, else the `on_error` to apply without one (a full embedded store
    /// denies). Counted in `store_errors_total` by what was done.
    fn fall_back(
        &self,
        request: &Request<'_>,
        error: &StoreError,
        configured: OnError,
    ) -> Result<Applied, OnError> {
        tracing::debug!(%error, "store failed; deciding per store.on_error");
        let on_error = match error {
            StoreError::Full => OnError::Deny,
            _ => configured,
        };
        let local = match (&self.fallback, on_error) {
            (Some(fallback), OnError::Local) => fallback.apply_now(request).ok(),
            _ => None,
        };
        let action = match (&local, on_error) {
            (Some(_), _) => "local",
            (None, OnError::Allow) => "allowed",
            (None, _) => "denied",
        };
        self.metrics
            .store_errors
            .with_label_values(&[self.store.kind().label(), action])
            .inc();
        local.ok_or(on_error)
    }

    /// `on_error` when no per-instance limiter answers: allowed with no limit, or denied.
    fn without_store(plan: Plan, on_error: OnError) -> Decision {
        let empty = Applied {
            admitted: true,
            checks: Default::default(),
        };
        let mut d = Decision::from_applied(plan, &empty);
        if on_error != OnError::Allow {
            d.allowed = false;
            d.retry_after = None;
            d.reason = Some(Reason::StoreUnavailable);
        }
        d.degraded = true;
        d
    }
}

/// Why a tier could not be stored.
#[derive(Debug, thiserror::Error)]
pub enum SetTierError {
    #[error("unknown tier \"{0}\"")]
    UnknownTier(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}
