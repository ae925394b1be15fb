//! Helpers shared by the engine tests: an engine on the embedded store with a manual clock.
#![allow(dead_code)]

pub mod cli;
pub mod daemon;
pub mod flood;
pub mod http;
pub mod logs;
pub mod narrow_model;
pub mod on_error;
pub mod prometheus;
pub mod redis;
pub mod redis_tls;
pub mod rng;

use ratewarden::clock::ManualClock;
use ratewarden::engine::{CheckRequest, Decision, Engine, SubjectHasher};
use ratewarden::policy::Policy;
use ratewarden::store::MemoryStore;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// 2023-11-14T22:13:20Z (20 s into a minute, 13 min 20 s into an hour: epoch-aligned windows
/// do not start here).
pub const START: u64 = 1_700_000_000_000_000;

pub const EXAMPLE_POLICY: &str = include_str!("../../ratewarden.yaml");

pub fn engine_with(yaml: &str, max_keys: u64) -> (Engine<MemoryStore>, ManualClock) {
    let policy = Policy::from_yaml(yaml, Path::new(".")).expect("test policy is valid");
    let clock = ManualClock::starting_at(START);
    let store = MemoryStore::new(Arc::new(clock.clone()), max_keys);
    (
        Engine::new(policy, store, SubjectHasher::from_secret("test secret")),
        clock,
    )
}

pub fn engine(yaml: &str) -> (Engine<MemoryStore>, ManualClock) {
    engine_with(yaml, 1_000_000)
}

pub async fn check(engine: &Engine<MemoryStore>, request: CheckRequest<'_>) -> Decision {
    engine.check(&request).await.expect("request is decidable")
}

pub fn violated(decision: &Decision) -> Vec<&str> {
    decision.violated_names().collect()
}

/// How long until the next edge of the epoch-aligned `window`.
fn until_window_edge(window: Duration) -> Duration {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    window - Duration::from_micros((now.as_micros() % window.as_micros()) as u64)
}

/// Waits when fewer than 10 s are left in the current epoch-aligned `window`, so that a test
/// counting in fixed or sliding windows does not straddle two of them.
pub async fn clear_of_window_edge(window: Duration) {
    let left = until_window_edge(window);
    if left < Duration::from_secs(10) {
        tokio::time::sleep(left + Duration::from_millis(100)).await;
    }
}

/// Blocks past the next edge of the epoch-aligned `window` when it is less than `margin` away,
/// for a test that must run wholly within one window.
pub fn sleep_past_window_edge_within(window: Duration, margin: Duration) {
    let left = until_window_edge(window);
    if left < margin {
        std::thread::sleep(left + Duration::from_millis(100));
    }
}

/// Stops a child process by PID: SIGTERM, so it shuts down cleanly, then SIGKILL if it is still
/// running after `grace`.
pub fn terminate(child: &mut Child, grace: Duration) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}
