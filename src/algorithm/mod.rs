//! The five limiting algorithms, each a pure function of (state, now, effective rate, cost).
//!
//! A check is two steps so that a store can apply several limits all or nothing: [`peek`]
//! computes the outcome without touching the state, and [`consume`] records the cost once every
//! limit of the request has passed. Both work in whole microseconds (see [`crate::clock`]).

mod fixed_window;
mod gcra;
mod sliding_log;
mod sliding_window;
mod token_bucket;

use crate::clock::Micros;
use crate::limit::{Algorithm, Rate};

pub use sliding_log::Log;

/// Time between two refilled tokens for the bucket algorithms, rounded up to a whole
/// microsecond (so a bucket is never faster than its policy).
fn emission_interval(rate: &Rate) -> Option<Micros> {
    (rate.requests > 0).then(|| rate.window.div_ceil(rate.requests).max(1))
}

/// What one limit says about one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub allowed: bool,
    /// The effective limit (the burst for bucket algorithms).
    pub limit: u64,
    /// Quota left: after this request when allowed, unchanged when denied.
    pub remaining: u64,
    /// Time until the limit is fully restored if nothing more comes.
    pub reset_after: Micros,
    /// Time until this request could pass: 0 when allowed, `None` when it never can at this
    /// rate (the cost exceeds the limit, or the limit is 0).
    pub retry_after: Option<Micros>,
}

/// The stored state of one limit for one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Boxed: a log is larger than the other states, and most keys are not logs.
    Log(Box<Log>),
    SlidingWindow {
        start: Micros,
        current: u64,
        previous: u64,
    },
    FixedWindow {
        start: Micros,
        count: u64,
    },
    TokenBucket {
        used: u64,
        last: Micros,
    },
    Gcra {
        tat: Micros,
        /// The emission interval the debt `tat − now` is counted in.
        interval: Micros,
    },
}

impl State {
    fn algorithm(&self) -> Algorithm {
        match self {
            State::Log(_) => Algorithm::SlidingLog,
            State::SlidingWindow { .. } => Algorithm::SlidingWindow,
            State::FixedWindow { .. } => Algorithm::FixedWindow,
            State::TokenBucket { .. } => Algorithm::TokenBucket,
            State::Gcra { .. } => Algorithm::Gcra,
        }
    }
}

/// The outcome of `cost` at `now` under `rate`, leaving the state untouched.
///
/// A state written by another algorithm (the policy changed a limit's algorithm but kept its
/// name) counts as empty.
pub fn peek(state: Option<&State>, now: Micros, rate: &Rate, cost: u64) -> Outcome {
    let state = state.filter(|s| s.algorithm() == rate.algorithm);
    match rate.algorithm {
        Algorithm::SlidingLog => sliding_log::peek(as_log(state), now, rate, cost),
        Algorithm::SlidingWindow => sliding_window::peek(state, now, rate, cost),
        Algorithm::FixedWindow => fixed_window::peek(state, now, rate, cost),
        Algorithm::TokenBucket => token_bucket::peek(state, now, rate, cost),
        Algorithm::Gcra => gcra::peek(state, now, rate, cost),
    }
}

/// Records `cost` at `now` (also past the limit: shadow limits count what they let through) and
/// returns when the state will have fully decayed, so a store can expire it then.
pub fn consume(state: &mut Option<State>, now: Micros, rate: &Rate, cost: u64) -> Micros {
    if state
        .as_ref()
        .is_some_and(|s| s.algorithm() != rate.algorithm)
    {
        *state = None;
    }
    match rate.algorithm {
        Algorithm::SlidingLog => sliding_log::consume(state, now, rate, cost),
        Algorithm::SlidingWindow => sliding_window::consume(state, now, rate, cost),
        Algorithm::FixedWindow => fixed_window::consume(state, now, rate, cost),
        Algorithm::TokenBucket => token_bucket::consume(state, now, rate, cost),
        Algorithm::Gcra => gcra::consume(state, now, rate, cost),
    }
}

/// When `state` will have fully decayed even if its limit is later refilled at only `slowest`
/// requests per window (the smallest scale the limit can take): a store keeps the state until
/// the later of this and what [`consume`] returned. Only `token_bucket` counts usage that
/// decays at the rate in force when it is checked; the others decay with time alone.
pub fn decayed_at_slowest(state: &Option<State>, rate: &Rate, slowest: u64) -> Micros {
    match state {
        Some(State::TokenBucket { used, last }) => {
            let slow = Rate {
                requests: slowest.max(1),
                ..*rate
            };
            let interval = emission_interval(&slow).unwrap_or(rate.window);
            last.saturating_add(used.saturating_mul(interval))
        }
        _ => 0,
    }
}

fn as_log(state: Option<&State>) -> Option<&Log> {
    match state {
        Some(State::Log(log)) => Some(&**log),
        _ => None,
    }
}

/// The denial of a request that can never pass at this rate.
fn never(rate: &Rate, remaining: u64, reset_after: Micros) -> Outcome {
    Outcome {
        allowed: false,
        limit: rate.capacity(),
        remaining,
        reset_after,
        retry_after: None,
    }
}

/// Start of the epoch-aligned window that holds `now`.
fn window_start(now: Micros, window: Micros) -> Micros {
    now - now % window
}
