//! The check use cases: one request, or a batch decided in order in one store round trip.

use super::planner::EndpointChoice;
use super::{CheckError, CheckRequest, Decision, Engine, FeatureTrace, Plan};
use crate::features::LimitOutcome;
use crate::limit::KeyHash;
use crate::metrics::Api;
use crate::store::{Applied, Store, StoreError};

/// A batch item the policy cannot decide, with its position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("requests[{index}]: {error}")]
pub struct BatchError {
    pub index: usize,
    pub error: CheckError,
}

impl<S: Store> Engine<S> {
    /// Decides one request from the JSON API, consuming its cost when it is allowed.
    pub async fn check(&self, request: &CheckRequest<'_>) -> Result<Decision, CheckError> {
        self.check_via(Api::Http, request).await
    }

    /// Decides one request arriving through `api` (counted under that label).
    pub async fn check_via(
        &self,
        api: Api,
        request: &CheckRequest<'_>,
    ) -> Result<Decision, CheckError> {
        let started = quanta::Instant::now();
        let stored = self.stored_tier_of(request).await;
        let plan = self.plan(request, stored.as_deref(), EndpointChoice::Matching)?;
        let decision = self.decide(plan).await;
        self.metrics.observe_decision(api, started.elapsed());
        self.count(&decision);
        Ok(decision)
    }

    /// Decides requests in order, each as if sent alone, in one store round trip.
    pub async fn check_batch(
        &self,
        requests: &[CheckRequest<'_>],
    ) -> Result<Vec<Decision>, BatchError> {
        let started = quanta::Instant::now();
        let stored = self.stored_tiers(requests).await;
        let mut plans = Vec::with_capacity(requests.len());
        for (index, (request, stored)) in requests.iter().zip(&stored).enumerate() {
            let plan = self
                .plan_uncounted(request, stored.as_deref(), EndpointChoice::Matching)
                .map_err(|error| BatchError { index, error })?;
            plans.push(plan);
        }
        for (request, stored) in requests.iter().zip(&stored) {
            self.note_unknown_stored_tier(request, stored.as_deref());
        }
        let decisions = self.decide_batch(plans).await;
        self.metrics.observe_decision(Api::Batch, started.elapsed());
        for decision in &decisions {
            self.count(decision);
        }
        Ok(decisions)
    }

    async fn decide(&self, plan: Plan) -> Decision {
        let started = quanta::Instant::now();
        let result = self.store.apply(&plan.store_request(false)).await;
        self.observe_store(started);
        self.conclude(plan, result)
    }

    async fn decide_batch(&self, plans: Vec<Plan>) -> Vec<Decision> {
        let requests: Vec<_> = plans.iter().map(|p| p.store_request(false)).collect();
        let started = quanta::Instant::now();
        let results = self.store.apply_batch(&requests).await;
        self.observe_store(started);
        drop(requests);
        // A store that answers fewer results than requests (a pipeline cut short) must not
        // shorten the batch: each request left without a reply is decided as a failed call.
        let missing = std::iter::repeat_with(|| {
            Err(StoreError::Unavailable("no reply for this request".into()))
        });
        plans
            .into_iter()
            .zip(results.into_iter().chain(missing))
            .map(|(plan, result)| self.conclude(plan, result))
            .collect()
    }

    pub(super) fn observe_store(&self, started: quanta::Instant) {
        self.store_latency.observe(started.elapsed().as_secs_f64());
    }

    fn conclude(&self, plan: Plan, result: Result<Applied, StoreError>) -> Decision {
        let trace = plan.trace.map(|t| (plan.user, t));
        let decision = match result {
            Ok(applied) => {
                self.store_answered();
                Decision::from_applied(plan, &applied)
            }
            Err(error) => self.on_store_error(plan, &error),
        };
        self.record(trace, &decision);
        decision
    }

    /// Adds a decision to its subject's features. `denied_ratio` is the policy's own verdict on
    /// the subject, as in the model's training data: a denial while the store failed, or one
    /// only the load or anomaly scaling caused, is not counted (else a flag would feed itself).
    pub(super) fn record(&self, trace: Option<(KeyHash, FeatureTrace)>, decision: &Decision) {
        if let Some((subject, trace)) = trace {
            self.recorder.record_request(
                subject,
                self.clock.now(),
                trace.endpoint,
                trace.ip,
                LimitOutcome {
                    denied: decision.denied_as_written(),
                    usage: decision.limit_usage,
                    overflow: decision.limit_overflow,
                },
            );
        }
    }
}
