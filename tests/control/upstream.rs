//! The `upstream` load source: a scripted series of reports, one interval at a time on a
//! manual clock, gives exact factors (a move only once three intervals agree, by the mildest
//! of them, smoothed; hysteresis; intervals with too few reports carried over; 5xx share as a
//! second signal).

use super::cycle::engine;
use ratewarden::control::{ControlLoop, ModelSlot, NoLoad, percentile};
use ratewarden::engine::{CheckRequest, Engine, Outcome, SubjectQuery};
use ratewarden::store::Backend;
use std::sync::Arc;
use std::time::Duration;

const POLICY: &str = "
default_tier: free
tiers:
  free:
    limits:
      - { name: per_minute, algorithm: fixed_window, requests: 100, window: 1m }
adaptive:
  load:
    source: upstream
    smoothing: 0.5
    high_factor: 0.5
    low_factor: 1.5
    upstream:
      percentile: 0.9
      latency_target: 100ms
      error_target: 0.05
      min_reports: 10
";

/// One interval's reports: `count` outcomes of `latency_ms`, the first `errors` of them 503.
fn report(engine: &Engine<Backend>, count: usize, latency_ms: f64, errors: usize) {
    for i in 0..count {
        engine.report(&Outcome {
            user: "alice",
            endpoint: "/search".into(),
            status: if i < errors { 503 } else { 200 },
            latency_ms: Some(latency_ms),
        });
    }
}

#[tokio::test]
async fn the_factor_follows_a_scripted_series_of_reports() {
    let (engine, clock) = engine(POLICY);
    let model = Arc::new(ModelSlot::new(engine.metrics().clone()));
    let mut control = ControlLoop::new(engine.clone(), model, Box::new(NoLoad));
    // (reports, latency, 5xx, factor after the cycle, pressure)
    let script: [(usize, f64, usize, f64, Option<f64>); 22] = [
        // Over target, but one or two intervals are not yet agreement: the factor holds.
        (10, 200.0, 0, 1.0, Some(2.0)),
        (10, 300.0, 0, 1.0, Some(3.0)),
        // Three over target: the mildest, pressure 2, aims at 1/2; half the way: 0.75.
        (10, 200.0, 0, 0.75, Some(2.0)),
        // Still over: the mildest of 3, 2, 4 aims at 0.375, below high_factor: 0.5.
        (10, 400.0, 0, 0.625, Some(4.0)),
        // At target, then under it: the last three disagree, it holds.
        (10, 100.0, 0, 0.625, Some(1.0)),
        (10, 50.0, 0, 0.625, Some(0.5)),
        // One interval's spike between fast ones moves nothing.
        (10, 400.0, 0, 0.625, Some(4.0)),
        (10, 50.0, 0, 0.625, Some(0.5)),
        // Just under target (within the 0.05 margin): holds while it is among the last three.
        (10, 97.0, 0, 0.625, Some(0.97)),
        (10, 50.0, 0, 0.625, Some(0.5)),
        (10, 50.0, 0, 0.625, Some(0.5)),
        // Three under the margin: the largest, 0.8, aims at 0.78125; half the way.
        (10, 80.0, 0, 0.703125, Some(0.8)),
        // Too few reports to say anything: holds, no signal; they are carried over.
        (5, 500.0, 0, 0.703125, None),
        // With the 5 carried over: p90 of 15 is the 14th, 500 ms (pressure 5), above the 5xx
        // share's (2 of 15 against 0.05: 2.67).
        (10, 50.0, 2, 0.703125, Some(5.0)),
        // Fast, but 1 in 10 a 503, twice the error target: pressure 2 from the errors alone;
        // with the 5 and the 0.8 before it, no agreement yet.
        (20, 10.0, 2, 0.703125, Some(2.0)),
        // 5, 2, 2: the errors lower it, aim 0.3515625 clamped at 0.5.
        (20, 10.0, 2, 0.6015625, Some(2.0)),
        // Idle and fast: once three agree, the aim clamps at low_factor 1.5, and the factor
        // returns towards it.
        (20, 10.0, 0, 0.6015625, Some(0.1)),
        (20, 10.0, 0, 0.6015625, Some(0.1)),
        (20, 10.0, 0, 1.05078125, Some(0.1)),
        (20, 10.0, 0, 1.275390625, Some(0.1)),
        (20, 10.0, 0, 1.3876953125, Some(0.1)),
        (20, 10.0, 0, 1.44384765625, Some(0.1)),
    ];
    for (step, (count, latency, errors, factor, pressure)) in script.into_iter().enumerate() {
        report(&engine, count, latency, errors);
        clock.advance(Duration::from_secs(1));
        let cycle = control.cycle().await;
        assert_eq!(cycle.load_factor, factor, "step {step}");
        assert_eq!(cycle.load_signal, pressure, "step {step}");
        assert_eq!(engine.scale_factors().load_factor(), factor, "step {step}");
    }
    let load = &engine.metrics().load;
    assert_eq!(
        load.factor.with_label_values(&["global"]).get(),
        1.44384765625
    );
    assert_eq!(load.target.with_label_values(&["global"]).get(), 1.0);
    assert_eq!(
        load.upstream_latency.with_label_values(&["global"]).get(),
        0.01
    );
    assert_eq!(
        load.upstream_errors.with_label_values(&["global"]).get(),
        0.0
    );
    assert_eq!(
        load.upstream_latency_target
            .with_label_values(&["global"])
            .get(),
        0.1
    );
    // The limit scales with it: floor(100 × 1.44384765625) = 144.
    let decision = engine
        .check(&CheckRequest::new("bob", "/search"))
        .await
        .unwrap();
    assert_eq!(decision.limit, Some(144));
    // An interval of reports without a latency has none: not the last one's 10 ms.
    for _ in 0..20 {
        engine.report(&Outcome {
            user: "alice",
            endpoint: "/search".into(),
            status: 200,
            latency_ms: None,
        });
    }
    clock.advance(Duration::from_secs(1));
    control.cycle().await;
    let latency = load.upstream_latency.with_label_values(&["global"]).get();
    assert!(latency.is_nan(), "{latency}");
}

#[tokio::test]
async fn the_policy_override_still_wins_over_the_upstream_factor() {
    let yaml = POLICY.replace(
        "    source: upstream",
        "    source: upstream\n    factor_override: 0.25",
    );
    let (engine, clock) = engine(&yaml);
    let model = Arc::new(ModelSlot::new(engine.metrics().clone()));
    let mut control = ControlLoop::new(engine.clone(), model, Box::new(NoLoad));
    for _ in 0..3 {
        report(&engine, 10, 200.0, 0);
        clock.advance(Duration::from_secs(1));
        assert_eq!(control.cycle().await.load_factor, 0.25);
    }
    assert_eq!(engine.scale_factors().measured_load_factor(), 0.75);
}

#[test]
fn the_percentile_is_the_nearest_rank() {
    let mut ten: Vec<f64> = (1..=10).rev().map(f64::from).collect();
    assert_eq!(percentile(&mut ten, 0.9), Some(9.0));
    assert_eq!(percentile(&mut ten, 0.5), Some(5.0));
    assert_eq!(percentile(&mut ten, 1.0), Some(10.0));
    assert_eq!(percentile(&mut ten, 0.01), Some(1.0));
    let mut hundred: Vec<f64> = (1..=100).map(f64::from).collect();
    assert_eq!(percentile(&mut hundred, 0.99), Some(99.0));
    assert_eq!(percentile(&mut [], 0.9), None);
}

const PER_RULE_POLICY: &str = "
default_tier: free
tiers:
  free:
    limits:
      - { name: per_minute, algorithm: fixed_window, requests: 100, window: 1m }
endpoints:
  - path: /api/search
    limits: [ { name: search, algorithm: fixed_window, requests: 40, window: 1m } ]
  - path: /api/export
    load:
      source: upstream
      upstream: { latency_target: 100ms, min_reports: 10 }
    limits: [ { name: export, algorithm: fixed_window, requests: 40, window: 1m } ]
adaptive:
  load:
    source: upstream
    smoothing: 0.5
    high_factor: 0.5
    low_factor: 1.0
    upstream: { latency_target: 100ms, min_reports: 10 }
";

#[tokio::test]
async fn a_rule_with_its_own_source_scales_its_limits_alone() {
    let (engine, clock) = engine(PER_RULE_POLICY);
    let model = Arc::new(ModelSlot::new(engine.metrics().clone()));
    let mut control = ControlLoop::new(engine.clone(), model, Box::new(NoLoad));
    // Search is fast (the policy's source); the export backend is four times over its target,
    // and its reports go to its own source only. Three intervals, so that each source moves.
    let mut cycle = None;
    for _ in 0..3 {
        for (endpoint, latency_ms) in [("/api/search", 50.0), ("/api/export", 400.0)] {
            for _ in 0..10 {
                engine.report(&Outcome {
                    user: "alice",
                    endpoint: endpoint.into(),
                    status: 200,
                    latency_ms: Some(latency_ms),
                });
            }
        }
        clock.advance(Duration::from_secs(1));
        cycle = Some(control.cycle().await);
    }
    let cycle = cycle.unwrap();
    // Pressure 0.5 aims at 2, capped at low_factor 1.0; export: pressure 4, aim 0.25 capped at
    // 0.5, half the way from 1.0.
    assert_eq!((cycle.load_factor, cycle.load_signal), (1.0, Some(0.5)));

    let export = engine
        .check(&CheckRequest::new("bob", "/api/export"))
        .await
        .unwrap();
    assert_eq!(export.load_factor, 1.0);
    assert_eq!(export.rule_load_factor, Some(0.75));
    assert_eq!(
        export.limit,
        Some(30),
        "40 × 0.75, under the tier's 100 × 1.0"
    );
    let search = engine
        .check(&CheckRequest::new("bob", "/api/search"))
        .await
        .unwrap();
    assert_eq!((search.rule_load_factor, search.limit), (None, Some(40)));

    // The admin view names the factor each limit is scaled by.
    let view = engine
        .inspect_subject(SubjectQuery {
            subject: engine.subject_of("carol"),
            endpoint: Some("/api/export"),
            ip: None,
            tier: None,
        })
        .await
        .unwrap();
    assert_eq!(view.rule_load_factor, Some(0.75));
    let limits: Vec<(&str, u64, f64)> = view
        .limits
        .iter()
        .map(|l| (l.name.as_str(), l.effective, l.load_factor))
        .collect();
    assert_eq!(limits, [("per_minute", 100, 1.0), ("export", 30, 0.75)]);

    let factor = |scope: &str| {
        engine
            .metrics()
            .load
            .factor
            .with_label_values(&[scope])
            .get()
    };
    assert_eq!((factor("global"), factor("/api/export")), (1.0, 0.75));
}
