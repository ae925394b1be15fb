//! The full in-process decision (policy resolve, keyed hash, algorithm, embedded store) next
//! to the `governor` crate's bare keyed GCRA check on the same keys, in the same run.
//!
//! `cargo bench --bench decision`; README, "Performance", quotes the figures.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use governor::{Quota, RateLimiter};
use ratewarden::clock::SystemClock;
use ratewarden::engine::{CheckRequest, Engine, SubjectHasher};
use ratewarden::policy::Policy;
use ratewarden::store::MemoryStore;
use std::future::Future;
use std::hint::black_box;
use std::num::NonZeroU32;
use std::path::Path;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// One GCRA limit, as governor has: the closest like-for-like comparison.
const POLICY: &str = "
default_tier: t
tiers:
  t:
    limits:
      - { name: l, algorithm: gcra, requests: 1000000000, window: 1s }
";

/// The embedded store's futures are ready at once: poll once, no runtime in the loop.
fn now<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("the embedded store never waits"),
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("decision");
    group.throughput(Throughput::Elements(1));
    for subjects in [1usize, 100_000] {
        let users: Vec<String> = (0..subjects).map(|i| format!("user-{i}")).collect();

        let policy = Policy::from_yaml(POLICY, Path::new(".")).expect("bench policy");
        let store = MemoryStore::new(Arc::new(SystemClock::new()), 10_000_000);
        let engine = Engine::new(policy, store, SubjectHasher::from_secret("bench"));
        let mut i = 0;
        group.bench_function(
            BenchmarkId::new("ratewarden_full_decision", subjects),
            |b| {
                b.iter(|| {
                    i = (i + 1) % subjects;
                    let decision = now(engine.check(&CheckRequest::new(&users[i], "/api/x")))
                        .expect("decidable");
                    black_box(decision.allowed)
                })
            },
        );

        if subjects == 1 && std::env::var_os("RATEWARDEN_BENCH_PARTS").is_some() {
            let hasher = SubjectHasher::from_secret("parts");
            group.bench_function("part_keyed_hash_cached", |b| {
                b.iter(|| black_box(hasher.user(black_box("user-0"))))
            });
            // Four times the hasher's 65,536 cached ids, cycled: nearly every call misses.
            let many: Vec<String> = (0..262_144).map(|i| format!("uncached-{i}")).collect();
            let mut k = 0;
            group.bench_function("part_keyed_hash_uncached", |b| {
                b.iter(|| {
                    k = (k + 1) % many.len();
                    black_box(hasher.user(&many[k]))
                })
            });
            group.bench_function("part_plan", |b| {
                b.iter(|| {
                    black_box(
                        engine
                            .plan_check(&CheckRequest::new(&users[0], "/api/x"), None)
                            .is_ok(),
                    )
                })
            });
            let plan = engine
                .plan_check(&CheckRequest::new(&users[0], "/api/x"), None)
                .expect("plan");
            group.bench_function("part_store_request", |b| {
                b.iter(|| black_box(plan.store_request(false).checks.len()))
            });
            let request = plan.store_request(false);
            group.bench_function("part_store_apply", |b| {
                b.iter(|| black_box(engine.store().apply_now(&request).is_ok()))
            });
            let clock = SystemClock::new();
            group.bench_function("part_clock", |b| {
                b.iter(|| black_box(ratewarden::clock::Clock::now(&clock)))
            });
        }

        let quota = Quota::per_second(NonZeroU32::new(1_000_000_000).expect("non-zero"));
        let governor = RateLimiter::keyed(quota);
        let mut j = 0;
        group.bench_function(BenchmarkId::new("governor_keyed_gcra", subjects), |b| {
            b.iter(|| {
                j = (j + 1) % subjects;
                black_box(governor.check_key(&users[j]).is_ok())
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_secs(1)).measurement_time(std::time::Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
