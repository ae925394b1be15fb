//! The five algorithms against hand-computed outcomes and against independent reference models
//! (`algorithm_models`), with the spec's invariants checked on every admitted history.

mod algorithm_models;

use algorithm_models::{Model, expected, model_for};
use proptest::prelude::*;
use ratewarden::algorithm::{Outcome, State, consume, peek};
use ratewarden::limit::{Algorithm, Rate};

const SECOND: u64 = 1_000_000;
const MINUTE: u64 = 60 * SECOND;
/// A start aligned to the minute (and so to every window below), far from time 0.
const T0: u64 = 28_000_000 * MINUTE;

fn rate(algorithm: Algorithm, window: u64, requests: u64, burst: u64) -> Rate {
    Rate {
        algorithm,
        window,
        requests,
        burst,
    }
}

/// The same rate with a smaller limit, as the engine's scaling produces it: the bucket
/// algorithms keep their refill speed and lose capacity.
fn scaled(rate: &Rate, limit: u64) -> Rate {
    if rate.algorithm.reports_burst() {
        Rate {
            burst: limit,
            ..*rate
        }
    } else {
        Rate {
            requests: limit,
            ..*rate
        }
    }
}

fn allowed(limit: u64, remaining: u64, reset_after: u64) -> Outcome {
    Outcome {
        allowed: true,
        limit,
        remaining,
        reset_after,
        retry_after: Some(0),
    }
}

fn denied(limit: u64, remaining: u64, reset_after: u64, retry_after: Option<u64>) -> Outcome {
    Outcome {
        allowed: false,
        limit,
        remaining,
        reset_after,
        retry_after,
    }
}

struct Limiter {
    rate: Rate,
    state: Option<State>,
}

impl Limiter {
    fn new(algorithm: Algorithm, window: u64, requests: u64, burst: u64) -> Self {
        Self {
            rate: rate(algorithm, window, requests, burst),
            state: None,
        }
    }

    fn peek(&self, now: u64, cost: u64) -> Outcome {
        peek(self.state.as_ref(), now, &self.rate, cost)
    }

    /// Checks and, when allowed, records: what a store does for a single limit.
    fn hit(&mut self, now: u64, cost: u64) -> Outcome {
        let outcome = self.peek(now, cost);
        if outcome.allowed {
            consume(&mut self.state, now, &self.rate, cost);
        }
        outcome
    }
}

#[test]
fn sliding_log_counts_exact_cost_in_last_window() {
    let mut log = Limiter::new(Algorithm::SlidingLog, SECOND, 3, 0);
    assert_eq!(log.hit(T0, 2), allowed(3, 1, SECOND));
    assert_eq!(log.hit(T0 + 100, 1), allowed(3, 0, SECOND));
    // Room comes back when the cost-2 entry leaves; full reset waits for the newest entry.
    assert_eq!(
        log.hit(T0 + 200, 1),
        denied(3, 0, SECOND - 100, Some(SECOND - 200))
    );
    assert_eq!(log.hit(T0 + SECOND - 1, 1), denied(3, 0, 101, Some(1)));
    assert_eq!(log.hit(T0 + SECOND, 2), allowed(3, 0, SECOND));
    assert_eq!(log.peek(T0 + SECOND, 4), denied(3, 0, SECOND, None));
}

#[test]
fn sliding_log_counts_entries_near_time_zero() {
    // At now < window, `now - window` is negative: every entry so far is inside the window.
    let mut log = Limiter::new(Algorithm::SlidingLog, 10, 1, 0);
    assert_eq!(log.hit(0, 1), allowed(1, 0, 10));
    assert_eq!(log.hit(5, 1), denied(1, 0, 5, Some(5)));
    assert_eq!(log.hit(10, 1), allowed(1, 0, 10));
}

#[test]
fn sliding_log_refuses_double_burst_across_window_edge_that_fixed_window_lets_through() {
    let edge = T0 + MINUTE;
    let attempts: Vec<u64> = (edge - 10..edge).chain(edge..edge + 10).collect();
    let admitted = |limiter: &mut Limiter| {
        attempts
            .iter()
            .filter(|&&t| limiter.hit(t, 1).allowed)
            .count()
    };

    let mut fixed = Limiter::new(Algorithm::FixedWindow, MINUTE, 10, 0);
    assert_eq!(admitted(&mut fixed), 20, "fixed_window resets at the edge");

    let mut log = Limiter::new(Algorithm::SlidingLog, MINUTE, 10, 0);
    assert_eq!(admitted(&mut log), 10);
    assert_eq!(log.peek(edge, 1).retry_after, Some(MINUTE - 10));
}

#[test]
fn sliding_window_weights_previous_window_like_cloudflare() {
    let mut sw = Limiter::new(Algorithm::SlidingWindow, MINUTE, 50, 0);
    consume(&mut sw.state, T0 + 10 * SECOND, &sw.rate, 42);
    consume(&mut sw.state, T0 + MINUTE, &sw.rate, 18);
    // 15 s in: 42 × 45/60 + 18 = 49.5, so one more is 50.5. It fits once the previous
    // window's weight has dropped by 0.5: 42 × (45 s − t)/60 s <= 31.5, t = 714 285.7 µs.
    let now = T0 + MINUTE + 15 * SECOND;
    assert_eq!(sw.peek(now, 1), denied(50, 0, 105 * SECOND, Some(714_286)));
    assert!(!sw.peek(now + 714_285, 1).allowed);
    // 30 s in: 42 × 30/60 + 18 = 39.
    assert_eq!(
        sw.peek(T0 + MINUTE + 30 * SECOND, 3),
        allowed(50, 8, 90 * SECOND)
    );
}

#[test]
fn sliding_window_full_current_window_waits_into_the_next() {
    let mut sw = Limiter::new(Algorithm::SlidingWindow, MINUTE, 10, 0);
    assert_eq!(sw.hit(T0, 10), allowed(10, 0, 2 * MINUTE));
    // Next window, u in: 10 × (60 s − u)/60 s + 1 <= 10 from u = 6 s.
    assert_eq!(
        sw.peek(T0 + 1, 1),
        denied(10, 0, 2 * MINUTE - 1, Some(MINUTE - 1 + 6 * SECOND))
    );
    assert_eq!(
        sw.peek(T0 + MINUTE, 1),
        denied(10, 0, MINUTE, Some(6 * SECOND))
    );
}

#[test]
fn fixed_window_counts_per_epoch_aligned_window() {
    let mut fw = Limiter::new(Algorithm::FixedWindow, 10 * SECOND, 3, 0);
    assert_eq!(fw.hit(T0 + 4 * SECOND, 2), allowed(3, 1, 6 * SECOND));
    assert_eq!(fw.hit(T0 + 5 * SECOND, 1), allowed(3, 0, 5 * SECOND));
    assert_eq!(
        fw.hit(T0 + 9 * SECOND, 1),
        denied(3, 0, SECOND, Some(SECOND))
    );
    assert_eq!(fw.hit(T0 + 10 * SECOND, 3), allowed(3, 0, 10 * SECOND));
    assert_eq!(
        fw.peek(T0 + 10 * SECOND, 4),
        denied(3, 0, 10 * SECOND, None)
    );
}

#[test]
fn token_bucket_starts_full_and_refills_one_token_per_interval() {
    // 10 per minute: one token every 6 s, 5 at most.
    let mut tb = Limiter::new(Algorithm::TokenBucket, MINUTE, 10, 5);
    for k in 1..=5 {
        assert_eq!(tb.hit(T0, 1), allowed(5, 5 - k, k * 6 * SECOND));
    }
    assert_eq!(tb.hit(T0, 1), denied(5, 0, 30 * SECOND, Some(6 * SECOND)));
    assert!(!tb.peek(T0 + 6 * SECOND - 1, 1).allowed);
    // At 9 s one token is back and the next is half way: cost 2 waits for the 12 s token.
    assert_eq!(
        tb.hit(T0 + 9 * SECOND, 2),
        denied(5, 1, 21 * SECOND, Some(3 * SECOND))
    );
    assert_eq!(tb.hit(T0 + 12 * SECOND, 2), allowed(5, 0, 30 * SECOND));
    assert_eq!(
        tb.peek(T0 + 12 * SECOND, 6),
        denied(5, 0, 30 * SECOND, None)
    );
}

#[test]
fn token_bucket_keeps_partial_progress_toward_next_token() {
    let mut tb = Limiter::new(Algorithm::TokenBucket, 1000, 4, 4);
    assert_eq!(tb.hit(T0, 4), allowed(4, 0, 1000));
    assert_eq!(tb.peek(T0 + 249, 1), denied(4, 0, 751, Some(1)));
    // Taking a token at 300 must not restart the clock: the next token is still due at 500.
    assert_eq!(tb.hit(T0 + 300, 1), allowed(4, 0, 950));
    assert_eq!(tb.peek(T0 + 499, 1), denied(4, 0, 751, Some(1)));
    assert_eq!(tb.peek(T0 + 500, 1), allowed(4, 0, 1000));
    assert_eq!(tb.peek(T0 + 1250, 1), allowed(4, 3, 250));
}

#[test]
fn gcra_passes_burst_at_once_then_one_per_emission_interval() {
    // 10 per minute: T = 6 s; burst 5.
    let mut gcra = Limiter::new(Algorithm::Gcra, MINUTE, 10, 5);
    for k in 1..=5 {
        assert_eq!(gcra.hit(T0, 1), allowed(5, 5 - k, k * 6 * SECOND));
    }
    assert_eq!(gcra.hit(T0, 1), denied(5, 0, 30 * SECOND, Some(6 * SECOND)));
    assert!(!gcra.peek(T0 + 6 * SECOND - 1, 1).allowed);
    assert_eq!(gcra.hit(T0 + 6 * SECOND, 1), allowed(5, 0, 30 * SECOND));
    assert_eq!(
        gcra.hit(T0 + 12 * SECOND, 2),
        denied(5, 1, 24 * SECOND, Some(6 * SECOND))
    );
    assert_eq!(
        gcra.peek(T0 + 12 * SECOND, 6),
        denied(5, 1, 24 * SECOND, None)
    );
}

#[test]
fn buckets_under_constant_pressure_admit_burst_then_exactly_one_per_interval() {
    for algorithm in [Algorithm::Gcra, Algorithm::TokenBucket] {
        // T = 100 µs, burst 3, one attempt every microsecond.
        let mut bucket = Limiter::new(algorithm, 1000, 10, 3);
        let admitted: Vec<u64> = (0..1000)
            .filter(|&dt| bucket.hit(T0 + dt, 1).allowed)
            .collect();
        let expected: Vec<u64> = [0, 1, 2]
            .into_iter()
            .chain((1..10).map(|k| k * 100))
            .collect();
        assert_eq!(admitted, expected, "{algorithm}");
    }
}

#[test]
fn emission_interval_rounds_up_so_buckets_are_never_faster_than_policy() {
    for algorithm in [Algorithm::Gcra, Algorithm::TokenBucket] {
        // 3 per second: 333 334 µs between tokens, not 333 333.
        let mut bucket = Limiter::new(algorithm, SECOND, 3, 1);
        assert_eq!(bucket.hit(T0, 1), allowed(1, 0, 333_334), "{algorithm}");
        assert_eq!(
            bucket.hit(T0 + 333_333, 1),
            denied(1, 0, 1, Some(1)),
            "{algorithm}"
        );
        assert!(bucket.hit(T0 + 333_334, 1).allowed, "{algorithm}");
    }
}

#[test]
fn zero_limits_deny_everything_with_no_retry() {
    for algorithm in Algorithm::ALL {
        let zero = rate(algorithm, MINUTE, 0, 0);
        assert_eq!(
            peek(None, T0, &zero, 1),
            denied(0, 0, 0, None),
            "{algorithm}"
        );
    }
    for algorithm in [Algorithm::Gcra, Algorithm::TokenBucket] {
        // A bucket that never refills is a zero rate even with capacity left.
        let no_refill = rate(algorithm, MINUTE, 0, 5);
        assert_eq!(
            peek(None, T0, &no_refill, 1),
            denied(5, 0, 0, None),
            "{algorithm}"
        );
    }
}

#[test]
fn scaled_down_limit_keeps_usage_already_counted() {
    for algorithm in Algorithm::ALL {
        let full = rate(algorithm, MINUTE, 10, 10);
        let mut state = None;
        consume(&mut state, T0, &full, 6);
        let at = |limit| peek(state.as_ref(), T0, &scaled(&full, limit), 1);
        assert_eq!(at(4).remaining, 0, "{algorithm}");
        assert!(!at(4).allowed, "{algorithm}");
        assert!(!at(6).allowed, "{algorithm}");
        assert_eq!(at(8).remaining, 1, "{algorithm}");
    }
}

/// As the engine scales a limit: requests and burst both, so the bucket algorithms refill
/// slower too. Usage already counted stays counted, and a `gcra` debt drains at the rate it
/// was counted at.
#[test]
fn a_limit_scaled_as_the_engine_does_keeps_usage_already_counted() {
    let both = |rate: &Rate, limit| Rate {
        requests: limit,
        burst: limit,
        ..*rate
    };
    for algorithm in Algorithm::ALL {
        let full = rate(algorithm, MINUTE, 10, 10);
        let mut state = None;
        consume(&mut state, T0, &full, 6);
        let at = |limit| peek(state.as_ref(), T0, &both(&full, limit), 1);
        assert_eq!((at(4).allowed, at(4).remaining), (false, 0), "{algorithm}");
        assert!(!at(6).allowed, "{algorithm}");
        assert_eq!((at(8).allowed, at(8).remaining), (true, 1), "{algorithm}");
    }
    // gcra: 6 counted at one per 6 s; at 5 a minute (one per 12 s, burst 5) the sixth
    // second has drained one, and the next request waits for a second one.
    let full = rate(Algorithm::Gcra, MINUTE, 10, 10);
    let half = both(&full, 5);
    let mut state = None;
    consume(&mut state, T0, &full, 6);
    let later = peek(state.as_ref(), T0 + 6 * SECOND, &half, 1);
    assert_eq!(
        (later.allowed, later.retry_after),
        (false, Some(6 * SECOND))
    );
    let passes = peek(state.as_ref(), T0 + 12 * SECOND, &half, 1);
    assert!(passes.allowed);
    // Counted at the new rate from then on: 4 left (30 s at 6 s) become 48 s at 12 s, and the
    // reset a passing check announces is the one counting leaves.
    assert_eq!(passes.reset_after, 60 * SECOND);
    assert_eq!(
        consume(&mut state, T0 + 12 * SECOND, &half, 1),
        T0 + 12 * SECOND + 60 * SECOND
    );
}

#[derive(Debug, Clone)]
struct Scenario {
    rate: Rate,
    /// The same usage seen under a smaller limit, at every step.
    scaled: Rate,
    start: u64,
    /// (time since the previous step, cost)
    steps: Vec<(u64, u64)>,
    /// Record denied requests too, as a shadow limit does.
    consume_denied: bool,
}

fn scenario(algorithm: Algorithm) -> impl Strategy<Value = Scenario> {
    let window = prop_oneof![1u64..=20, 21u64..=1000, Just(MINUTE)];
    // Near 0 for edge cases of `now - window`; near today for realistic magnitudes.
    let start = prop_oneof![0u64..=100, T0..=T0 + 1000];
    (
        window,
        1u64..=12,
        1u64..=12,
        start,
        proptest::bool::weighted(0.2),
    )
        .prop_flat_map(move |(window, requests, burst, start, consume_denied)| {
            let rate = rate(algorithm, window, requests, burst);
            // Mostly bursts inside one window, sometimes gaps long enough to forget everything.
            let dt = prop_oneof![3 => Just(0), 5 => 0..=window / 4, 2 => 0..=2 * window];
            let steps = proptest::collection::vec((dt, 1u64..=4), 1..=200);
            (steps, 0..=rate.capacity()).prop_map(move |(steps, limit)| Scenario {
                rate,
                scaled: scaled(&rate, limit),
                start,
                steps,
                consume_denied,
            })
        })
}

/// Checks `peek` at `now` against the model, and its `retry_after` and `reset_after` against
/// the model's future.
fn check_peek(
    state: &Option<State>,
    model: &dyn Model,
    now: u64,
    rate: &Rate,
    cost: u64,
) -> Result<Outcome, TestCaseError> {
    let outcome = peek(state.as_ref(), now, rate, cost);
    let limit = rate.capacity();
    let passes = |model: &dyn Model, at: u64| expected(model.usage(at), limit, cost).0;
    let (allowed, remaining) = expected(model.usage(now), limit, cost);
    prop_assert_eq!(
        (outcome.allowed, outcome.limit, outcome.remaining),
        (allowed, limit, remaining),
        "peek at {} of cost {} under {:?}",
        now,
        cost,
        rate
    );
    match outcome.retry_after {
        retry if allowed => {
            prop_assert_eq!(retry, Some(0));
        }
        None => prop_assert!(cost > limit, "no retry_after for a cost that fits"),
        Some(wait) => {
            prop_assert!(wait > 0 && cost <= limit);
            let impl_passes = |at| peek(state.as_ref(), at, rate, cost).allowed;
            prop_assert!(!impl_passes(now + wait - 1) && !passes(model, now + wait - 1));
            prop_assert!(impl_passes(now + wait) && passes(model, now + wait));
        }
    }
    if limit > 0 {
        let mut after = model.fork();
        if allowed {
            after.record(now, cost);
        }
        let reset = outcome.reset_after;
        prop_assert_eq!(after.usage(now + reset), 0, "not reset after {}", reset);
        prop_assert!(
            reset == 0 || after.usage(now + reset - 1) > 0,
            "reset before {}",
            reset
        );
    }
    Ok(outcome)
}

/// The spec's bounds on what can have been admitted, checked on the whole history.
fn check_admitted(rate: &Rate, admitted: &[(u64, u64)]) -> Result<(), TestCaseError> {
    let w = rate.window;
    let interval = w.div_ceil(rate.requests);
    let mut prefix = vec![0];
    for (_, cost) in admitted {
        prefix.push(prefix.last().unwrap() + cost);
    }
    for (j, &(tj, _)) in admitted.iter().enumerate() {
        for (i, &(ti, _)) in admitted[..=j].iter().enumerate() {
            let admitted_between = prefix[j + 1] - prefix[i];
            let bound = match rate.algorithm {
                // Any window of length `window` (those ending at an admission are the fullest).
                Algorithm::SlidingLog if ti + w > tj => rate.requests,
                Algorithm::FixedWindow | Algorithm::SlidingWindow if ti / w == tj / w => {
                    rate.requests
                }
                // Refill ticks are at least T apart: at most ceil(span / T) of them in a span.
                Algorithm::TokenBucket => rate.burst + (tj - ti).div_ceil(interval),
                // The TAT rule: after the burst, one per T exactly.
                Algorithm::Gcra => rate.burst + (tj - ti) / interval,
                _ => continue,
            };
            prop_assert!(
                admitted_between <= bound,
                "{} admitted in [{}, {}], bound {}",
                admitted_between,
                ti,
                tj,
                bound
            );
        }
    }
    Ok(())
}

fn run_against_model(scenario: Scenario) -> Result<(), TestCaseError> {
    let Scenario {
        rate,
        scaled,
        start,
        steps,
        consume_denied,
    } = scenario;
    let mut state = None;
    let mut model = model_for(&rate);
    let mut admitted = Vec::new();
    let mut now = start;
    for (dt, cost) in steps {
        now += dt;
        let outcome = check_peek(&state, &*model, now, &rate, cost)?;
        check_peek(&state, &*model, now, &scaled, cost)?;
        if outcome.allowed || consume_denied {
            let expires_at = consume(&mut state, now, &rate, cost);
            model.record(now, cost);
            prop_assert_eq!(model.usage(expires_at), 0, "expires too early");
            prop_assert!(model.usage(expires_at - 1) > 0, "expires too late");
        }
        if outcome.allowed {
            admitted.push((now, cost));
        }
    }
    if !consume_denied {
        check_admitted(&rate, &admitted)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sliding_log_matches_model(scenario in scenario(Algorithm::SlidingLog)) {
        run_against_model(scenario)?;
    }

    #[test]
    fn sliding_window_matches_model(scenario in scenario(Algorithm::SlidingWindow)) {
        run_against_model(scenario)?;
    }

    #[test]
    fn fixed_window_matches_model(scenario in scenario(Algorithm::FixedWindow)) {
        run_against_model(scenario)?;
    }

    #[test]
    fn token_bucket_matches_model(scenario in scenario(Algorithm::TokenBucket)) {
        run_against_model(scenario)?;
    }

    #[test]
    fn gcra_matches_model(scenario in scenario(Algorithm::Gcra)) {
        run_against_model(scenario)?;
    }
}
