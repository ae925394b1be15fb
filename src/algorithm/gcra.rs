//! `gcra`: the generic cell rate algorithm, emission interval `window / requests`, with
//! `burst` requests allowed at once.
//!
//! The state is the theoretical arrival time (TAT): the time at which the bucket would be
//! empty again. A request of cost `c` passes when `max(TAT, now) + c·T − now <= burst·T`.

use super::{Outcome, State, emission_interval, never};
use crate::clock::Micros;
use crate::limit::Rate;

fn tat(state: Option<&State>, now: Micros) -> Micros {
    match state {
        Some(State::Gcra { tat }) => (*tat).max(now),
        _ => now,
    }
}

pub(super) fn peek(state: Option<&State>, now: Micros, rate: &Rate, cost: u64) -> Outcome {
    let burst = rate.burst;
    let Some(t) = emission_interval(rate).filter(|_| burst > 0) else {
        return never(rate, 0, 0);
    };
    let tolerance = burst.saturating_mul(t);
    let debt = tat(state, now) - now;
    let remaining_with = |debt: u64| tolerance.saturating_sub(debt) / t;
    if cost > burst {
        return never(rate, remaining_with(debt), debt);
    }
    let next_debt = debt.saturating_add(cost.saturating_mul(t));
    if next_debt <= tolerance {
        return Outcome {
            allowed: true,
            limit: burst,
            remaining: remaining_with(next_debt),
            reset_after: next_debt,
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
    let t = emission_interval(rate).unwrap_or(rate.window);
    let tat = tat(state.as_ref(), now).saturating_add(cost.saturating_mul(t));
    *state = Some(State::Gcra { tat });
    tat
}
