//! One million distinct subjects through HTTP within a minute, against the real binary on the
//! embedded store: resident memory stays under the bound docs/benchmarks.md states, `store.max_keys`
//! refuses the subjects past the cap with a clear decision, and the daemon keeps serving.
//!
//! A client on this 2-core machine cannot send a million single requests a minute next to the
//! daemon, so the subjects come in batches (`/v1/check/batch`, 1000 distinct subjects each).

mod common;

use common::daemon::Daemon;
use common::flood;
use serde::Deserialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const SUBJECTS: u64 = 1_000_000;
/// The store's cap: under a third of the flood, so most of it is refused.
const MAX_KEYS: u64 = 300_000;
/// The documented bound (docs/benchmarks.md) on resident memory (peak, `VmHWM`) for this flood.
const RSS_BOUND_MIB: u64 = 1536;

const POLICY: &str = "\
store:
  url: memory://
  max_keys: 300000
default_tier: t
tiers:
  t:
    limits:
      - { name: hourly, algorithm: fixed_window, requests: 10, window: 1h }
";

#[derive(Deserialize)]
struct Batch {
    results: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    allowed: bool,
    reason: Option<String>,
    degraded: bool,
}

/// `VmRSS`, `VmHWM`... of a process, in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

#[test]
fn a_million_new_subjects_stay_under_the_memory_bound_and_past_max_keys_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    // Keys live until the hour's edge (the window is epoch-aligned): a flood across it would
    // find the full shards swept and admit more. It takes under a minute; start clear of it.
    common::sleep_past_window_edge_within(Duration::from_secs(3600), Duration::from_secs(120));
    let daemon = Daemon::start(&policy, &[]);
    let known = r#"{"user":"known","endpoint":"/x"}"#;
    assert_eq!(daemon.post_json("/v1/check", known).0, 200);
    let rss_before = status_kib(daemon.pid(), "VmRSS");

    let allowed = AtomicU64::new(0);
    let refused = AtomicU64::new(0);
    let started = Instant::now();
    flood::send(daemon.addr, "flood", SUBJECTS, |reply| {
        let batch: Batch = serde_json::from_slice(&reply.body).expect("batch JSON");
        assert_eq!(batch.results.len() as u64, flood::BATCH);
        for item in batch.results {
            if item.allowed {
                allowed.fetch_add(1, Ordering::Relaxed);
            } else {
                // The one refusal max_keys makes: clear, and marked degraded.
                assert_eq!(item.reason.as_deref(), Some("store_unavailable"));
                assert!(item.degraded);
                refused.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let elapsed = started.elapsed();
    let (allowed, refused) = (allowed.into_inner(), refused.into_inner());
    let rss_after = status_kib(daemon.pid(), "VmRSS");
    let peak = status_kib(daemon.pid(), "VmHWM");
    println!(
        "{SUBJECTS} subjects in {elapsed:.1?}: {allowed} allowed, {refused} refused (max_keys {MAX_KEYS}); \
         RSS {} MiB before, {} MiB after, peak {} MiB (bound {RSS_BOUND_MIB} MiB)",
        rss_before / 1024,
        rss_after / 1024,
        peak / 1024
    );
    assert!(
        elapsed < Duration::from_secs(60),
        "the flood took {elapsed:?}"
    );
    assert_eq!(allowed + refused, SUBJECTS);
    // The cap is split over 256 shards, rounded up, and "known" holds one key.
    assert!(
        (MAX_KEYS - 256..=MAX_KEYS + 256).contains(&allowed),
        "{allowed} subjects admitted with max_keys {MAX_KEYS}"
    );
    assert!(peak / 1024 < RSS_BOUND_MIB, "peak RSS {} MiB", peak / 1024);

    // Healthy, a tracked subject served as usual, a new one refused with a clear problem.
    assert_eq!(daemon.get("/healthz").0, 200);
    let (status, _, body) = daemon.post_json("/v1/check", known);
    assert_eq!(status, 200, "{body}");
    let (status, headers, body) =
        daemon.post_json("/v1/check", r#"{"user":"after-the-flood","endpoint":"/x"}"#);
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        common::daemon::header(&headers, "content-type"),
        Some("application/problem+json")
    );
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["reason"], "store_unavailable", "{body}");
    assert_eq!(body["degraded"], true, "{body}");
}
