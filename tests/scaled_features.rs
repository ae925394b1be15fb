//! What a decision gives a subject's features (`limit_usage`, `limit_demand`, `denied_ratio`)
//! is read against the policy's limits as written, whatever the load and anomaly factors made
//! of them: a flag must not erase the usage that earned it (the flag would then end and begin
//! again), and denials that only the scaling caused must not count as the policy's refusals (a
//! flag would feed itself). A request past the limits as written counts as `train` counts it,
//! even when an idle machine's load factor lets it through.

mod common;

use common::{EXAMPLE_POLICY, check, engine};
use ratewarden::clock::ManualClock;
use ratewarden::engine::{CheckRequest, Engine, Reason, SubjectStanding};
use ratewarden::store::MemoryStore;

use std::time::Duration;

/// `dave` on the free tier (100 an hour, a sliding log; the burst bucket refills one request
/// every 3 s), on a path of the default endpoint rule (50 a minute).
fn dave() -> CheckRequest<'static> {
    CheckRequest::new("dave", "/items")
}

/// `n` requests, 4 s apart, all allowed.
async fn spend(engine: &Engine<MemoryStore>, clock: &ManualClock, n: usize) {
    for _ in 0..n {
        assert!(check(engine, dave()).await.allowed);
        clock.advance(Duration::from_secs(4));
    }
}

fn flag(engine: &Engine<MemoryStore>) {
    let subject = engine.hasher().user("dave");
    let standing = SubjectStanding {
        abuse_score: 0.95,
        held_until: 0,
        novel: false,
    };
    engine.scale_factors().set_standing(subject, standing);
}

fn unflag(engine: &Engine<MemoryStore>) {
    engine.scale_factors().publish_standings(Default::default());
}

#[tokio::test]
async fn a_flagged_subject_reads_its_usage_and_demand_against_its_limits_as_written() {
    let (engine, clock) = engine(EXAMPLE_POLICY);
    spend(&engine, &clock, 60).await;
    flag(&engine);
    // Flagged, its hourly limit is 10 (factor 0.1), spent six times over: denied for the
    // anomaly factor, since the limit as written has room.
    let d = check(&engine, dave()).await;
    assert!(!d.allowed);
    assert_eq!(d.reason, Some(Reason::Anomaly));
    assert!(!d.denied_as_written());
    // 61 of 100 with this request, not the 10 of 10 the scaled limit shows (which, scaled
    // back, read 0.1 whatever the subject had asked).
    assert_eq!(d.limit_usage, 0.61);
    assert_eq!(d.limit_overflow, 0.0);

    // Past its quota as written, a flagged subject's denial is the policy's own, and asks a
    // hundredth of what the hourly limit allows in a 30-minute window (its own hour's worth).
    unflag(&engine);
    clock.advance(Duration::from_secs(60));
    spend(&engine, &clock, 40).await;
    flag(&engine);
    let d = check(&engine, dave()).await;
    assert!(!d.allowed);
    assert_eq!(d.reason, Some(Reason::Quota));
    assert!(d.denied_as_written());
    assert_eq!(d.limit_usage, 1.0);
    assert_eq!(d.limit_overflow, 1.0 / 100.0);
}

#[tokio::test]
async fn a_denial_only_the_load_and_anomaly_factors_together_cause_is_not_the_quota() {
    let (engine, clock) = engine(EXAMPLE_POLICY);
    spend(&engine, &clock, 50).await;
    let mut thresholds = engine.scale_factors().thresholds();
    thresholds.load_factor_override = Some(0.5);
    engine.scale_factors().set_thresholds(thresholds);
    flag(&engine);
    // 50 of the hourly 100 spent: at the load factor alone the limit is 50, at the anomaly
    // factor alone 10, together 5; as written it has room. Neither factor alone would pass
    // it, so neither probe does, yet the policy as written would.
    let d = check(&engine, dave()).await;
    assert!(!d.allowed);
    assert_eq!(d.reason, Some(Reason::Anomaly));
    assert!(!d.denied_as_written(), "not counted in denied_ratio");
    assert_eq!(d.limit_overflow, 0.0, "nor in limit_demand");
    assert_eq!(d.limit_usage, 0.51);

    // The same subject at the load factor alone is denied for the load.
    unflag(&engine);
    let d = check(&engine, dave()).await;
    assert!(!d.allowed);
    assert_eq!(d.reason, Some(Reason::Load));
    assert!(!d.denied_as_written());
}

#[tokio::test]
async fn a_request_past_the_limits_as_written_counts_even_when_an_idle_machine_lets_it_through() {
    let (engine, _clock) = engine(EXAMPLE_POLICY);
    // An idle machine lifts adaptive limits by half: /api/export, 5 a minute as written,
    // allows 7. The sixth and seventh pass, and ask what the policy as written refuses: the
    // features count them as `train`, which never scales, does.
    engine.scale_factors().set_load_factor(1.5);
    for n in 1..=7 {
        let d = check(&engine, CheckRequest::new("erin", "/api/export")).await;
        assert!(d.allowed, "request {n}");
        assert_eq!(d.denied_as_written(), n > 5, "request {n}");
        let overflow = if n > 5 { 1.0 / 150.0 } else { 0.0 };
        assert_eq!(d.limit_overflow, overflow, "request {n}");
    }
}
