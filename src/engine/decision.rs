//! The answer to a check: a value, allowed or denied, with every number the API reports.
//!
//! [`Decision::from_applied`] turns the store's per-limit outcomes into one decision: which
//! limit the client is shown, why a denial happened, and whether a shadow limit would have
//! denied.

use super::plan::Plan;
use super::resolve::Resolved;
use crate::clock::{Micros, micros};
use crate::limit::{Limit, Rate};
use crate::store::{Applied, CheckResult};
use serde::Serialize;
use smallvec::SmallVec;

/// Why a request was denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// A base limit is spent.
    Quota,
    /// Only limits shorter than the request's longest limit are spent, and that one has room.
    Burst,
    /// It would have passed at load factor 1.0 (or only the scaling denied it, the subject not
    /// flagged).
    Load,
    /// It would have passed without the subject's anomaly factor, or, for a flagged subject,
    /// only the load and anomaly factors together denied it.
    Anomaly,
    /// The store failed and `on_error` (or a full embedded store) denies.
    StoreUnavailable,
}

impl Reason {
    pub fn label(self) -> &'static str {
        match self {
            Reason::Quota => "quota",
            Reason::Burst => "burst",
            Reason::Load => "load",
            Reason::Anomaly => "anomaly",
            Reason::StoreUnavailable => "store_unavailable",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Decision {
    pub allowed: bool,
    /// The effective limit of the headline limit; `None` when no enforced limit applies or
    /// the store failed open.
    pub limit: Option<u64>,
    pub remaining: Option<u64>,
    pub reset_after: Micros,
    /// 0 when allowed; `None` when denied and no time can be named.
    pub retry_after: Option<Micros>,
    pub reason: Option<Reason>,
    /// A shadow limit (or the shadowed anomaly factor) would have denied.
    pub shadow: bool,
    /// Decided while the store failed.
    pub degraded: bool,
    /// Denied because the embedded store is full (`store.max_keys`), not because it failed.
    pub store_full: bool,
    pub scale: f64,
    pub load_factor: f64,
    /// The factor of the endpoint rule's own load source (its limits scale by it instead of
    /// `load_factor`); `None` when the rule has none.
    pub rule_load_factor: Option<f64>,
    pub abuse_score: Option<f64>,
    /// The request's cost.
    pub cost: u64,
    /// Denied because the cost exceeds a base limit: it can never pass.
    pub cost_exceeds_limit: bool,
    /// Allowed with 20 % or less of the headline limit left.
    pub near_limit: bool,
    /// The effective limit of the first limit in `violated` (the one a denial names).
    pub violated_limit: Option<u64>,
    /// The rate that limit was checked at (after scaling): what a denial's message states.
    pub violated_rate: Option<Rate>,
    /// The share of the most-used enforced limit, as written (before load or anomaly
    /// scaling), in use after this request: 0 far from every limit, 1 at one. It feeds the
    /// subject's `limit_usage` feature.
    pub limit_usage: f64,
    /// For a request the limits as written deny, the share of the denying limit's allowance (as
    /// written) over the anomaly window the request asked for beyond it; else 0. Summed over the window it
    /// feeds the subject's `limit_demand` feature.
    pub limit_overflow: f64,
    /// The enforced limits as written would deny this request (see
    /// [`Decision::denied_as_written`]).
    pub written_denied: bool,
    /// Indexes into [`Resolved::limits`].
    pub headline: Option<usize>,
    pub violated: SmallVec<[usize; 4]>,
    pub shadow_violated: SmallVec<[usize; 4]>,
    pub resolved: Resolved,
}

impl Decision {
    pub fn from_applied(plan: Plan, applied: &Applied) -> Decision {
        let costs: SmallVec<[u64; 4]> = applied.checks.iter().map(|_| plan.cost).collect();
        Decision::from_applied_at(plan, applied, &costs)
    }

    /// [`Decision::from_applied`] where the store weighed each check at its own cost: in a
    /// call decided jointly, two descriptors counting one limit are one check carrying both
    /// costs, and a limit their sum can never fit denies as the quota, not as the load.
    pub fn from_applied_at(plan: Plan, applied: &Applied, check_costs: &[u64]) -> Decision {
        let findings = Findings::of(&plan, applied, check_costs);
        let head = findings.headline.map(|i| applied.checks[i].outcome);
        let written_denied = denying_as_written(&plan, applied).next().is_some();
        Decision {
            allowed: applied.admitted,
            limit: head.map(|o| o.limit),
            remaining: head.map(|o| o.remaining),
            reset_after: head.map_or(0, |o| o.reset_after),
            retry_after: findings.retry_after,
            reason: findings.reason,
            shadow: findings.shadow,
            degraded: false,
            store_full: false,
            scale: plan.reported_scale(),
            load_factor: plan.load_factor,
            rule_load_factor: plan.rule_load_factor,
            abuse_score: plan.abuse_score,
            cost: plan.cost,
            cost_exceeds_limit: findings.cost_exceeds_limit,
            near_limit: applied.admitted
                && head.is_some_and(|o| o.remaining.saturating_mul(5) <= o.limit),
            limit_usage: usage_as_written(&plan, applied),
            limit_overflow: overflow_as_written(&plan, applied),
            written_denied,
            headline: findings.headline,
            violated_limit: findings
                .violated
                .first()
                .map(|&i| applied.checks[i].outcome.limit),
            violated_rate: findings.violated.first().and_then(|&i| plan.rate_of(i)),
            violated: findings.violated,
            shadow_violated: findings.shadow_violated,
            resolved: plan.resolved,
        }
    }

    /// Denied by the policy's limits as written, whatever the load and anomaly factors made of
    /// them: the denials a subject's features count, as `train` counts them on a policy it
    /// never scales. One only the scaling caused is not (else a flag would feed itself), and
    /// one past a limit as written is, even when an idle machine's factor let it through. Not
    /// while the store failed.
    pub fn denied_as_written(&self) -> bool {
        self.written_denied && !self.degraded
    }

    /// The limits of the request in order (tier first, then endpoint rule).
    pub fn limit_at(&self, i: usize) -> Option<&Limit> {
        self.resolved.limit(i)
    }

    /// The limit the client is shown (`policy`, headers).
    pub fn headline_limit(&self) -> Option<&Limit> {
        self.headline.and_then(|i| self.limit_at(i))
    }

    /// Names of the enforced limits that denied.
    pub fn violated_names(&self) -> impl Iterator<Item = &str> {
        self.violated
            .iter()
            .filter_map(|&i| self.limit_at(i))
            .map(|l| l.name.as_str())
    }

    /// The limit metrics label a decision with: the one that denied (or would have, in
    /// shadow), else the headline.
    pub fn deciding_limit(&self) -> Option<&Limit> {
        self.violated
            .first()
            .or(self.shadow_violated.first())
            .and_then(|&i| self.limit_at(i))
            .or_else(|| self.headline_limit())
    }

    /// The tier (or an envoyproxy/ratelimit descriptor's domain) metrics label it with.
    pub fn tier_name(&self) -> &str {
        self.resolved.scope_name()
    }
}

/// The largest share in use of an enforced limit as written (before load or anomaly scaling),
/// from the store's evaluation of each limit as written beside the scaled one. Read off the
/// scaled limit, a flagged subject far over its quota would seem to use at most the anomaly
/// factor's share of it, and lose the flag its usage earned.
fn usage_as_written(plan: &Plan, applied: &Applied) -> f64 {
    applied
        .checks
        .iter()
        .enumerate()
        .filter(|(i, c)| c.written.limit > 0 && plan.resolved.limit(*i).is_some_and(|l| !l.shadow))
        .map(|(_, c)| {
            let written = c.written;
            let used = written.limit.saturating_sub(written.remaining) as f64;
            (used / written.limit as f64).clamp(0.0, 1.0)
        })
        .fold(0.0, f64::max)
}

/// The enforced limits that deny the request as written.
fn denying_as_written<'a>(plan: &'a Plan, applied: &'a Applied) -> impl Iterator<Item = &'a Limit> {
    applied
        .checks
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.written.allowed)
        .filter_map(|(i, _)| plan.resolved.limit(i).filter(|l| !l.shadow))
}

/// What a denied request asked of the limits that denied it as written, as a share of the most
/// it could have had in an anomaly window: a limit's requests (as written) for each of its
/// windows the anomaly window spans, and one window's worth when the anomaly window is shorter.
/// So a subject refused for a whole window at twice a per-minute limit sums to 1, and a burst
/// refused once by an hourly quota to a sliver of it (an hour's allowance is not spent in
/// seconds). The largest share over the limits that deny it as written: one that denied only
/// because the load or anomaly factor shrank it counts nothing (else a flag would feed
/// `limit_demand`), and one past its limit as written counts even when a factor above 1 let it
/// through, as it would in training.
fn overflow_as_written(plan: &Plan, applied: &Applied) -> f64 {
    let anomaly_window = micros(plan.resolved.policy.adaptive.anomaly.window).max(1) as f64;
    let cost = plan.cost as f64;
    denying_as_written(plan, applied)
        .map(|limit| {
            let rate = limit.base_rate();
            let windows = (anomaly_window / rate.window.max(1) as f64).max(1.0);
            cost / (rate.requests as f64 * windows)
        })
        .fold(0.0, f64::max)
        .min(1.0)
}

/// What the outcomes of one request's checks add up to.
struct Findings {
    headline: Option<usize>,
    violated: SmallVec<[usize; 4]>,
    shadow_violated: SmallVec<[usize; 4]>,
    retry_after: Option<Micros>,
    reason: Option<Reason>,
    shadow: bool,
    cost_exceeds_limit: bool,
}

impl Findings {
    fn of(plan: &Plan, applied: &Applied, check_costs: &[u64]) -> Findings {
        let resolved = &plan.resolved;
        let checks = &applied.checks;
        let enforced = |i: &usize| resolved.limit(*i).is_some_and(|l| !l.shadow);
        let window = |i: usize| resolved.limit(i).map_or(0, Limit::window_micros);
        // The enforced limit with the least remaining quota; ties go to the shorter window. A
        // denial consumes nothing, and a limit that would have passed reports what is left
        // after the cost: a denial's headline is chosen among the limits that denied, whose
        // figures are unchanged. At one cost for every check that is also the least left
        // unchanged (a denying limit had less than the cost, the others at least the cost).
        let denied = |i: &usize| !checks[*i].outcome.allowed;
        let least = |candidates: &mut dyn Iterator<Item = usize>| {
            candidates.min_by_key(|&i| (checks[i].outcome.remaining, window(i)))
        };
        let headline = if applied.admitted {
            least(&mut (0..checks.len()).filter(enforced))
        } else {
            least(&mut (0..checks.len()).filter(enforced).filter(denied))
                .or_else(|| least(&mut (0..checks.len()).filter(enforced)))
        };
        let beyond_base_of = |i: usize| {
            let cost = check_costs.get(i).copied().unwrap_or(plan.cost);
            resolved
                .limit(i)
                .is_some_and(|l| cost > l.base_rate().capacity())
        };
        let mut violated: SmallVec<[usize; 4]> = (0..checks.len())
            .filter(|i| enforced(i) && !checks[*i].outcome.allowed)
            .collect();
        // A limit the cost can never fit comes first: it is the one a denial names.
        violated.sort_by_key(|&i| !beyond_base_of(i));
        let shadow_violated: SmallVec<[usize; 4]> = (0..checks.len())
            .filter(|i| !enforced(i) && !checks[*i].outcome.allowed)
            .collect();
        let all_pass_at = |probe: usize| {
            (0..checks.len())
                .filter(enforced)
                .all(|i| checks[i].probes[probe])
        };
        let all_pass_as_written = (0..checks.len())
            .filter(enforced)
            .all(|i| checks[i].written.allowed);
        let flagged = plan.anomaly_factor != 1.0;
        let mut findings = Findings {
            headline,
            shadow: !shadow_violated.is_empty(),
            violated: SmallVec::new(),
            shadow_violated,
            retry_after: Some(0),
            reason: None,
            cost_exceeds_limit: false,
        };
        if applied.admitted {
            findings.shadow |= flagged && !plan.anomaly_enforced && !all_pass_at(1);
            return findings;
        }
        findings.retry_after = violated
            .iter()
            .map(|&i| checks[i].outcome.retry_after)
            .try_fold(0, |acc, r| r.map(|r| acc.max(r)));
        let beyond_base = violated.iter().any(|&i| beyond_base_of(i));
        let beyond_effective = violated
            .iter()
            .any(|&i| checks[i].outcome.retry_after.is_none());
        findings.reason = Some(if beyond_base {
            findings.cost_exceeds_limit = true;
            findings.retry_after = None;
            Reason::Quota
        } else if flagged && plan.anomaly_enforced && all_pass_at(1) {
            Reason::Anomaly
        } else if plan.load_scaled() && all_pass_at(0) {
            Reason::Load
        } else if beyond_effective || all_pass_as_written {
            // Only the scaling denied: the cost is above the scaled limit, or the load and
            // anomaly factors together shrank the limits below what the request needs, though
            // neither alone did. Named after the factor aimed at this subject when it applies;
            // never `quota`, which a subject's features count as the policy's own refusal.
            if flagged && plan.anomaly_enforced {
                Reason::Anomaly
            } else {
                Reason::Load
            }
        } else {
            burst_or_quota(checks, &violated, resolved)
        });
        findings.violated = violated;
        findings
    }
}

/// `burst` when every violated limit is shorter than the request's longest limit (which then
/// still has room), else `quota`.
fn burst_or_quota(checks: &[CheckResult], violated: &[usize], resolved: &Resolved) -> Reason {
    let window = |i: usize| resolved.limit(i).map_or(0, Limit::window_micros);
    let longest = (0..checks.len())
        .filter(|&i| resolved.limit(i).is_some_and(|l| !l.shadow))
        .map(window)
        .max()
        .unwrap_or(0);
    if violated.iter().all(|&i| window(i) < longest) {
        Reason::Burst
    } else {
        Reason::Quota
    }
}
