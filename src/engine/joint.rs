//! Several planned requests decided together, all or nothing: the descriptors of one Envoy
//! call (checked together, all or nothing, as on HTTP).
//!
//! Their checks go to the store as one request, so one atomic step (one Lua script on Redis)
//! decides them all. Two descriptors that count the same limit under the same key (one user's
//! tier limit, say) become one check carrying both costs, so the limit must have room for both.

use super::fallback::without_store;
use super::{Decision, Engine, Plan};
use crate::store::{Applied, Check, CheckResults, Request, Store};
use hashbrown::HashMap;
use smallvec::SmallVec;

/// The decisions of requests decided together.
#[derive(Debug)]
pub(super) struct JointDecision {
    /// Every enforced limit of every request passed, and all were consumed.
    pub admitted: bool,
    /// One per plan, in order. Each says whether its own limits passed; when `admitted` is
    /// false nothing was consumed, and a passing one shows its quota unconsumed.
    pub decisions: Vec<Decision>,
}

impl<S: Store> Engine<S> {
    /// `blocked`: another part of the request can never pass, so these are only evaluated
    /// (nothing is consumed) and the request is not admitted.
    pub(super) async fn decide_jointly(&self, plans: Vec<Plan>, blocked: bool) -> JointDecision {
        let traces: Vec<_> = plans.iter().map(|p| p.trace.map(|t| (p.user, t))).collect();
        let joint = self.decide_jointly_unrecorded(plans, blocked).await;
        for (trace, decision) in traces.into_iter().zip(&joint.decisions) {
            self.record(trace, decision);
        }
        joint
    }

    async fn decide_jointly_unrecorded(&self, plans: Vec<Plan>, blocked: bool) -> JointDecision {
        let requests: Vec<Request<'_>> = plans.iter().map(|p| p.store_request(false)).collect();
        let (mut combined, slots) = merge(&requests);
        combined.dry_run = blocked;
        let started = quanta::Instant::now();
        let result = self.store.apply(&combined).await;
        self.observe_store(started);
        let (result, degraded) = match result {
            Ok(applied) => {
                self.store_answered();
                (Ok(applied), false)
            }
            Err(error) => (
                self.fall_back(&combined, &error, self.policy().store.on_error)
                    .map_err(|unanswered| unanswered.on_error),
                true,
            ),
        };
        let costs: Vec<u64> = combined.checks.iter().map(|c| c.cost).collect();
        drop(combined);
        drop(requests);
        match result {
            Ok(mut applied) => {
                applied.admitted &= !blocked;
                if !applied.admitted {
                    restore_unconsumed(&mut applied.checks, &costs);
                }
                let decisions = plans
                    .into_iter()
                    .zip(&slots)
                    .map(|(plan, slots)| {
                        let checks: CheckResults =
                            slots.iter().map(|&j| applied.checks[j]).collect();
                        let check_costs: Vec<u64> = slots.iter().map(|&j| costs[j]).collect();
                        let own = plan
                            .resolved
                            .limits()
                            .zip(&checks)
                            .all(|(limit, c)| limit.shadow || c.outcome.allowed);
                        let mut d = Decision::from_applied_at(
                            plan,
                            &Applied {
                                admitted: own,
                                checks,
                            },
                            &check_costs,
                        );
                        d.degraded = degraded;
                        d
                    })
                    .collect();
                JointDecision {
                    admitted: applied.admitted,
                    decisions,
                }
            }
            Err(on_error) => {
                let decisions: Vec<Decision> = plans
                    .into_iter()
                    .map(|plan| without_store(plan, on_error))
                    .collect();
                JointDecision {
                    admitted: !blocked && decisions.iter().all(|d| d.allowed),
                    decisions,
                }
            }
        }
    }
}

/// One store request with every distinct check once (equal ones carry the sum of costs), and
/// for each plan the index of each of its checks in it. Checks are found by their store key,
/// not by a scan: a call may carry a thousand descriptors of a few checks each.
fn merge<'a>(requests: &[Request<'a>]) -> (Request<'a>, Vec<Vec<usize>>) {
    let mut combined = Request::default();
    let mut slots = Vec::with_capacity(requests.len());
    let mut by_key: HashMap<u128, SmallVec<[usize; 1]>> = HashMap::new();
    for request in requests {
        let mut own = Vec::with_capacity(request.checks.len());
        for check in &request.checks {
            let same_key = by_key
                .entry(check.subject.with_limit(&check.limit))
                .or_default();
            let found = same_key
                .iter()
                .copied()
                .find(|&j| same_counter(&combined.checks[j], check));
            match found {
                Some(j) => {
                    combined.checks[j].cost = combined.checks[j].cost.saturating_add(check.cost);
                    own.push(j);
                }
                None => {
                    same_key.push(combined.checks.len());
                    own.push(combined.checks.len());
                    combined.checks.push(check.clone());
                }
            }
        }
        slots.push(own);
    }
    (combined, slots)
}

fn same_counter(a: &Check<'_>, b: &Check<'_>) -> bool {
    a.subject == b.subject
        && a.limit == b.limit
        && a.rate == b.rate
        && a.enforce == b.enforce
        && a.probes == b.probes
        && a.written == b.written
}

/// In a request that was not admitted nothing was consumed: a passing check's remaining
/// (reported after its cost) gets the cost back.
fn restore_unconsumed(checks: &mut CheckResults, costs: &[u64]) {
    for (check, cost) in checks.iter_mut().zip(costs) {
        if check.outcome.allowed {
            check.outcome.remaining = check
                .outcome
                .remaining
                .saturating_add(*cost)
                .min(check.outcome.limit);
        }
        let written = &mut check.written;
        if written.allowed {
            written.remaining = written.remaining.saturating_add(*cost).min(written.limit);
        }
    }
}
