//! `token_bucket`: capacity `burst`, refilled one whole token every `window / requests`.
//!
//! The state counts tokens *used* (not tokens left), so a limit scaled down or up keeps the
//! usage already counted; `last` keeps the partial progress toward the next token exactly.

use super::{Outcome, State, emission_interval, never};
use crate::clock::Micros;
use crate::limit::Rate;

/// (used, last) after refilling up to `now`.
fn refilled(state: Option<&State>, now: Micros, interval: Micros) -> (u64, Micros) {
    match state {
        Some(State::TokenBucket { used, last }) if *used > 0 => {
            let tokens = now.saturating_sub(*last) / interval;
            if tokens >= *used {
                (0, now)
            } else {
                (used - tokens, last + tokens * interval)
            }
        }
        _ => (0, now),
    }
}

pub(super) fn peek(state: Option<&State>, now: Micros, rate: &Rate, cost: u64) -> Outcome {
    let burst = rate.burst;
    let Some(interval) = emission_interval(rate).filter(|_| burst > 0) else {
        return never(rate, 0, 0);
    };
    let (used, last) = refilled(state, now, interval);
    let full_at = |used: u64| {
        last.saturating_add(used.saturating_mul(interval))
            .saturating_sub(now)
    };
    if cost > burst {
        return never(rate, burst.saturating_sub(used), full_at(used));
    }
    if used + cost <= burst {
        return Outcome {
            allowed: true,
            limit: burst,
            remaining: burst - used - cost,
            reset_after: full_at(used + cost),
            retry_after: Some(0),
        };
    }
    Outcome {
        allowed: false,
        limit: burst,
        remaining: burst.saturating_sub(used),
        reset_after: full_at(used),
        retry_after: Some(full_at(used + cost - burst)),
    }
}

pub(super) fn consume(state: &mut Option<State>, now: Micros, rate: &Rate, cost: u64) -> Micros {
    let interval = emission_interval(rate).unwrap_or(rate.window);
    let (used, last) = refilled(state.as_ref(), now, interval);
    let used = used.saturating_add(cost);
    *state = Some(State::TokenBucket { used, last });
    last.saturating_add(used.saturating_mul(interval))
}
