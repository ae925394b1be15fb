//! `fixed_window`: one counter per window, windows aligned to multiples of the window length
//! since the Unix epoch (as envoyproxy/ratelimit does).

use super::{Outcome, Rate, State, never, window_start};
use crate::clock::Micros;

/// `now`, or the stored window's start when the clock stepped back behind it (another
/// daemon's clock, a Redis failover): counted usage is never dropped for an older window.
fn not_before_state(state: Option<&State>, now: Micros) -> Micros {
    match state {
        Some(State::FixedWindow { start, .. }) => now.max(*start),
        _ => now,
    }
}

/// The count of the window starting at `start`. A stored window that starts inside it (always
/// the same window while the length stays; a shorter one after a reload lengthened the
/// limit's `window`) holds requests made inside it, so they still count.
fn count_now(state: Option<&State>, start: Micros) -> u64 {
    match state {
        Some(State::FixedWindow { start: s, count }) if *s >= start => *count,
        _ => 0,
    }
}

pub(super) fn peek(state: Option<&State>, now: Micros, rate: &Rate, cost: u64) -> Outcome {
    let now = not_before_state(state, now);
    let start = window_start(now, rate.window);
    let until_end = start + rate.window - now;
    let count = count_now(state, start);
    let reset_after = if count > 0 { until_end } else { 0 };
    let limit = rate.requests;
    if cost > limit {
        return never(rate, limit.saturating_sub(count), reset_after);
    }
    if count + cost <= limit {
        Outcome {
            allowed: true,
            limit,
            remaining: limit - count - cost,
            reset_after: until_end,
            retry_after: Some(0),
        }
    } else {
        Outcome {
            allowed: false,
            limit,
            remaining: limit.saturating_sub(count),
            reset_after,
            retry_after: Some(until_end),
        }
    }
}

pub(super) fn consume(state: &mut Option<State>, now: Micros, rate: &Rate, cost: u64) -> Micros {
    let now = not_before_state(state.as_ref(), now);
    let start = window_start(now, rate.window);
    let count = count_now(state.as_ref(), start).saturating_add(cost);
    *state = Some(State::FixedWindow { start, count });
    start + rate.window
}
