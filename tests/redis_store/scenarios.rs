//! One algorithm suite, written once over any [`Store`]: tables of steps (time, cost, expected
//! outcome) for each algorithm, and the request-level rules (probes, shadow limits, a denied
//! request, dry runs, a limit that changes algorithm under the same name).
//!
//! Times are offsets from [`T0`], which is aligned to every window here. Windows and emission
//! intervals are a second or more: a Redis key's TTL is real time while the scenarios run on a
//! manual clock, so no state may be so close to decaying that the milliseconds the test takes
//! could expire it.
//!
//! Here: the steps and the runner; `scenarios/` holds the `tables` of steps and the
//! request-level rules (`requests`).

#[path = "scenarios/requests.rs"]
mod requests;
#[path = "scenarios/tables.rs"]
mod tables;

use crate::support::*;
use ratewarden::algorithm::Outcome;
use ratewarden::clock::ManualClock;
use ratewarden::limit::KeyHash;
use ratewarden::limit::Rate;
use ratewarden::store::{Check, CheckResult, Request, Store};
use requests::{denied_request_consumes_nothing, dry_run_consumes_nothing, probes, shadow};
use tables::scenarios;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// An enforced check: consumed when allowed.
    Hit,
    /// A shadow check (`enforce: false`): admitted, and consumed, whatever its outcome.
    Shadow,
    /// A dry run: consumes nothing.
    Dry,
}

struct Step {
    at: u64,
    rate: Rate,
    cost: u64,
    mode: Mode,
    expect: Outcome,
}

/// One limit of one subject through a sequence of steps.
struct Scenario {
    name: &'static str,
    rate: Rate,
    steps: Vec<Step>,
}

impl Scenario {
    fn new(name: &'static str, rate: Rate) -> Self {
        Self {
            name,
            rate,
            steps: Vec::new(),
        }
    }

    /// The following steps use `rate` (same limit name: a reload that changed the limit).
    fn rate(mut self, rate: Rate) -> Self {
        self.rate = rate;
        self
    }

    fn step(mut self, mode: Mode, at: u64, cost: u64, expect: Outcome) -> Self {
        let rate = self.rate;
        self.steps.push(Step {
            at,
            rate,
            cost,
            mode,
            expect,
        });
        self
    }

    fn hit(self, at: u64, cost: u64, expect: Outcome) -> Self {
        self.step(Mode::Hit, at, cost, expect)
    }

    fn shadow(self, at: u64, cost: u64, expect: Outcome) -> Self {
        self.step(Mode::Shadow, at, cost, expect)
    }

    fn dry(self, at: u64, cost: u64, expect: Outcome) -> Self {
        self.step(Mode::Dry, at, cost, expect)
    }
}

fn one(check: Check<'_>, dry_run: bool) -> Request<'_> {
    Request {
        checks: [check].into_iter().collect(),
        dry_run,
    }
}

fn checks<'a>(all: impl IntoIterator<Item = Check<'a>>, dry_run: bool) -> Request<'a> {
    Request {
        checks: all.into_iter().collect(),
        dry_run,
    }
}

fn outcomes(results: &[CheckResult]) -> Vec<Outcome> {
    results.iter().map(|r| r.outcome).collect()
}

/// A subject of its own for each part of the suite.
fn subject(n: u128) -> KeyHash {
    KeyHash(0x5EED_0000_0000_0000_0000_0000_0000_0000 | n)
}

/// Runs the whole suite on `store`, whose time is `clock`.
pub async fn run<S: Store>(store: &S, clock: &ManualClock, label: &str) {
    for (n, scenario) in scenarios().iter().enumerate() {
        let who = subject(n as u128);
        for (i, step) in scenario.steps.iter().enumerate() {
            clock.set(T0 + step.at);
            let enforce = step.mode != Mode::Shadow;
            let check = check(who, "limit", step.rate, step.cost, enforce);
            let applied = store
                .apply(&one(check, step.mode == Mode::Dry))
                .await
                .unwrap_or_else(|e| panic!("{label}: {}: step {i}: {e}", scenario.name));
            let context = format!(
                "{label}: {} ({}): step {i}",
                scenario.name, step.rate.algorithm
            );
            assert_eq!(applied.checks[0].outcome, step.expect, "{context}");
            assert_eq!(
                applied.checks[0].probes, [step.expect.allowed; 2],
                "{context}: no probes"
            );
            assert_eq!(
                applied.admitted,
                step.expect.allowed || !enforce,
                "{context}"
            );
        }
    }
    let base = scenarios().len() as u128;
    probes(store, clock, label, subject(base)).await;
    shadow(store, clock, label, subject(base + 1)).await;
    denied_request_consumes_nothing(store, clock, label, subject(base + 2)).await;
    dry_run_consumes_nothing(store, clock, label, subject(base + 3)).await;
}
