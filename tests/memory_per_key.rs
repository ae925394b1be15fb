//! The bytes each tracked key costs in the embedded store, measured with a counting
//! allocator (docs/benchmarks.md, "Memory"). One test in its own binary, so nothing else allocates.
//!
//! The store is driven directly with pre-hashed keys, so the figure is the store's own; the
//! engine's bounded cache of user hashes is measured apart.

use ratewarden::clock::ManualClock;
use ratewarden::engine::SubjectHasher;
use ratewarden::features::LimitOutcome;
use ratewarden::limit::{Algorithm, Rate};
use ratewarden::limit::{KeyHash, LimitId};
use ratewarden::store::{Check, MemoryStore, Request};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
/// The most ever live at once since the last [`reset_peak`].
static PEAK_BYTES: AtomicIsize = AtomicIsize::new(0);

fn reset_peak() -> isize {
    let live = LIVE_BYTES.load(Ordering::Relaxed);
    PEAK_BYTES.store(live, Ordering::Relaxed);
    live
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let size = layout.size() as isize;
        let live = LIVE_BYTES.fetch_add(size, Ordering::Relaxed) + size;
        PEAK_BYTES.fetch_max(live, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One test, so no other test's allocations land in the count.
#[test]
fn memory_costs() {
    bytes_per_tracked_key();
    user_hash_cache_is_bounded();
    feature_memory_per_subject();
    a_million_subjects_with_two_limits();
}

/// Issue 14's flood: 1,000,000 new subjects, one request each through two limits, then one
/// control cycle: what stays (store keys, recorder, window, published features) and the peak
/// while the cycle runs (its pending and totals are transient).
fn a_million_subjects_with_two_limits() {
    use ratewarden::engine::{ScaleFactors, Thresholds};
    use ratewarden::features::{ActivityWindow, Recorder, SubjectFeatures};
    const SUBJECTS: u64 = 1_000_000;
    let now = 1_700_000_000_000_000u64;
    let before = reset_peak();
    let store = MemoryStore::new(Arc::new(ManualClock::starting_at(now)), u64::MAX);
    let recorder = Recorder::new(SUBJECTS as usize);
    let mut window = ActivityWindow::new(std::time::Duration::from_secs(600));
    let scale = ScaleFactors::new(Thresholds {
        anomaly_threshold: 0.9,
        anomaly_factor: 0.5,
        anomaly_shadow: false,
        load_high: 0.8,
        load_low: 0.2,
        load_high_factor: 0.5,
        load_low_factor: 1.0,
        load_factor_override: None,
    });
    let rate = Rate {
        algorithm: Algorithm::Gcra,
        window: 3_600_000_000,
        requests: 1_000,
        burst: 1_000,
    };
    for i in 0..SUBJECTS {
        let subject =
            KeyHash(u128::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835));
        let check = |name, hash| Check {
            subject,
            limit: LimitId { name, hash },
            rate,
            cost: 1,
            enforce: true,
            probes: [None, None],
            written: None,
            slowest: rate.requests,
        };
        let request = Request {
            checks: [check("t:t:tier", 7), check("e:default", 8)]
                .into_iter()
                .collect(),
            dry_run: false,
        };
        assert!(store.apply_now(&request).unwrap().admitted);
        recorder.record_request(
            subject,
            now,
            42,
            Some(i),
            LimitOutcome {
                usage: 0.001,
                ..LimitOutcome::default()
            },
        );
    }
    let after_requests = LIVE_BYTES.load(Ordering::Relaxed);
    let pending = recorder.drain(0);
    window.add_all(now, &pending);
    drop(pending);
    window.expire(now);
    let observed = window
        .totals(now)
        .map(|(subject, activity)| {
            let features = SubjectFeatures {
                features: activity.features(),
                requests: activity.counters.requests,
            };
            (subject, features)
        })
        .collect();
    scale.publish_observed(observed);
    let after_cycle = LIVE_BYTES.load(Ordering::Relaxed);
    let peak = PEAK_BYTES.load(Ordering::Relaxed);
    assert_eq!(store.len() as u64, 2 * SUBJECTS);
    assert_eq!(window.len() as u64, SUBJECTS);
    let per = |bytes: isize| (bytes - before) as f64 / SUBJECTS as f64;
    let store_bytes = {
        let start = reset_peak();
        drop(store);
        start - LIVE_BYTES.load(Ordering::Relaxed)
    };
    let features_bytes = after_cycle - before - store_bytes;
    println!(
        "1,000,000 subjects, two limits: {:.0} bytes each after a control cycle (store {:.0}, \
         features {:.0}); {:.0} with the interval's pending activity, {:.0} at the cycle's peak",
        per(after_cycle),
        store_bytes as f64 / SUBJECTS as f64,
        features_bytes as f64 / SUBJECTS as f64,
        per(after_requests),
        per(peak),
    );
    assert!(
        per(after_cycle) < 600.0,
        "{} bytes per subject",
        per(after_cycle)
    );
    drop((recorder, window, scale));
}

/// What the control loop keeps per active subject: the recorder's last request time and the
/// window's rows (one per bucket: counters and two inline distinct-count sketches).
fn feature_memory_per_subject() {
    use ratewarden::features::{ActivityWindow, Recorder};
    const SUBJECTS: u64 = 200_000;
    let start = 1_700_000_000_000_000u64;
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let recorder = Recorder::new(1_000_000);
    let mut window = ActivityWindow::new(std::time::Duration::from_secs(600));
    // Each subject: 3 paths and 2 addresses over two cycles, 100 s apart (two buckets).
    for cycle in 0..2u64 {
        let now = start + cycle * 100_000_000;
        for s in 0..SUBJECTS {
            for i in 0..3 {
                recorder.record_request(
                    // Spread over all 128 bits, as keyed hashes are (the recorder shards by the top ones).
                    KeyHash(u128::from(s).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)),
                    now + i,
                    s * 3 + i,
                    Some(s + i % 2),
                    LimitOutcome {
                        usage: 0.5,
                        ..LimitOutcome::default()
                    },
                );
            }
        }
        window.add_all(now, &recorder.drain(0));
    }
    let per_subject = (LIVE_BYTES.load(Ordering::Relaxed) - before) as f64 / SUBJECTS as f64;
    eprintln!(
        "features: {per_subject:.0} bytes per active subject (recorder entry + 2 window buckets), {} subjects",
        window.len()
    );
    assert!(per_subject < 400.0, "{per_subject} bytes per subject");
}

fn bytes_per_tracked_key() {
    // Hash tables double as they grow, so the cost per key swings between a just-doubled
    // table and a full one: measure at several sizes and bound the worst.
    const STEP: u64 = 50_000;
    const STEPS: u64 = 8;
    for (algorithm, worst_bound) in [
        (Algorithm::FixedWindow, 160.0),
        (Algorithm::SlidingWindow, 160.0),
        (Algorithm::TokenBucket, 160.0),
        (Algorithm::Gcra, 160.0),
        (Algorithm::SlidingLog, 320.0),
    ] {
        let store = MemoryStore::new(
            Arc::new(ManualClock::starting_at(1_700_000_000_000_000)),
            u64::MAX,
        );
        let rate = Rate {
            algorithm,
            window: 3_600_000_000,
            requests: 10,
            burst: 10,
        };
        let before = LIVE_BYTES.load(Ordering::Relaxed);
        let mut per_key = Vec::new();
        for step in 0..STEPS {
            for i in step * STEP..(step + 1) * STEP {
                let check = Check {
                    subject: KeyHash(
                        u128::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835),
                    ),
                    limit: LimitId {
                        name: "t:t:l",
                        hash: 7,
                    },
                    rate,
                    cost: 1,
                    enforce: true,
                    probes: [None, None],
                    written: None,
                    slowest: rate.requests,
                };
                let request = Request {
                    checks: [check].into_iter().collect(),
                    dry_run: false,
                };
                assert!(store.apply_now(&request).unwrap().admitted);
            }
            let keys = (step + 1) * STEP;
            assert_eq!(store.len() as u64, keys);
            per_key.push((LIVE_BYTES.load(Ordering::Relaxed) - before) as f64 / keys as f64);
        }
        let best = per_key.iter().copied().fold(f64::INFINITY, f64::min);
        let worst = per_key.iter().copied().fold(0.0, f64::max);
        let mean = per_key.iter().sum::<f64>() / per_key.len() as f64;
        println!(
            "{algorithm}: {best:.0} to {worst:.0} bytes per tracked key (mean {mean:.0}) from 50k to 400k keys"
        );
        assert!(worst < worst_bound, "{algorithm}: {worst:.0} bytes per key");
    }
}

fn user_hash_cache_is_bounded() {
    let hasher = SubjectHasher::from_secret("memory");
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    for i in 0..500_000u64 {
        hasher.user(&format!("user-{i}"));
    }
    let grown = (LIVE_BYTES.load(Ordering::Relaxed) - before) as f64;
    println!(
        "user hash cache after 500,000 distinct users: {:.1} MiB",
        grown / 1048576.0
    );
    assert!(grown < 16.0 * 1048576.0, "{grown} bytes");
}
