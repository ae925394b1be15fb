//! Memory stays bounded under a flood of distinct subjects: expired keys are swept, and
//! `store.max_keys` is a hard cap that refuses new keys with a clear decision.

mod common;

use common::{START, engine_with};
use ratewarden::engine::{CheckRequest, Reason};
use std::time::Duration;

fn one_limit(algorithm: &str, window: &str) -> String {
    format!(
        "default_tier: t\ntiers:\n  t:\n    limits:\n      - {{ name: l, algorithm: {algorithm}, requests: 10, window: {window} }}\n"
    )
}

/// One request per user; the store state is all that should remain.
fn flood(engine: &ratewarden::engine::Engine<ratewarden::store::MemoryStore>, from: u64, to: u64) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        for i in from..to {
            let user = format!("user-{i}");
            engine.check(&CheckRequest::new(&user, "/x")).await.unwrap();
        }
    });
}

#[test]
fn a_million_distinct_subjects_stay_within_the_live_window() {
    let (engine, clock) = engine_with(&one_limit("sliding_log", "1s"), 10_000_000);
    // 1,000,000 subjects over 10 simulated seconds: about 100,000 are inside any 1 s window.
    let mut peak = 0;
    for step in 0..100u64 {
        flood(&engine, step * 10_000, (step + 1) * 10_000);
        clock.set(START + (step + 1) * 100_000);
        engine.store().sweep_expired();
        peak = peak.max(engine.store().len());
    }
    assert!(peak <= 110_000, "peak {peak} keys");
    clock.advance(Duration::from_secs(2));
    engine.store().sweep_expired();
    assert_eq!(engine.store().len(), 0, "everything expires");
}

#[test]
fn max_keys_refuses_new_subjects_and_keeps_serving_known_ones() {
    let (engine, _clock) = engine_with(&one_limit("fixed_window", "1h"), 1_000);
    flood(&engine, 0, 5_000);
    let len = engine.store().len();
    // The cap is split over 256 shards, rounded up: at most 4 keys each.
    assert!(len <= 1_024, "{len} keys");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let d = engine
            .check(&CheckRequest::new("user-999999", "/x"))
            .await
            .unwrap();
        if !d.allowed {
            assert_eq!(d.reason, Some(Reason::StoreUnavailable));
            assert!(d.degraded);
            assert!(d.store_full, "said to be full, not failed");
        }
        // A subject the store already tracks is served as usual.
        let d = engine
            .check(&CheckRequest::new("user-0", "/x"))
            .await
            .unwrap();
        assert!(d.allowed);
        assert!(!d.degraded);
    });
}

/// Under `on_error: local`, while Redis does not answer, the per-instance limiter can fill up
/// too: the denial says the store is full, not that `on_error` denies (it says `local`).
#[tokio::test]
async fn a_full_per_instance_limiter_says_it_is_full() {
    use ratewarden::clock::{Clock, ManualClock};
    use ratewarden::engine::{Engine, SubjectHasher};
    use ratewarden::policy::Policy;
    use ratewarden::store::{Backend, MemoryStore, RedisStore};
    use std::sync::Arc;

    // Nothing listens on port 1: every call fails at once.
    let yaml = format!(
        "store: {{ url: \"redis://127.0.0.1:1\", on_error: local, timeout: 200ms }}\n{}",
        one_limit("fixed_window", "1h")
    );
    let policy = Policy::from_yaml(&yaml, std::path::Path::new(".")).unwrap();
    let redis = RedisStore::connect("redis://127.0.0.1:1", "rw", Duration::from_millis(200))
        .expect("a valid URL");
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::starting_at(START));
    let engine = Engine::new(
        policy,
        Backend::Redis(redis),
        SubjectHasher::from_secret("full fallback"),
    )
    .with_fallback(MemoryStore::new(clock, 256));
    let mut denied = None;
    for i in 0..10_000 {
        let user = format!("user-{i}");
        let d = engine.check(&CheckRequest::new(&user, "/x")).await.unwrap();
        assert!(d.degraded);
        if !d.allowed {
            denied = Some(d);
            break;
        }
    }
    let d = denied.expect("the per-instance limiter fills up");
    assert_eq!(d.reason, Some(Reason::StoreUnavailable));
    assert!(d.store_full, "said to be full, not failed");
}
