//! `gcra`: the generic cell rate algorithm, emission interval `window / requests`, with
//! `burst` requests allowed at once.
//!
//! The state is the theoretical arrival time (TAT): the time at which the bucket would be
//! empty again, and the emission interval `T` it was counted at. A request of cost `c` passes
//! when `max(TAT, now) + c·T − now <= burst·T`.
//!
//! Why the interval is kept: the debt `TAT − now` is usage in units of `T`, and scaling a
//! limit changes `T` (its requests shrink with its burst). Read at another interval the same
//! debt would be another number of requests: a limit shrunk tenfold would see a tenth of the
//! usage already counted, and a shadowed anomaly factor would never deny. So the debt is
//! always read in the interval it was counted at, against the burst in force, and converted
//! to the interval in force when more is counted; it drains at the rate it was counted at.

use super::{Outcome, State, emission_interval, never};
use crate::clock::Micros;
use crate::limit::Rate;

/// The debt at `now` and the interval it is counted in (`current` for a state without one).
fn debt(state: Option<&State>, now: Micros, current: Micros) -> (Micros, Micros) {
    match state {
        // Paid off: nothing is counted in any interval (a Redis key may outlive its `tat` by the
        // TTL's rounding to whole milliseconds, where the embedded store has dropped it).
        Some(State::Gcra { tat, interval }) if *tat > now => (tat - now, (*interval).max(1)),
        _ => (0, current),
    }
}

/// A debt counted at interval `from`, in units of interval `to`, rounded up to a microsecond.
/// In floating point, as the Lua script computes it, so both stores agree to the µs: exact
/// while `debt × to` is below 2^53, within a microsecond beyond (slow limits: 10 an hour).
fn rescaled(debt: Micros, from: Micros, to: Micros) -> Micros {
    if from == to || debt == 0 {
        return debt;
    }
    (debt as f64 * to as f64 / from as f64).ceil() as Micros
}

pub(super) fn peek(state: Option<&State>, now: Micros, rate: &Rate, cost: u64) -> Outcome {
    let burst = rate.burst;
    let Some(current) = emission_interval(rate).filter(|_| burst > 0) else {
        return never(rate, 0, 0);
    };
    let (debt, t) = debt(state, now, current);
    let tolerance = burst.saturating_mul(t);
    let remaining_with = |debt: u64| tolerance.saturating_sub(debt) / t;
    if cost > burst {
        return never(rate, remaining_with(debt), debt);
    }
    let next_debt = debt.saturating_add(cost.saturating_mul(t));
    if next_debt <= tolerance {
        // Counting converts the debt to the interval in force (`consume`): the reset is the
        // debt that leaves, not the one judged.
        return Outcome {
            allowed: true,
            limit: burst,
            remaining: remaining_with(next_debt),
            reset_after: rescaled(debt, t, current).saturating_add(cost.saturating_mul(current)),
            retry_after: Some(0),
        };
    }
    Outcome {
        allowed: false,
        limit: burst,
        remaining: remaining_with(debt),
        reset_after: debt,
        retry_after: Some(next_debt - tolerance),
    }
}

pub(super) fn consume(state: &mut Option<State>, now: Micros, rate: &Rate, cost: u64) -> Micros {
    let t = emission_interval(rate).unwrap_or(rate.window).max(1);
    let (debt, counted_at) = debt(state.as_ref(), now, t);
    let tat = now
        .saturating_add(rescaled(debt, counted_at, t))
        .saturating_add(cost.saturating_mul(t));
    *state = Some(State::Gcra { tat, interval: t });
    tat
}
