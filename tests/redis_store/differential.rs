//! The memory store and the Redis store (its Lua script) in lockstep on random requests: every
//! [`Applied`] must be identical, and equal to a reference built from `ratewarden::algorithm`
//! directly (which says which side is wrong when they differ).
//!
//! Requests have 1 to 4 checks over a few subjects and limit names, all algorithms, random
//! costs and scales (the effective requests and burst), probes, the limit as written, shadow checks, dry runs and
//! batches; time moves by 0, by microseconds, by seconds, by up to a window, and onto window
//! edges (one before, on, one after); now and then a limit name changes algorithm or window.
//!
//! The Lua computes in doubles: every value is kept below 2^51 here (limit × window, debt,
//! counts × window), as the script's header promises exactness only there.
//!
//! Redis TTLs run in real time while both stores run on a manual clock: after each step the
//! TTL of every key the step wrote is checked against when the reference says its state decays,
//! and the key then expires on the manual clock instead ([`ManualExpiry`]).
//!
//! Replay a sequence with `RATEWARDEN_DIFF_SEED=<seed>` (`RATEWARDEN_DIFF_TRACE=1` prints every
//! step); run more with `RATEWARDEN_DIFF_SEQUENCES` and `RATEWARDEN_DIFF_STEPS`.

use crate::common::redis::RedisServer;
use crate::reference::{ManualExpiry, Reference};
use crate::support::*;
use ratewarden::clock::Clock;
use ratewarden::limit::KeyHash;
use ratewarden::limit::{Algorithm, Rate};
use ratewarden::store::{Applied, Request, Store, StoreError};
use redis::aio::MultiplexedConnection;
use std::time::Instant;

const NAMES: [&str; 5] = ["n0", "n1", "n2", "n3", "n4"];
/// Scales as the engine applies them (load and anomaly factors); 0 denies all.
const SCALES: [f64; 20] = [
    1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 1.5, 1.5, 1.5, 0.3, 0.7, 0.1,
    0.0,
];
const WINDOWS: [u64; 10] = [
    SECOND,
    2 * SECOND,
    1_000_003,
    7_777_777,
    10 * SECOND,
    MINUTE,
    90 * SECOND,
    HOUR,
    DAY,
    3 * DAY / 7,
];
/// Products stay below this (a quarter of 2^53).
const BOUND: u128 = 1 << 51;

/// A limit as the policy states it, before scaling.
#[derive(Debug, Clone, Copy)]
struct Base {
    algorithm: Algorithm,
    window: u64,
    requests: u64,
    burst: u64,
}

impl Base {
    fn random(rng: &mut Rng, steps: usize) -> Base {
        let algorithm = rng.pick(&Algorithm::ALL);
        let window = rng.pick(&WINDOWS);
        let fits = |n: u64| u128::from(n) * u128::from(window) * 2 <= BOUND / steps as u128;
        let mut requests = rng.pick(&[1, 2, 3, 5, 7, 10, 20, 50, 100, 1000, 100_000]);
        while !fits(requests) && requests > 1 {
            requests /= 10;
        }
        let mut burst = if algorithm.reports_burst() {
            rng.pick(&[
                requests,
                requests,
                1,
                2,
                5,
                requests * 2,
                requests.div_ceil(2),
            ])
        } else {
            requests
        };
        while !fits(burst) && burst > 1 {
            burst /= 2;
        }
        Base {
            algorithm,
            window,
            requests,
            burst,
        }
    }

    fn rate(&self, scale: f64) -> Rate {
        let scaled = |n: u64| {
            if scale == 1.0 {
                n
            } else {
                (n as f64 * scale).floor() as u64
            }
        };
        rate(
            self.algorithm,
            self.window,
            scaled(self.requests),
            scaled(self.burst),
        )
    }

    /// The largest cost per request that keeps every product under the bound for the run.
    fn max_cost(&self, steps: usize) -> u64 {
        let per_step = BOUND / (steps as u128 * u128::from(self.window));
        u64::try_from(per_step).unwrap_or(u64::MAX).max(1)
    }
}

/// One sequence's generator: the limits under their names, the subjects, the time.
struct Gen {
    rng: Rng,
    bases: Vec<Base>,
    subjects: Vec<KeyHash>,
    steps: usize,
}

impl Gen {
    fn new(seed: u64, steps: usize) -> Gen {
        let mut rng = Rng::new(seed);
        let bases = NAMES
            .iter()
            .map(|_| Base::random(&mut rng, steps))
            .collect();
        let subjects = (0..3)
            .map(|_| KeyHash(u128::from(rng.next()) << 64 | u128::from(rng.next())))
            .collect();
        Gen {
            rng,
            bases,
            subjects,
            steps,
        }
    }

    fn next_time(&mut self, now: u64) -> u64 {
        let rng = &mut self.rng;
        let window = self.bases[rng.below(self.bases.len())].window;
        match rng.below(20) {
            0..=4 => now,
            5..=6 => now + rng.range(1, 1000) as u64,
            7..=10 => now + rng.range(1, SECOND as usize) as u64,
            11..=13 => now + rng.range(1, window as usize) as u64,
            14..=17 => {
                // Onto an edge of one of the windows: one before, on it, one after.
                let edge = now - now % window + window;
                edge - 1 + rng.below(3) as u64
            }
            _ => now + rng.range(1, 10 * SECOND as usize) as u64,
        }
    }

    fn maybe_change_a_limit(&mut self) {
        if self.rng.one_in(30) {
            let i = self.rng.below(self.bases.len());
            self.bases[i] = Base::random(&mut self.rng, self.steps);
        }
    }

    /// A request over keys that `usable` accepts (`None` when it accepts none).
    fn request(&mut self, usable: impl Fn(KeyHash, &str) -> bool) -> Option<Request<'static>> {
        let rng = &mut self.rng;
        let mut candidates: Vec<(usize, usize)> = (0..self.subjects.len())
            .flat_map(|s| (0..NAMES.len()).map(move |l| (s, l)))
            .filter(|&(s, l)| usable(self.subjects[s], NAMES[l]))
            .collect();
        let n = rng.range(1, 4).min(candidates.len());
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        while pairs.len() < n {
            pairs.push(candidates.swap_remove(rng.below(candidates.len())));
        }
        if pairs.is_empty() {
            return None;
        }
        let rates: Vec<(usize, usize, Rate)> = pairs
            .iter()
            .map(|&(s, l)| (s, l, self.bases[l].rate(rng.pick(&SCALES))))
            .collect();
        let largest = rates
            .iter()
            .map(|(_, _, r)| r.capacity())
            .max()
            .unwrap_or(1);
        let mut cost = match rng.below(20) {
            0..=13 => 1,
            14..=16 => rng.range(1, 5) as u64,
            // Around one of the limits: just under, on, just over.
            17..=18 => {
                (rates[rng.below(rates.len())].2.capacity() + rng.below(3) as u64).max(2) - 1
            }
            _ => rng.range(1, 3 * largest.min(1 << 20) as usize + 1) as u64,
        };
        let cap = pairs
            .iter()
            .map(|&(_, l)| self.bases[l].max_cost(self.steps))
            .min()
            .unwrap_or(1);
        cost = cost.clamp(1, cap);
        let checks = rates
            .into_iter()
            .map(|(s, l, rate)| {
                let mut probe = || {
                    rng.one_in(4)
                        .then(|| self.bases[l].rate(rng.pick(&SCALES)))
                        .filter(|r| *r != rate)
                };
                let probes = [probe(), probe()];
                let written = Some(self.bases[l].rate(1.0)).filter(|r| *r != rate);
                let mut check = check(self.subjects[s], NAMES[l], rate, cost, !rng.one_in(5));
                check.probes = probes;
                check.written = written;
                check
            })
            .collect();
        Some(Request {
            checks,
            dry_run: rng.one_in(10),
        })
    }
}

fn env(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Runs the sequences; a failure names its seed.
pub async fn run(server: &RedisServer) {
    let steps = env("RATEWARDEN_DIFF_STEPS").unwrap_or(200) as usize;
    let seeds: Vec<u64> = match env("RATEWARDEN_DIFF_SEED") {
        Some(seed) => vec![seed],
        None => (1..=env("RATEWARDEN_DIFF_SEQUENCES").unwrap_or(30)).collect(),
    };
    let mut conn = connection(server).await;
    let mut totals = Totals::default();
    let seeds_len = seeds.len();
    for seed in seeds {
        sequence(server, &mut conn, seed, steps, &mut totals).await;
    }
    println!("differential: {totals:?}");
    if seeds_len == 30 && steps == 200 {
        // The default sequences must reach the interesting cases, not only pass.
        assert!(totals.admitted > 1000 && totals.denied > 500, "{totals:?}");
        assert!(
            totals.never > 50 && totals.shadow_passed > 20 && totals.batches > 100,
            "{totals:?}"
        );
        assert!(totals.waits.iter().all(|n| *n > 50), "{totals:?}");
    }
}

#[derive(Debug, Default)]
struct Totals {
    requests: usize,
    admitted: usize,
    denied: usize,
    /// Checks whose cost can never pass (retry_after None).
    never: usize,
    /// Denials that name a wait, per algorithm (`Algorithm::ALL` order).
    waits: [usize; 5],
    /// Requests admitted although a shadow check said no.
    shadow_passed: usize,
    batches: usize,
    ttls_checked: usize,
    /// Keys that expired in real time before their TTL could be checked (then left alone).
    lost_to_real_time: usize,
}

async fn sequence(
    server: &RedisServer,
    conn: &mut MultiplexedConnection,
    seed: u64,
    steps: usize,
    totals: &mut Totals,
) {
    let mut generator = Gen::new(seed, steps);
    let prefix = format!("diff{seed}");
    let pair = Pair::new(
        server,
        &prefix,
        T0 + generator.rng.below(2 * DAY as usize) as u64,
    );
    let mut reference = Reference::default();
    let mut expiry = ManualExpiry::default();
    let replay = format!(
        "seed {seed} (replay: RATEWARDEN_DIFF_SEED={seed} cargo test --profile ci --test redis_store differential)"
    );
    let trace = std::env::var_os("RATEWARDEN_DIFF_TRACE").is_some();
    let mut now = pair.clock.now();
    for step in 0..steps {
        now = generator.next_time(now);
        pair.clock.set(now);
        expiry.expire(conn, now).await;
        generator.maybe_change_a_limit();
        let batch = generator.rng.one_in(8);
        let count = if batch { generator.rng.range(2, 3) } else { 1 };
        let usable = |subject, name: &str| !expiry.is_lost(&key(&prefix, subject, name));
        let requests: Vec<Request<'static>> = (0..count)
            .filter_map(|_| generator.request(usable))
            .collect();
        if requests.is_empty() {
            continue;
        }
        let count = requests.len();
        let started = Instant::now();
        let fail = |e: StoreError| -> Applied { panic!("{replay}: step {step}: {e}") };
        let (memory, redis): (Vec<Applied>, Vec<Applied>) = if batch {
            totals.batches += 1;
            let m = pair.memory.apply_batch(&requests).await;
            let r = pair.redis.apply_batch(&requests).await;
            (
                m.into_iter().map(|a| a.unwrap_or_else(fail)).collect(),
                r.into_iter().map(|a| a.unwrap_or_else(fail)).collect(),
            )
        } else {
            let m = pair.memory.apply(&requests[0]).await;
            let r = pair.redis.apply(&requests[0]).await;
            (vec![m.unwrap_or_else(fail)], vec![r.unwrap_or_else(fail)])
        };
        let mut written = Vec::new();
        for (i, request) in requests.iter().enumerate() {
            let (expected, wrote) = reference.apply(request, now);
            if trace {
                print_step(step, now, request, &redis[i]);
            }
            if memory[i] != expected || redis[i] != expected {
                let side = match (memory[i] == expected, redis[i] == expected) {
                    (true, false) => "Redis (the Lua) is wrong",
                    (false, true) => "the memory store is wrong",
                    _ => "both differ from the reference",
                };
                println!("reference:");
                print_step(step, now, request, &expected);
                println!("memory:");
                print_step(step, now, request, &memory[i]);
                println!("redis:");
                print_step(step, now, request, &redis[i]);
                panic!(
                    "{replay}: step {step} (request {i} of {count}), now {now}: {side} (details above)"
                );
            }
            totals.requests += 1;
            if expected.admitted {
                totals.admitted += 1;
            } else {
                totals.denied += 1;
            }
            totals.never += expected
                .checks
                .iter()
                .filter(|c| c.outcome.retry_after.is_none())
                .count();
            for (c, r) in request.checks.iter().zip(&expected.checks) {
                if r.outcome.retry_after.is_some_and(|t| t > 0) {
                    totals.waits[Algorithm::ALL
                        .iter()
                        .position(|a| *a == c.rate.algorithm)
                        .unwrap()] += 1;
                }
            }
            if expected.admitted && expected.checks.iter().any(|c| !c.outcome.allowed) {
                totals.shadow_passed += 1;
            }
            written.extend(wrote);
        }
        let context = format!("{replay}: step {step}");
        expiry
            .written(conn, &prefix, now, &written, started, &context)
            .await;
    }
    totals.ttls_checked += expiry.checked;
    totals.lost_to_real_time += expiry.lost_keys;
}

/// One line per check, for `RATEWARDEN_DIFF_TRACE=1`.
fn print_step(step: usize, now: u64, request: &Request<'_>, applied: &Applied) {
    println!(
        "step {step} now {now} dry {} admitted {}",
        request.dry_run, applied.admitted
    );
    for (c, r) in request.checks.iter().zip(&applied.checks) {
        let o = r.outcome;
        println!(
            "  {:08x}:{} {:?} w{} r{} b{} cost {} enforce {} probes {:?} -> {} rem {} reset {} retry {:?} probes {:?} written {:?}",
            c.subject.0 as u32,
            c.limit.name,
            c.rate.algorithm,
            c.rate.window,
            c.rate.requests,
            c.rate.burst,
            c.cost,
            c.enforce,
            c.probes.map(|p| p.map(|p| (p.requests, p.burst))),
            o.allowed,
            o.remaining,
            o.reset_after,
            o.retry_after,
            r.probes,
            r.written
        );
    }
}
