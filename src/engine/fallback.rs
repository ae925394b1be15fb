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
            Err(unanswered) => {
                let mut d = without_store(plan, unanswered.on_error);
                d.store_full = unanswered.full;
                d
            }
        };
        decision.degraded = true;
        decision
    }

    /// While the store fails: the per-instance limiter's answer to `request` under
    /// `on_error: local`, else the `on_error` to apply without one (a full embedded store,
    /// the store itself or the per-instance limiter, denies).
    pub(super) fn fall_back(
        &self,
        request: &Request<'_>,
        error: &StoreError,
        configured: OnError,
    ) -> Result<Applied, Unanswered> {
        tracing::debug!(%error, "store failed; deciding per store.on_error");
        let on_error = match error {
            StoreError::Full => OnError::Deny,
            _ => configured,
        };
        let (local, local_full) = match (&self.fallback, on_error) {
            (Some(fallback), OnError::Local) => match fallback.apply_now(request) {
                Ok(applied) => (Some(applied), false),
                Err(local_error) => (None, matches!(local_error, StoreError::Full)),
            },
            _ => (None, false),
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
        local.ok_or(Unanswered {
            on_error,
            full: local_full || matches!(error, StoreError::Full),
        })
    }
}

/// Why no store answered: the `on_error` to apply, and whether an embedded store (the store
/// or the per-instance limiter) was full rather than failing.
pub(super) struct Unanswered {
    pub on_error: OnError,
    pub full: bool,
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
