//! Deciding while the store fails: the per-instance limiter under `on_error: local`, else allow
//! or deny as `store.on_error` says, counted in `store_errors_total` by what was done and in the
//! outage in progress (logged when it begins and ends, not per call).

use super::{Answered, Decision, Engine, Plan, Reason};
use crate::store::OnError;
use crate::store::{Applied, Request, Store, StoreError};

impl<S: Store> Engine<S> {
    pub(super) fn on_store_error(&self, plan: Plan, error: &StoreError) -> Decision {
        let outcome = {
            let request = plan.store_request(false);
            self.fall_back(&request, error, plan.resolved.policy.store.on_error)
        };
        let mut decision = match outcome {
            Ok(applied) => Decision::from_applied(plan, &applied),
            Err(on_error) => without_store(plan, on_error),
        };
        decision.degraded = true;
        decision.store_full = matches!(error, StoreError::Full) && !decision.allowed;
        decision
    }

    /// While the store fails: the per-instance limiter's answer to `request` under
    /// `on_error: local`, else the `on_error` to apply without one (a full embedded store
    /// denies).
    pub(super) fn fall_back(
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
        let answered = match (&local, on_error) {
            (Some(_), _) => Answered::Local,
            (None, OnError::Allow) => Answered::Allowed,
            (None, _) => Answered::Denied,
        };
        let action = match answered {
            Answered::Local => "local",
            Answered::Allowed => "allowed",
            Answered::Denied => "denied",
        };
        self.metrics
            .store_errors
            .with_label_values(&[self.store.kind().label(), action])
            .inc();
        // A full embedded store is not an outage: it answers, and says it is full.
        if !matches!(error, StoreError::Full) {
            let now = self.clock.now();
            self.outage
                .failed(now, "a decision", error, configured, Some(answered));
        }
        local.ok_or(on_error)
    }
}

/// `on_error` when no per-instance limiter answers: allowed with no limit, or denied.
pub(super) fn without_store(plan: Plan, on_error: OnError) -> Decision {
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
