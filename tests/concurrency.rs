//! 8 threads x 10,000 checks on one subject admit exactly the limit, for every algorithm.

mod common;

use common::engine;
use ratewarden::engine::CheckRequest;
use ratewarden::limit::Algorithm;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const THREADS: usize = 8;
const CHECKS_PER_THREAD: usize = 10_000;
const LIMIT: u64 = 1_000;

fn policy(algorithm: Algorithm) -> String {
    format!(
        "default_tier: t\ntiers:\n  t:\n    limits:\n      - {{ name: l, algorithm: {algorithm}, requests: {LIMIT}, window: 1h }}\n"
    )
}

#[test]
fn eight_threads_admit_exactly_the_limit() {
    for algorithm in Algorithm::ALL {
        // The manual clock stands still, so nothing refills while the threads race.
        let (engine, _clock) = engine(&policy(algorithm));
        let engine = Arc::new(engine);
        let admitted = Arc::new(AtomicU64::new(0));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(THREADS)
            .build()
            .unwrap();
        runtime.block_on(async {
            let tasks: Vec<_> = (0..THREADS)
                .map(|_| {
                    let (engine, admitted) = (engine.clone(), admitted.clone());
                    tokio::spawn(async move {
                        for _ in 0..CHECKS_PER_THREAD {
                            let d = engine
                                .check(&CheckRequest::new("one subject", "/x"))
                                .await
                                .unwrap();
                            if d.allowed {
                                admitted.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
        });
        assert_eq!(admitted.load(Ordering::Relaxed), LIMIT, "{algorithm}");
    }
}
