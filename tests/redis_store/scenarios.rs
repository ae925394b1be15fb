//! One algorithm suite, written once over any [`Store`]: tables of steps (time, cost, expected
//! outcome) for each algorithm, and the request-level rules (probes, shadow limits, a denied
//! request, dry runs, a limit that changes algorithm under the same name).
//!
//! Times are offsets from [`T0`], which is aligned to every window here. Windows and emission
//! intervals are a second or more: a Redis key's TTL is real time while the scenarios run on a
//! manual clock, so no state may be so close to decaying that the milliseconds the test takes
//! could expire it.

use crate::support::*;
use ratewarden::algorithm::Outcome;
use ratewarden::clock::ManualClock;
use ratewarden::limit::KeyHash;
use ratewarden::limit::{Algorithm, Rate};
use ratewarden::store::{Check, CheckResult, Request, Store};

use Algorithm::{FixedWindow, Gcra, SlidingLog, SlidingWindow, TokenBucket};

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

fn scenarios() -> Vec<Scenario> {
    let mut all = vec![
        Scenario::new(
            "sliding_log counts exact cost",
            rate(SlidingLog, 10 * SECOND, 3, 3),
        )
        .hit(0, 2, allowed(3, 1, 10 * SECOND))
        .hit(SECOND, 1, allowed(3, 0, 10 * SECOND))
        // Room comes back when the cost-2 entry leaves; full reset waits for the newest.
        .hit(2 * SECOND, 1, denied(3, 0, 9 * SECOND, Some(8 * SECOND)))
        .hit(10 * SECOND - 1, 1, denied(3, 0, SECOND + 1, Some(1)))
        .hit(10 * SECOND, 2, allowed(3, 0, 10 * SECOND))
        .dry(10 * SECOND, 4, denied(3, 0, 10 * SECOND, None)),
        Scenario::new(
            "sliding_log merges one microsecond",
            rate(SlidingLog, MINUTE, 5, 5),
        )
        .dry(0, 6, denied(5, 5, 0, None))
        .hit(0, 6, denied(5, 5, 0, None))
        .hit(0, 2, allowed(5, 3, MINUTE))
        // Same microsecond: one entry of cost 4, not a second member that replaces it.
        .hit(0, 2, allowed(5, 1, MINUTE))
        .hit(30 * SECOND, 1, allowed(5, 0, MINUTE))
        .hit(40 * SECOND, 1, denied(5, 0, 50 * SECOND, Some(20 * SECOND)))
        .hit(MINUTE, 4, allowed(5, 0, MINUTE)),
        Scenario::new(
            "sliding_window weights the previous window",
            rate(SlidingWindow, MINUTE, 50, 50),
        )
        .hit(10 * SECOND, 42, allowed(50, 8, 110 * SECOND))
        // 42 + 18 > 50: a shadow check is consumed all the same. It would fit once the
        // previous window weighs 42 × (60 s − t)/60 s <= 32: t = 600 s / 42 = 14.2857 s.
        .shadow(MINUTE, 18, denied(50, 8, MINUTE, Some(14_285_715)))
        // 15 s in: 42 × 45/60 + 18 = 49.5; one more fits 714 285.7 µs later.
        .dry(75 * SECOND, 1, denied(50, 0, 105 * SECOND, Some(714_286)))
        // 30 s in: 42 × 30/60 + 18 = 39.
        .dry(90 * SECOND, 3, allowed(50, 8, 90 * SECOND))
        .hit(90 * SECOND, 3, allowed(50, 8, 90 * SECOND))
        // The next window sees 21 as its previous one, the one after nothing.
        .dry(2 * MINUTE, 1, allowed(50, 28, 2 * MINUTE))
        .dry(3 * MINUTE, 1, allowed(50, 49, 2 * MINUTE)),
        Scenario::new(
            "sliding_window full current window",
            rate(SlidingWindow, MINUTE, 10, 10),
        )
        .hit(0, 10, allowed(10, 0, 2 * MINUTE))
        // Next window, u in: 10 × (60 s − u)/60 s + 1 <= 10 from u = 6 s.
        .dry(
            1,
            1,
            denied(10, 0, 2 * MINUTE - 1, Some(MINUTE - 1 + 6 * SECOND)),
        )
        .dry(MINUTE, 1, denied(10, 0, MINUTE, Some(6 * SECOND)))
        .hit(66 * SECOND, 1, allowed(10, 0, 114 * SECOND))
        .dry(66 * SECOND, 11, denied(10, 0, 114 * SECOND, None)),
        Scenario::new(
            "fixed_window per epoch-aligned window",
            rate(FixedWindow, 10 * SECOND, 3, 3),
        )
        .hit(4 * SECOND, 2, allowed(3, 1, 6 * SECOND))
        .hit(5 * SECOND, 1, allowed(3, 0, 5 * SECOND))
        .hit(9 * SECOND, 1, denied(3, 0, SECOND, Some(SECOND)))
        .hit(10 * SECOND, 3, allowed(3, 0, 10 * SECOND))
        .dry(10 * SECOND, 4, denied(3, 0, 10 * SECOND, None))
        .dry(20 * SECOND, 4, denied(3, 3, 0, None))
        .hit(25 * SECOND, 1, allowed(3, 2, 5 * SECOND)),
        // 10 per minute: one token every 6 s, 5 at most.
        Scenario::new(
            "token_bucket refills a token per interval",
            rate(TokenBucket, MINUTE, 10, 5),
        )
        .hit(0, 1, allowed(5, 4, 6 * SECOND))
        .hit(0, 1, allowed(5, 3, 12 * SECOND))
        .hit(0, 1, allowed(5, 2, 18 * SECOND))
        .hit(0, 1, allowed(5, 1, 24 * SECOND))
        .hit(0, 1, allowed(5, 0, 30 * SECOND))
        .hit(0, 1, denied(5, 0, 30 * SECOND, Some(6 * SECOND)))
        .dry(6 * SECOND - 1, 1, denied(5, 0, 24 * SECOND + 1, Some(1)))
        // At 9 s one token is back and the next is half way: cost 2 waits for 12 s.
        .hit(9 * SECOND, 2, denied(5, 1, 21 * SECOND, Some(3 * SECOND)))
        .hit(12 * SECOND, 2, allowed(5, 0, 30 * SECOND))
        .dry(12 * SECOND, 6, denied(5, 0, 30 * SECOND, None)),
        // One token a second; taking one at 1.2 s must not restart the clock.
        Scenario::new(
            "token_bucket keeps partial progress",
            rate(TokenBucket, 4 * SECOND, 4, 4),
        )
        .hit(0, 4, allowed(4, 0, 4 * SECOND))
        .dry(996_000, 1, denied(4, 0, 3_004_000, Some(4_000)))
        .hit(1_200_000, 1, allowed(4, 0, 3_800_000))
        .dry(1_996_000, 1, denied(4, 0, 3_004_000, Some(4_000)))
        .dry(2 * SECOND, 1, allowed(4, 0, 4 * SECOND))
        .dry(5 * SECOND, 1, allowed(4, 3, SECOND)),
        // 10 per minute: T = 6 s; burst 5.
        Scenario::new(
            "gcra passes the burst, then one per interval",
            rate(Gcra, MINUTE, 10, 5),
        )
        .hit(0, 1, allowed(5, 4, 6 * SECOND))
        .hit(0, 1, allowed(5, 3, 12 * SECOND))
        .hit(0, 1, allowed(5, 2, 18 * SECOND))
        .hit(0, 1, allowed(5, 1, 24 * SECOND))
        .hit(0, 1, allowed(5, 0, 30 * SECOND))
        .hit(0, 1, denied(5, 0, 30 * SECOND, Some(6 * SECOND)))
        .dry(6 * SECOND - 1, 1, denied(5, 0, 24 * SECOND + 1, Some(1)))
        .hit(6 * SECOND, 1, allowed(5, 0, 30 * SECOND))
        .hit(12 * SECOND, 2, denied(5, 1, 24 * SECOND, Some(6 * SECOND)))
        .dry(12 * SECOND, 6, denied(5, 1, 24 * SECOND, None)),
        // The policy the algorithm changes under: every state is dropped, never misread.
        Scenario::new(
            "a limit that changes algorithm starts afresh",
            rate(SlidingLog, MINUTE, 5, 5),
        )
        .hit(0, 3, allowed(5, 2, MINUTE))
        .rate(rate(FixedWindow, MINUTE, 5, 5))
        .hit(SECOND, 1, allowed(5, 4, 59 * SECOND))
        // Back to a log within its window: the old log and its total are gone.
        .rate(rate(SlidingLog, MINUTE, 5, 5))
        .hit(2 * SECOND, 1, allowed(5, 4, MINUTE))
        .hit(3 * SECOND, 4, allowed(5, 0, MINUTE))
        .rate(rate(TokenBucket, MINUTE, 10, 10))
        .hit(4 * SECOND, 1, allowed(10, 9, 6 * SECOND))
        .rate(rate(Gcra, MINUTE, 10, 10))
        .hit(5 * SECOND, 1, allowed(10, 9, 6 * SECOND))
        .rate(rate(SlidingWindow, MINUTE, 5, 5))
        .hit(6 * SECOND, 1, allowed(5, 4, 114 * SECOND))
        .rate(rate(FixedWindow, MINUTE, 5, 5))
        .hit(7 * SECOND, 2, allowed(5, 3, 53 * SECOND))
        .rate(rate(SlidingLog, MINUTE, 5, 5))
        .dry(8 * SECOND, 1, allowed(5, 4, MINUTE))
        .hit(8 * SECOND, 5, allowed(5, 0, MINUTE))
        .rate(rate(Gcra, MINUTE, 10, 10))
        .dry(9 * SECOND, 1, allowed(10, 9, 6 * SECOND))
        .rate(rate(FixedWindow, MINUTE, 5, 5))
        .dry(10 * SECOND, 1, allowed(5, 4, 50 * SECOND)),
    ];
    for algorithm in [Gcra, TokenBucket] {
        // 3 per 10 s: 3 333 334 µs between tokens, not 3 333 333.
        all.push(
            Scenario::new(
                "emission interval rounds up",
                rate(algorithm, 10 * SECOND, 3, 1),
            )
            .hit(0, 1, allowed(1, 0, 3_333_334))
            .hit(3_333_333, 1, denied(1, 0, 1, Some(1)))
            .hit(3_333_334, 1, allowed(1, 0, 3_333_334)),
        );
    }
    for algorithm in Algorithm::ALL {
        // A limit of 0 denies everything, names no time, and a shadow one still counts.
        let after_shadow = match algorithm {
            FixedWindow | SlidingLog => denied(0, 0, 59 * SECOND, None),
            SlidingWindow => denied(0, 0, 119 * SECOND, None),
            TokenBucket | Gcra => denied(0, 0, 0, None),
        };
        all.push(
            Scenario::new("zero limit", rate(algorithm, MINUTE, 0, 0))
                .dry(0, 1, denied(0, 0, 0, None))
                .hit(0, 1, denied(0, 0, 0, None))
                .dry(0, 1, denied(0, 0, 0, None))
                .shadow(0, 1, denied(0, 0, 0, None))
                .dry(SECOND, 1, after_shadow),
        );
    }
    all
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

async fn apply<S: Store>(
    store: &S,
    request: &Request<'_>,
    label: &str,
) -> ratewarden::store::Applied {
    store
        .apply(request)
        .await
        .unwrap_or_else(|e| panic!("{label}: {e}"))
}

/// Probes say whether the check would pass at another rate, and consume nothing.
async fn probes<S: Store>(store: &S, clock: &ManualClock, label: &str, who: KeyHash) {
    let label = &format!("{label}: probes");
    clock.set(T0);
    let fixed = |n| rate(FixedWindow, 10 * SECOND, n, n);
    let mut c = check(who, "fixed", fixed(5), 1, true);
    c.probes = [Some(fixed(2)), Some(fixed(10))];
    let expected = [
        [true, true],
        [true, true],
        [false, true],
        [false, true],
        [false, true],
    ];
    for (k, probes) in expected.iter().enumerate() {
        let applied = apply(store, &one(c.clone(), false), label).await;
        assert!(applied.admitted, "{label}: hit {k}");
        assert_eq!(
            applied.checks[0].outcome,
            allowed(5, 4 - k as u64, 10 * SECOND),
            "{label}: hit {k}"
        );
        assert_eq!(&applied.checks[0].probes, probes, "{label}: hit {k}");
    }
    let applied = apply(store, &one(c.clone(), false), label).await;
    assert!(!applied.admitted);
    assert_eq!(
        applied.checks[0].outcome,
        denied(5, 0, 10 * SECOND, Some(10 * SECOND)),
        "{label}"
    );
    assert_eq!(
        applied.checks[0].probes,
        [false, true],
        "{label}: denied, 10 would pass"
    );
    // Only the 5 admitted hits were counted, never the probes.
    let big = check(who, "fixed", fixed(100), 1, true);
    let applied = apply(store, &one(big, true), label).await;
    assert_eq!(
        applied.checks[0].outcome,
        allowed(100, 94, 10 * SECOND),
        "{label}"
    );

    // A bucket probe at a larger burst; the second probe absent means the outcome.
    let bucket = |burst| rate(TokenBucket, MINUTE, 10, burst);
    let mut c = check(who, "bucket", bucket(2), 1, true);
    c.probes = [Some(bucket(4)), None];
    for expected in [[true, true], [true, true], [true, false]] {
        let applied = apply(store, &one(c.clone(), false), label).await;
        assert_eq!(applied.checks[0].probes, expected, "{label}: bucket");
    }
    let applied = apply(
        store,
        &one(check(who, "bucket", bucket(4), 1, true), true),
        label,
    )
    .await;
    assert_eq!(
        applied.checks[0].outcome,
        allowed(4, 1, 18 * SECOND),
        "{label}: 2 used of 4"
    );

    // A gcra probe at half the emission interval and twice the burst: same state, other rate.
    let mut c = check(who, "gcra", rate(Gcra, MINUTE, 10, 2), 1, true);
    c.probes = [
        Some(rate(Gcra, MINUTE, 20, 8)),
        Some(rate(Gcra, MINUTE, 5, 1)),
    ];
    // The debt after k hits is 6k s (the third is denied); the probe at T = 3 s and tolerance
    // 24 s passes while 6k + 3 <= 24, the one at T = 12 s and tolerance 12 s while 6k + 12 <= 12.
    for (k, expected) in [[true, true], [true, false], [true, false]]
        .iter()
        .enumerate()
    {
        let applied = apply(store, &one(c.clone(), false), label).await;
        assert_eq!(&applied.checks[0].probes, expected, "{label}: gcra hit {k}");
    }
}

/// A shadow check never denies and is consumed whenever the request passes, only then.
async fn shadow<S: Store>(store: &S, clock: &ManualClock, label: &str, who: KeyHash) {
    let label = &format!("{label}: shadow");
    clock.set(T0 + MINUTE);
    let fixed = |n| rate(FixedWindow, 10 * SECOND, n, n);
    let request = || {
        checks(
            [
                check(who, "enforced", fixed(4), 1, true),
                check(who, "shadow", fixed(2), 1, false),
            ],
            false,
        )
    };
    let shadow_outcomes = [
        allowed(2, 1, 10 * SECOND),
        allowed(2, 0, 10 * SECOND),
        denied(2, 0, 10 * SECOND, Some(10 * SECOND)),
        denied(2, 0, 10 * SECOND, Some(10 * SECOND)),
    ];
    for (k, expected) in shadow_outcomes.iter().enumerate() {
        let applied = apply(store, &request(), label).await;
        assert!(
            applied.admitted,
            "{label}: request {k}: a shadow limit never denies"
        );
        assert_eq!(&applied.checks[1].outcome, expected, "{label}: request {k}");
    }
    let applied = apply(store, &request(), label).await;
    assert!(!applied.admitted, "{label}: the enforced limit is spent");
    // Both were consumed by the 4 admitted requests, not by the denied fifth.
    let probe = checks(
        [
            check(who, "enforced", fixed(100), 1, true),
            check(who, "shadow", fixed(100), 1, true),
        ],
        true,
    );
    let applied = apply(store, &probe, label).await;
    assert_eq!(
        outcomes(&applied.checks),
        [allowed(100, 95, 10 * SECOND); 2],
        "{label}"
    );
}

/// The five algorithms and a spent gate in one request: the gate denies, nothing is consumed.
async fn denied_request_consumes_nothing<S: Store>(
    store: &S,
    clock: &ManualClock,
    label: &str,
    who: KeyHash,
) {
    let label = &format!("{label}: denied request");
    clock.set(T0 + 2 * MINUTE);
    let names = ["log", "window", "fixed", "bucket", "gcra"];
    let five = |gate: Option<u64>, cost: u64| {
        let mut all: Vec<Check<'_>> = Algorithm::ALL
            .iter()
            .zip(names)
            .map(|(a, name)| check(who, name, rate(*a, MINUTE, 5, 5), cost, true))
            .collect();
        if let Some(limit) = gate {
            all.push(check(
                who,
                "gate",
                rate(FixedWindow, MINUTE, limit, limit),
                cost,
                true,
            ));
        }
        all
    };
    let first = apply(store, &checks(five(Some(1), 1), false), label).await;
    assert!(first.admitted, "{label}");
    let denied_one = apply(store, &checks(five(Some(1), 1), false), label).await;
    assert!(!denied_one.admitted, "{label}: the gate is spent");
    assert!(
        denied_one.checks[..5].iter().all(|c| c.outcome.allowed),
        "{label}"
    );
    // The same five, evaluated alone now: exactly what the denied request saw.
    let alone = apply(store, &checks(five(None, 1), true), label).await;
    assert_eq!(
        outcomes(&alone.checks),
        outcomes(&denied_one.checks[..5]),
        "{label}"
    );
    assert!(
        alone.checks.iter().all(|c| c.outcome.remaining == 3),
        "{label}: {alone:?}"
    );
    // A cost above one limit: that check says never; the request consumes nothing either.
    let mut over = five(None, 2);
    over[2].rate = rate(FixedWindow, MINUTE, 1, 1);
    let applied = apply(store, &checks(over, false), label).await;
    assert!(!applied.admitted, "{label}");
    assert_eq!(
        applied.checks[2].outcome,
        denied(1, 0, MINUTE, None),
        "{label}"
    );
    let alone = apply(store, &checks(five(None, 1), true), label).await;
    assert!(
        alone.checks.iter().all(|c| c.outcome.remaining == 3),
        "{label}: {alone:?}"
    );
}

/// A dry run evaluates and consumes nothing, however often it is repeated.
async fn dry_run_consumes_nothing<S: Store>(
    store: &S,
    clock: &ManualClock,
    label: &str,
    who: KeyHash,
) {
    let label = &format!("{label}: dry run");
    clock.set(T0 + 3 * MINUTE);
    let five = |dry_run: bool| {
        checks(
            Algorithm::ALL
                .iter()
                .map(|a| check(who, a.name(), rate(*a, MINUTE, 5, 5), 2, true)),
            dry_run,
        )
    };
    let first = apply(store, &five(true), label).await;
    assert!(
        first.admitted,
        "{label}: a dry run says whether it would pass"
    );
    for _ in 0..5 {
        assert_eq!(apply(store, &five(true), label).await, first, "{label}");
    }
    let real = apply(store, &five(false), label).await;
    assert_eq!(
        real, first,
        "{label}: the real request sees what the dry runs saw"
    );
    let after = apply(store, &five(true), label).await;
    assert!(
        after.checks.iter().all(|c| c.outcome.remaining == 1),
        "{label}: {after:?}"
    );
}
