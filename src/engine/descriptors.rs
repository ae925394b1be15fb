//! The descriptors use case (Envoy's `ShouldRateLimit`): every descriptor of one call planned
//! (against an envoyproxy/ratelimit domain, or natively as a check request on the policy) and
//! decided together, all or nothing, with the one decision the call's headers and metrics show.

use super::envoy_domain::DescriptorPlan;
use super::native;
use super::planner::EndpointChoice;
use super::{CheckRequest, Decision, DescriptorRequest, Engine};
use crate::envoy_config::Unit;
use crate::metrics::{Api, Outcome};
use crate::store::Store;

/// What one descriptor came to.
#[derive(Debug)]
pub enum DescriptorOutcome {
    Decided(Box<Decision>),
    /// `unlimited: true`: passes, with no limit.
    Unlimited,
    /// Matched nothing, named no subject, or was replaced: passes with no limit.
    NoLimit,
    /// A limit of 0 requests: over limit, always.
    Blocked {
        name: String,
        unit: Unit,
    },
    /// A native descriptor the policy cannot decide on: over limit, with why.
    Refused(String),
    /// A limit of 0 requests in shadow mode: passes, and is counted as shadow-denied.
    ShadowBlocked {
        name: String,
    },
}

/// The decision on a whole call.
#[derive(Debug)]
pub struct DescriptorsDecision {
    /// Every descriptor passed, and every limit was consumed.
    pub admitted: bool,
    /// One per descriptor, in order.
    pub outcomes: Vec<DescriptorOutcome>,
    /// The decision the call's rate limit headers show: the limit with the least remaining
    /// (ties: the shorter window; on a denial, among the limits that denied), allowed as the
    /// call is, retrying when all its denials could
    /// pass; `None` when a limit of 0 or a refused descriptor blocks the call.
    pub headline: Option<Decision>,
}

impl<S: Store> Engine<S> {
    /// Decides the descriptors of one call to `domain`, all or nothing.
    pub async fn check_descriptors(
        &self,
        domain: &str,
        descriptors: &[DescriptorRequest<'_>],
    ) -> DescriptorsDecision {
        let started = quanta::Instant::now();
        let rules = self.rules();
        let (plans, label) = match rules.envoy.as_ref().and_then(|c| c.domain(domain)) {
            Some(found) => (
                self.plan_envoy_descriptors(&rules.policy, found, descriptors),
                &*found.name,
            ),
            None => (self.plan_native(descriptors).await, "native"),
        };
        let (outcomes, admitted) = self.decide_descriptors(plans, label).await;
        self.metrics.observe_decision(Api::Grpc, started.elapsed());
        let decisions: Vec<&Decision> = outcomes
            .iter()
            .filter_map(|o| match o {
                DescriptorOutcome::Decided(d) => Some(&**d),
                _ => None,
            })
            .collect();
        let blocks = Blocks::of(&outcomes);
        self.count_call(&decisions, &blocks, label);
        // A call a limit of 0 or a refused descriptor blocks shows no limit's headers: the
        // others' quota (`r=1`) would read as room, and there is no time it could pass.
        let headline = match blocks.blocked_by.is_some() || blocks.refused {
            true => None,
            false => headline(&decisions, admitted),
        };
        DescriptorsDecision {
            admitted,
            outcomes,
            headline,
        }
    }

    /// Counts a call once, as HTTP counts a request: by the descriptor that denied, else a
    /// limit of 0 that blocked it, else one that would have denied in shadow (a limit of 0 in
    /// shadow mode among them), else the one with the least remaining; a call with no limit at
    /// all counts as allowed by rule `none`. A call a refused descriptor denied is counted as
    /// refused only, as HTTP counts no 400.
    fn count_call(&self, decisions: &[&Decision], blocks: &Blocks<'_>, domain: &str) {
        let denied = decisions.iter().find(|d| !d.allowed);
        let limited = || {
            decisions
                .iter()
                .find(|d| d.shadow)
                .or(decisions
                    .iter()
                    .filter(|d| d.limit.is_some())
                    .min_by_key(|d| d.remaining))
                .or(decisions.first())
        };
        match (denied, blocks.blocked_by) {
            (Some(d), _) => self.count(d),
            (None, Some(rule)) => self.count_without_decision(rule, domain, Outcome::Denied),
            (None, None) if blocks.refused => {}
            (None, None) => match (
                decisions.iter().find(|d| d.shadow),
                blocks.shadow_blocked_by,
            ) {
                (None, Some(rule)) => {
                    self.count_without_decision(rule, domain, Outcome::ShadowDenied)
                }
                _ => match limited() {
                    Some(d) => self.count(d),
                    None => self.count_without_decision("none", domain, Outcome::Allowed),
                },
            },
        }
    }

    /// Native descriptors as planned check requests (`Unmatched` for one without a subject,
    /// `Refused` for one the policy cannot decide on). The stored tiers of all of them are
    /// looked up at once, as a batch's are: one call may carry 1000 descriptors, each with a
    /// subject of the client's choosing that no cache holds.
    async fn plan_native(&self, descriptors: &[DescriptorRequest<'_>]) -> Vec<DescriptorPlan> {
        let read: Vec<Result<Option<native::Native<'_>>, String>> = descriptors
            .iter()
            .map(|d| native::request(&d.entries, d.cost))
            .collect();
        let checks: Vec<CheckRequest<'_>> = read
            .iter()
            .filter_map(|r| r.as_ref().ok().and_then(Option::as_ref))
            .map(|native| native.request.clone())
            .collect();
        let mut stored = self.stored_tiers(&checks).await.into_iter();
        let mut plans = Vec::with_capacity(descriptors.len());
        for (index, read) in read.into_iter().enumerate() {
            let plan = match read {
                Ok(None) => Ok(DescriptorPlan::Unmatched),
                Ok(Some(native)) => {
                    let tier = stored.next().flatten();
                    self.plan_one_native(&native, tier.as_deref())
                }
                Err(problem) => Err(problem),
            };
            plans.push(plan.unwrap_or_else(|problem| {
                self.metrics.envoy_refused.inc();
                // Debug only: the values are the client's, and a client can send many.
                tracing::debug!(%problem, "native descriptors[{index}] refused");
                DescriptorPlan::Refused(format!("descriptors[{index}]: {problem}"))
            }));
        }
        plans
    }

    fn plan_one_native(
        &self,
        native: &native::Native<'_>,
        stored: Option<&str>,
    ) -> Result<DescriptorPlan, String> {
        let endpoint = if native.has_endpoint {
            EndpointChoice::Matching
        } else {
            EndpointChoice::Default
        };
        let plan = self
            .plan(&native.request, stored, endpoint)
            .map_err(|e| e.to_string())?;
        Ok(DescriptorPlan::Limited(Box::new(plan)))
    }

    /// Decides the limited descriptors together; the others pass.
    async fn decide_descriptors(
        &self,
        plans: Vec<DescriptorPlan>,
        domain: &str,
    ) -> (Vec<DescriptorOutcome>, bool) {
        let mut limited = Vec::new();
        let mut blocked = false;
        let mut outcomes: Vec<Option<DescriptorOutcome>> = Vec::with_capacity(plans.len());
        for plan in plans {
            outcomes.push(match plan {
                DescriptorPlan::Blocked { name, unit } => {
                    blocked = true;
                    Some(DescriptorOutcome::Blocked { name, unit })
                }
                DescriptorPlan::ShadowBlocked { name } => {
                    Some(DescriptorOutcome::ShadowBlocked { name })
                }
                DescriptorPlan::Refused(problem) => {
                    blocked = true;
                    Some(DescriptorOutcome::Refused(problem))
                }
                DescriptorPlan::Limited(plan) => {
                    limited.push(*plan);
                    None
                }
                DescriptorPlan::Unlimited => Some(DescriptorOutcome::Unlimited),
                DescriptorPlan::Replaced => Some(DescriptorOutcome::NoLimit),
                DescriptorPlan::Unmatched => {
                    self.metrics
                        .envoy_unmatched
                        .with_label_values(&[domain])
                        .inc();
                    Some(DescriptorOutcome::NoLimit)
                }
            });
        }
        if limited.is_empty() {
            return (outcomes.into_iter().flatten().collect(), !blocked);
        }
        let joint = self.decide_jointly(limited, blocked).await;
        let mut decisions = joint.decisions.into_iter();
        let outcomes = outcomes
            .into_iter()
            .map(|o| match o {
                Some(o) => o,
                None => decisions.next().map_or(DescriptorOutcome::NoLimit, |d| {
                    DescriptorOutcome::Decided(Box::new(d))
                }),
            })
            .collect();
        (outcomes, joint.admitted)
    }
}

/// What in a call passes no request: a limit of 0 (enforced or in shadow), a refused descriptor.
struct Blocks<'a> {
    blocked_by: Option<&'a str>,
    shadow_blocked_by: Option<&'a str>,
    refused: bool,
}

impl<'a> Blocks<'a> {
    fn of(outcomes: &'a [DescriptorOutcome]) -> Self {
        let mut blocks = Blocks {
            blocked_by: None,
            shadow_blocked_by: None,
            refused: false,
        };
        for outcome in outcomes {
            match outcome {
                DescriptorOutcome::Blocked { name, .. } => {
                    blocks.blocked_by = blocks.blocked_by.or(Some(name));
                }
                DescriptorOutcome::ShadowBlocked { name } => {
                    blocks.shadow_blocked_by = blocks.shadow_blocked_by.or(Some(name));
                }
                DescriptorOutcome::Refused(_) => blocks.refused = true,
                _ => {}
            }
        }
        blocks
    }
}

/// The decision HTTP would show for these decisions taken as one request: the limit with the
/// least remaining, and on a denial one of those that denied (a passing descriptor's room would
/// read as room on a 429).
fn headline(decisions: &[&Decision], admitted: bool) -> Option<Decision> {
    let window = |d: &Decision| d.headline_limit().map_or(0, |l| l.window_micros());
    let head = decisions
        .iter()
        .filter(|d| d.limit.is_some() && (admitted || !d.allowed))
        .min_by_key(|d| (d.remaining, window(d)))
        .or(decisions.iter().find(|d| !d.allowed))
        .or(decisions.first())?;
    let mut shown = (*head).clone();
    shown.allowed = admitted;
    shown.retry_after = if admitted {
        Some(0)
    } else {
        // The time the whole request could pass: the latest of its denials.
        decisions
            .iter()
            .filter(|d| !d.allowed)
            .map(|d| d.retry_after)
            .try_fold(0, |acc, r| r.map(|r| acc.max(r)))
    };
    Some(shown)
}
