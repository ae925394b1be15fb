//! Control cycles on the embedded store with a manual clock and a scripted load: the load
//! factor reaches decisions (but not `adaptive: false` tiers and rules), and recorded traffic
//! becomes exact features that leave with the window.

use crate::common::logs::Captured;
use crate::common::{EXAMPLE_POLICY, START};
use ratewarden::clock::{ManualClock, Micros};
use ratewarden::control::{ControlLoop, LoadSampler, ModelSlot};
use ratewarden::engine::{CheckRequest, Engine, Outcome, SubjectHasher, SubjectStanding};
use ratewarden::policy::Policy;
use ratewarden::store::{Backend, MemoryStore};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A load curve given in advance.
pub struct Scripted(pub VecDeque<f64>);

impl LoadSampler for Scripted {
    fn sample(&mut self, _now: Micros) -> Option<f64> {
        self.0.pop_front()
    }
}

pub fn engine(yaml: &str) -> (Arc<Engine<Backend>>, ManualClock) {
    let policy = Policy::from_yaml(yaml, Path::new(".")).expect("valid policy");
    let clock = ManualClock::starting_at(START);
    let store = MemoryStore::new(Arc::new(clock.clone()), 1_000_000);
    let engine = Engine::new(
        policy,
        Backend::Memory(store),
        SubjectHasher::from_secret("s"),
    )
    .with_clock(Arc::new(clock.clone()));
    (Arc::new(engine), clock)
}

fn control(engine: &Arc<Engine<Backend>>, load: &[f64]) -> ControlLoop {
    let model = Arc::new(ModelSlot::new(engine.metrics().clone()));
    ControlLoop::new(
        engine.clone(),
        model,
        Box::new(Scripted(load.iter().copied().collect())),
    )
}

fn without_model(yaml: &str) -> String {
    yaml.replace("model: models/abuse.json", "model: null")
}

async fn limit_of(engine: &Engine<Backend>, user: &str, endpoint: &str, tier: &str) -> u64 {
    let mut request = CheckRequest::new(user, endpoint);
    request.tier = Some(tier);
    let decision = engine.check(&request).await.unwrap();
    decision.limit.expect("a limit applies")
}

#[tokio::test]
async fn high_load_halves_adaptive_limits_and_leaves_adaptive_false_alone() {
    let (engine, clock) = engine(&without_model(EXAMPLE_POLICY));
    // smoothing 0.3: 1.0 three times takes the EWMA from 1.0 (first sample) to 1.0.
    let mut control = control(&engine, &[1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    let report = control.cycle().await;
    assert_eq!(report.load_factor, 0.5);
    assert_eq!(engine.metrics().load_factor.get(), 0.5);
    assert_eq!(engine.metrics().system_cpu_ratio.get(), 1.0);
    // free: burst 20 at 0.5 is 10 (the limit with the least remaining is shown).
    assert_eq!(limit_of(&engine, "a", "/x", "free").await, 10);
    // enterprise is `adaptive: false`, endpoint limits included: default_endpoint's 50 a
    // minute (less room than its GCRA burst of 500) stays 50.
    assert_eq!(limit_of(&engine, "b", "/x", "enterprise").await, 50);
    // The SMS rule is `adaptive: false`: 10 an hour stays exact.
    assert_eq!(limit_of(&engine, "c", "/sms/send", "pro").await, 10);

    // The load falls: the EWMA crosses low (0.3) after a few idle samples, then limits grow.
    control.cycle().await;
    let mut factors = Vec::new();
    for _ in 0..8 {
        clock.advance(Duration::from_secs(1));
        factors.push(control.cycle().await.load_factor);
    }
    assert_eq!(factors, [1.0, 1.0, 1.0, 1.5, 1.5, 1.5, 1.5, 1.5]);
    assert_eq!(limit_of(&engine, "d", "/x", "free").await, 30);
    assert_eq!(limit_of(&engine, "e", "/x", "enterprise").await, 50);
}

#[tokio::test]
async fn the_override_pins_the_load_factor_whatever_the_load() {
    let (engine, _clock) = engine(&without_model(EXAMPLE_POLICY));
    let mut thresholds = engine.scale_factors().thresholds();
    thresholds.load_factor_override = Some(0.25);
    engine.scale_factors().set_thresholds(thresholds);
    let log = Captured::default();
    let _guard = log.start();
    // A busy host would take the factor to 0.5 unpinned; pinned, that is no news.
    let mut control = control(&engine, &[1.0, 1.0]);
    assert_eq!(control.cycle().await.load_factor, 0.25);
    assert_eq!(limit_of(&engine, "a", "/x", "free").await, 5);
    assert_eq!(engine.scale_factors().measured_load_factor(), 0.5);
    assert!(!log.text().contains("load factor"), "{}", log.text());
    // Lifted, the factor the load gives is in force, and now told.
    let mut thresholds = engine.scale_factors().thresholds();
    thresholds.load_factor_override = None;
    engine.scale_factors().set_thresholds(thresholds);
    assert_eq!(control.cycle().await.load_factor, 0.5);
    assert!(log.text().contains("load factor 0.5"), "{}", log.text());
}

#[tokio::test]
async fn recorded_traffic_becomes_exact_features_that_leave_with_the_window() {
    let (engine, clock) = engine(&without_model(EXAMPLE_POLICY));
    let mut control = control(&engine, &[]);
    // 30 requests a second apart, over 3 endpoints and 2 addresses; the /api/export rule
    // (5 a minute) denies some; 10 reports: four 401, one 404, one 409.
    for i in 0..30u32 {
        let endpoint = ["/a", "/b", "/api/export"][i as usize % 3];
        let mut request = CheckRequest::new("alice", endpoint);
        request.tier = Some("pro");
        request.ip = Some(
            if i % 2 == 0 {
                "203.0.113.7"
            } else {
                "203.0.113.8"
            }
            .parse()
            .unwrap(),
        );
        engine.check(&request).await.unwrap();
        if i < 10 {
            let status = match i {
                0..4 => 401,
                4 => 404,
                5 => 409,
                _ => 200,
            };
            engine.report(&Outcome::new("alice", "/login", status));
        }
        clock.advance(Duration::from_secs(1));
    }
    let report = control.cycle().await;
    assert_eq!(
        (report.active, report.scored),
        (1, 0),
        "no model: nobody scored"
    );
    let alice = engine.hasher().user("alice");
    let observed = engine
        .scale_factors()
        .observed(alice)
        .expect("alice was active");
    let f = observed.features;
    assert_eq!(observed.requests, 30);
    assert_eq!(f.endpoints_per_request, 3.0 / 30.0);
    assert_eq!(f.ips_per_request, 2.0 / 30.0);
    assert_eq!(f.auth_failure_ratio, 0.4);
    assert_eq!(f.not_found_ratio, 0.1);
    assert_eq!(f.other_client_error_ratio, 0.1);
    assert_eq!(f.client_error_ratio, 0.6, "every 4xx together");
    assert_eq!(f.address_spread, 2.0 / (30.0 + 20.0));
    // Every third request reaches /api/export's 5 a minute (1/5 after the first, then 2/5
    // ...); /a and /b share the default rule's 50 a minute.
    assert!(f.limit_usage > 0.2 && f.limit_usage < 1.0, "{f:?}");
    // /api/export: 10 requests in 30 s, windows of a minute aligned to the epoch: the 6th
    // and later in one window are denied. Count what the engine denied.
    assert!(f.denied_ratio > 0.0 && f.denied_ratio < 1.0 / 3.0, "{f:?}");
    // Each denial asked for one of the 150 requests /api/export allows in the 30-minute
    // anomaly window (5 a minute, thirty windows of it).
    let denied = (f.denied_ratio * 30.0).round();
    let demand = f.limit_usage + denied / 150.0;
    assert!((f.limit_demand - demand).abs() < 1e-6, "{f:?}");
    assert_eq!(f.interarrival_cv, 0.0, "a metronome");

    // Thirty minutes and two buckets later the window holds nothing of alice.
    clock.advance(Duration::from_secs(1800 + 600));
    control.cycle().await;
    assert_eq!(engine.scale_factors().observed(alice), None);
}

/// `denied_ratio` is the policy's own verdict, as in the model's training data: denials that
/// only the anomaly factor or the load factor caused are not counted (else a flag would raise
/// the very feature that keeps it), denials by the limits as written are.
#[tokio::test]
async fn only_the_policys_own_denials_count_in_denied_ratio() {
    let (engine, clock) = engine(&without_model(EXAMPLE_POLICY));
    let mut control = control(&engine, &[1.0]);
    let burst = |user: &'static str, n: usize| {
        let engine = engine.clone();
        async move {
            let mut reasons = Vec::new();
            for _ in 0..n {
                let d = engine.check(&CheckRequest::new(user, "/x")).await.unwrap();
                reasons.push(d.reason.map(|r| r.label()));
            }
            reasons
        }
    };
    let denied = |reasons: &[Option<&str>], reason: &str| {
        reasons.iter().filter(|r| **r == Some(reason)).count()
    };
    // Flagged: free's burst of 20 becomes 2.
    let flagged = engine.hasher().user("flagged");
    engine.scale_factors().set_standing(
        flagged,
        SubjectStanding {
            abuse_score: 0.99,
            held_until: START + 3_600_000_000,
            novel: false,
        },
    );
    let reasons = burst("flagged", 10).await;
    assert_eq!(denied(&reasons, "anomaly"), 8, "{reasons:?}");
    // The load factor pinned at 0.25: the burst of 20 becomes 5.
    let mut thresholds = engine.scale_factors().thresholds();
    thresholds.load_factor_override = Some(0.25);
    engine.scale_factors().set_thresholds(thresholds);
    let reasons = burst("loaded", 10).await;
    assert_eq!(denied(&reasons, "load"), 5, "{reasons:?}");
    // At factor 1: 20 pass, 5 are denied by the burst limit as written.
    thresholds.load_factor_override = Some(1.0);
    engine.scale_factors().set_thresholds(thresholds);
    let reasons = burst("spent", 25).await;
    assert_eq!(denied(&reasons, "burst"), 5, "{reasons:?}");

    clock.advance(Duration::from_secs(2));
    control.cycle().await;
    let ratio = |user: &str| {
        let observed = engine.scale_factors().observed(engine.hasher().user(user));
        observed.expect("active").features.denied_ratio
    };
    assert_eq!(ratio("flagged"), 0.0);
    assert_eq!(ratio("loaded"), 0.0);
    assert_eq!(ratio("spent"), 5.0 / 25.0);
}

#[tokio::test]
async fn new_load_thresholds_apply_from_the_next_decision_not_the_next_cycle() {
    let (engine, _clock) = engine(&without_model(EXAMPLE_POLICY));
    let mut control = control(&engine, &[1.0, 1.0]);
    assert_eq!(control.cycle().await.load_factor, 0.5);
    assert_eq!(limit_of(&engine, "a", "/x", "free").await, 10);
    // An operator halves the busy factor: the next decision has it, before any cycle.
    let mut thresholds = engine.scale_factors().thresholds();
    thresholds.load_high_factor = 0.25;
    engine.scale_factors().set_thresholds(thresholds);
    assert_eq!(engine.scale_factors().load_factor(), 0.25);
    assert_eq!(limit_of(&engine, "b", "/x", "free").await, 5);
    // A smoothed load of 1.0 is not above a `high` of 1.0, but within its margin: a busy host
    // stays busy (hysteresis), read with the live thresholds too.
    thresholds.load_high = 1.0;
    engine.scale_factors().set_thresholds(thresholds);
    assert_eq!(engine.scale_factors().load_factor(), 0.25);
    // Loosened, the factor is back at once.
    thresholds.load_high_factor = 1.0;
    engine.scale_factors().set_thresholds(thresholds);
    assert_eq!(limit_of(&engine, "c", "/x", "free").await, 20);
}
