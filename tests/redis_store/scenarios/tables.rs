//! The suite's tables: for each algorithm, a limit of one subject through steps (time, cost,
//! mode, expected outcome), and for every algorithm the zero limit and interval rounding.

use super::Scenario;
use crate::support::*;
use ratewarden::limit::Algorithm;

use Algorithm::{FixedWindow, Gcra, SlidingLog, SlidingWindow, TokenBucket};

pub fn scenarios() -> Vec<Scenario> {
    let mut all = vec![
        Scenario::new(
            "sliding_log counts exact cost",
            rate(SlidingLog, 10 * SECOND, 3, 3),
        )
        .hit(0, 2, allowed(3, 1, 10 * SECOND))
        .hit(SECOND, 1, allowed(3, 0, 10 * SECOND))
        // Room comes back when the cost-2 entry leaves; full reset waits for the newest.
        .hit(2 * SECOND, 1, denied(3, 0, 9 * SECOND, Some(8 * SECOND)))
        .hit(10 * SECOND - 1, 1, denied(3, 0, SECOND + 1, Some(1)))
        .hit(10 * SECOND, 2, allowed(3, 0, 10 * SECOND))
        .dry(10 * SECOND, 4, denied(3, 0, 10 * SECOND, None)),
        Scenario::new(
            "sliding_log merges one microsecond",
            rate(SlidingLog, MINUTE, 5, 5),
        )
        .dry(0, 6, denied(5, 5, 0, None))
        .hit(0, 6, denied(5, 5, 0, None))
        .hit(0, 2, allowed(5, 3, MINUTE))
        // Same microsecond: one entry of cost 4, not a second member that replaces it.
        .hit(0, 2, allowed(5, 1, MINUTE))
        .hit(30 * SECOND, 1, allowed(5, 0, MINUTE))
        .hit(40 * SECOND, 1, denied(5, 0, 50 * SECOND, Some(20 * SECOND)))
        .hit(MINUTE, 4, allowed(5, 0, MINUTE)),
        Scenario::new(
            "sliding_window weights the previous window",
            rate(SlidingWindow, MINUTE, 50, 50),
        )
        .hit(10 * SECOND, 42, allowed(50, 8, 110 * SECOND))
        // 42 + 18 > 50: a shadow check is consumed all the same. It would fit once the
        // previous window weighs 42 × (60 s − t)/60 s <= 32: t = 600 s / 42 = 14.2857 s.
        .shadow(MINUTE, 18, denied(50, 8, MINUTE, Some(14_285_715)))
        // 15 s in: 42 × 45/60 + 18 = 49.5; one more fits 714 285.7 µs later.
        .dry(75 * SECOND, 1, denied(50, 0, 105 * SECOND, Some(714_286)))
        // 30 s in: 42 × 30/60 + 18 = 39.
        .dry(90 * SECOND, 3, allowed(50, 8, 90 * SECOND))
        .hit(90 * SECOND, 3, allowed(50, 8, 90 * SECOND))
        // The next window sees 21 as its previous one, the one after nothing.
        .dry(2 * MINUTE, 1, allowed(50, 28, 2 * MINUTE))
        .dry(3 * MINUTE, 1, allowed(50, 49, 2 * MINUTE)),
        Scenario::new(
            "sliding_window full current window",
            rate(SlidingWindow, MINUTE, 10, 10),
        )
        .hit(0, 10, allowed(10, 0, 2 * MINUTE))
        // Next window, u in: 10 × (60 s − u)/60 s + 1 <= 10 from u = 6 s.
        .dry(
            1,
            1,
            denied(10, 0, 2 * MINUTE - 1, Some(MINUTE - 1 + 6 * SECOND)),
        )
        .dry(MINUTE, 1, denied(10, 0, MINUTE, Some(6 * SECOND)))
        .hit(66 * SECOND, 1, allowed(10, 0, 114 * SECOND))
        .dry(66 * SECOND, 11, denied(10, 0, 114 * SECOND, None)),
        Scenario::new(
            "fixed_window per epoch-aligned window",
            rate(FixedWindow, 10 * SECOND, 3, 3),
        )
        .hit(4 * SECOND, 2, allowed(3, 1, 6 * SECOND))
        .hit(5 * SECOND, 1, allowed(3, 0, 5 * SECOND))
        .hit(9 * SECOND, 1, denied(3, 0, SECOND, Some(SECOND)))
        .hit(10 * SECOND, 3, allowed(3, 0, 10 * SECOND))
        .dry(10 * SECOND, 4, denied(3, 0, 10 * SECOND, None))
        .dry(20 * SECOND, 4, denied(3, 3, 0, None))
        .hit(25 * SECOND, 1, allowed(3, 2, 5 * SECOND)),
        // 10 per minute: one token every 6 s, 5 at most.
        Scenario::new(
            "token_bucket refills a token per interval",
            rate(TokenBucket, MINUTE, 10, 5),
        )
        .hit(0, 1, allowed(5, 4, 6 * SECOND))
        .hit(0, 1, allowed(5, 3, 12 * SECOND))
        .hit(0, 1, allowed(5, 2, 18 * SECOND))
        .hit(0, 1, allowed(5, 1, 24 * SECOND))
        .hit(0, 1, allowed(5, 0, 30 * SECOND))
        .hit(0, 1, denied(5, 0, 30 * SECOND, Some(6 * SECOND)))
        .dry(6 * SECOND - 1, 1, denied(5, 0, 24 * SECOND + 1, Some(1)))
        // At 9 s one token is back and the next is half way: cost 2 waits for 12 s.
        .hit(9 * SECOND, 2, denied(5, 1, 21 * SECOND, Some(3 * SECOND)))
        .hit(12 * SECOND, 2, allowed(5, 0, 30 * SECOND))
        .dry(12 * SECOND, 6, denied(5, 0, 30 * SECOND, None)),
        // One token a second; taking one at 1.2 s must not restart the clock.
        Scenario::new(
            "token_bucket keeps partial progress",
            rate(TokenBucket, 4 * SECOND, 4, 4),
        )
        .hit(0, 4, allowed(4, 0, 4 * SECOND))
        .dry(996_000, 1, denied(4, 0, 3_004_000, Some(4_000)))
        .hit(1_200_000, 1, allowed(4, 0, 3_800_000))
        .dry(1_996_000, 1, denied(4, 0, 3_004_000, Some(4_000)))
        .dry(2 * SECOND, 1, allowed(4, 0, 4 * SECOND))
        .dry(5 * SECOND, 1, allowed(4, 3, SECOND)),
        // 10 per minute: T = 6 s; burst 5.
        Scenario::new(
            "gcra passes the burst, then one per interval",
            rate(Gcra, MINUTE, 10, 5),
        )
        .hit(0, 1, allowed(5, 4, 6 * SECOND))
        .hit(0, 1, allowed(5, 3, 12 * SECOND))
        .hit(0, 1, allowed(5, 2, 18 * SECOND))
        .hit(0, 1, allowed(5, 1, 24 * SECOND))
        .hit(0, 1, allowed(5, 0, 30 * SECOND))
        .hit(0, 1, denied(5, 0, 30 * SECOND, Some(6 * SECOND)))
        .dry(6 * SECOND - 1, 1, denied(5, 0, 24 * SECOND + 1, Some(1)))
        .hit(6 * SECOND, 1, allowed(5, 0, 30 * SECOND))
        .hit(12 * SECOND, 2, denied(5, 1, 24 * SECOND, Some(6 * SECOND)))
        .dry(12 * SECOND, 6, denied(5, 1, 24 * SECOND, None)),
        // The policy the algorithm changes under: every state is dropped, never misread.
        Scenario::new(
            "a limit that changes algorithm starts afresh",
            rate(SlidingLog, MINUTE, 5, 5),
        )
        .hit(0, 3, allowed(5, 2, MINUTE))
        .rate(rate(FixedWindow, MINUTE, 5, 5))
        .hit(SECOND, 1, allowed(5, 4, 59 * SECOND))
        // Back to a log within its window: the old log and its total are gone.
        .rate(rate(SlidingLog, MINUTE, 5, 5))
        .hit(2 * SECOND, 1, allowed(5, 4, MINUTE))
        .hit(3 * SECOND, 4, allowed(5, 0, MINUTE))
        .rate(rate(TokenBucket, MINUTE, 10, 10))
        .hit(4 * SECOND, 1, allowed(10, 9, 6 * SECOND))
        .rate(rate(Gcra, MINUTE, 10, 10))
        .hit(5 * SECOND, 1, allowed(10, 9, 6 * SECOND))
        .rate(rate(SlidingWindow, MINUTE, 5, 5))
        .hit(6 * SECOND, 1, allowed(5, 4, 114 * SECOND))
        .rate(rate(FixedWindow, MINUTE, 5, 5))
        .hit(7 * SECOND, 2, allowed(5, 3, 53 * SECOND))
        .rate(rate(SlidingLog, MINUTE, 5, 5))
        .dry(8 * SECOND, 1, allowed(5, 4, MINUTE))
        .hit(8 * SECOND, 5, allowed(5, 0, MINUTE))
        .rate(rate(Gcra, MINUTE, 10, 10))
        .dry(9 * SECOND, 1, allowed(10, 9, 6 * SECOND))
        .rate(rate(FixedWindow, MINUTE, 5, 5))
        .dry(10 * SECOND, 1, allowed(5, 4, 50 * SECOND)),
    ];
    for algorithm in [Gcra, TokenBucket] {
        // 3 per 10 s: 3 333 334 µs between tokens, not 3 333 333.
        all.push(
            Scenario::new(
                "emission interval rounds up",
                rate(algorithm, 10 * SECOND, 3, 1),
            )
            .hit(0, 1, allowed(1, 0, 3_333_334))
            .hit(3_333_333, 1, denied(1, 0, 1, Some(1)))
            .hit(3_333_334, 1, allowed(1, 0, 3_333_334)),
        );
    }
    for algorithm in Algorithm::ALL {
        // A limit of 0 denies everything, names no time, and a shadow one still counts.
        let after_shadow = match algorithm {
            FixedWindow | SlidingLog => denied(0, 0, 59 * SECOND, None),
            SlidingWindow => denied(0, 0, 119 * SECOND, None),
            TokenBucket | Gcra => denied(0, 0, 0, None),
        };
        all.push(
            Scenario::new("zero limit", rate(algorithm, MINUTE, 0, 0))
                .dry(0, 1, denied(0, 0, 0, None))
                .hit(0, 1, denied(0, 0, 0, None))
                .dry(0, 1, denied(0, 0, 0, None))
                .shadow(0, 1, denied(0, 0, 0, None))
                .dry(SECOND, 1, after_shadow),
        );
    }
    all
}
