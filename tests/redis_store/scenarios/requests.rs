//! The suite's request-level rules, on any store: probes consume nothing, shadow checks never
//! deny, a denied request and a dry run consume nothing.

use super::{checks, one, outcomes};
use crate::support::*;
use ratewarden::clock::ManualClock;
use ratewarden::limit::Algorithm;
use ratewarden::limit::KeyHash;
use ratewarden::store::{Check, Request, Store};

use Algorithm::{FixedWindow, Gcra, TokenBucket};

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
pub async fn probes<S: Store>(store: &S, clock: &ManualClock, label: &str, who: KeyHash) {
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
pub async fn shadow<S: Store>(store: &S, clock: &ManualClock, label: &str, who: KeyHash) {
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
pub async fn denied_request_consumes_nothing<S: Store>(
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
pub async fn dry_run_consumes_nothing<S: Store>(
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
