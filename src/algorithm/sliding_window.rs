//! `sliding_window`: Cloudflare's two-counter approximation of a sliding window.
//!
//! Windows are aligned to the epoch; the estimate at `now` is
//! `previous × (window − elapsed) / window + current`. All comparisons are done on integers
//! scaled by the window, so there is no rounding.

use super::{Outcome, Rate, State, never, window_start};
use crate::clock::Micros;

/// `now`, or the stored window's start when the clock stepped back behind it: counted usage
/// is never dropped for an older window.
fn not_before_state(state: Option<&State>, now: Micros) -> Micros {
    match state {
        Some(State::SlidingWindow { start, .. }) => now.max(*start),
        _ => now,
    }
}

/// (previous, current) as seen from the window starting at `start`.
fn counters(state: Option<&State>, start: Micros, window: Micros) -> (u64, u64) {
    match state {
        Some(State::SlidingWindow {
            start: s,
            current,
            previous,
        }) => {
            // While the length stays, the stored window is this one or the one before. A
            // stored window starting strictly inside this one or the one before is left from
            // before a reload changed the limit's `window`: the state does not keep how long
            // its windows were, so both its counts go where its own window lies (some of its
            // previous count may be older: counted in full, so a change never frees quota).
            if *s == start {
                (*previous, *current)
            } else if *s > start {
                (0, current.saturating_add(*previous))
            } else if s.saturating_add(window) == start {
                (*current, 0)
            } else if s.saturating_add(window) > start {
                (current.saturating_add(*previous), 0)
            } else {
                (0, 0)
            }
        }
        _ => (0, 0),
    }
}

pub(super) fn peek(state: Option<&State>, now: Micros, rate: &Rate, cost: u64) -> Outcome {
    let w = rate.window;
    let now = not_before_state(state, now);
    let start = window_start(now, w);
    let elapsed = now - start;
    let (previous, current) = counters(state, start, w);
    let limit = rate.requests;
    // Everything below is the real quantity times `w`.
    let weighted =
        u128::from(previous) * u128::from(w - elapsed) + u128::from(current) * u128::from(w);
    let capacity = u128::from(limit) * u128::from(w);
    let remaining_before =
        u64::try_from(capacity.saturating_sub(weighted) / u128::from(w)).unwrap_or(0);
    let reset_after = if current > 0 {
        start + 2 * w - now
    } else if previous > 0 {
        start + w - now
    } else {
        0
    };
    if cost > limit {
        return never(rate, remaining_before, reset_after);
    }
    let needed = weighted + u128::from(cost) * u128::from(w);
    if needed <= capacity {
        let remaining = u64::try_from((capacity - needed) / u128::from(w)).unwrap_or(0);
        return Outcome {
            allowed: true,
            limit,
            remaining,
            reset_after: start + 2 * w - now,
            retry_after: Some(0),
        };
    }
    Outcome {
        allowed: false,
        limit,
        remaining: remaining_before,
        reset_after,
        retry_after: Some(retry_after(previous, current, elapsed, w, limit, cost)),
    }
}

/// Earliest wait after which `cost` fits, given `cost <= limit` and that it does not fit now.
fn retry_after(
    previous: u64,
    current: u64,
    elapsed: Micros,
    w: Micros,
    limit: u64,
    cost: u64,
) -> Micros {
    let (p, c, w128) = (u128::from(previous), u128::from(current), u128::from(w));
    let (limit, cost) = (u128::from(limit), u128::from(cost));
    let left_in_window = u128::from(w - elapsed);
    // Still in this window: p × (w − elapsed − t) + (c + cost) × w <= limit × w.
    if previous > 0 && c + cost <= limit {
        let excess = p * left_in_window + (c + cost) * w128 - limit * w128;
        let t = excess.div_ceil(p);
        if t < left_in_window {
            return u64::try_from(t).unwrap_or(u64::MAX);
        }
    }
    // In the next window, `u` into it: c × (w − u) + cost × w <= limit × w.
    let u = if c + cost > limit {
        ((c + cost - limit) * w128).div_ceil(c)
    } else {
        0
    };
    u64::try_from(left_in_window + u).unwrap_or(u64::MAX)
}

pub(super) fn consume(state: &mut Option<State>, now: Micros, rate: &Rate, cost: u64) -> Micros {
    let now = not_before_state(state.as_ref(), now);
    let start = window_start(now, rate.window);
    let (previous, current) = counters(state.as_ref(), start, rate.window);
    *state = Some(State::SlidingWindow {
        start,
        current: current.saturating_add(cost),
        previous,
    });
    start + 2 * rate.window
}
