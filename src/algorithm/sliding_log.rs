//! `sliding_log`: the exact count of what was admitted in the last `window`.
//!
//! Each admitted request is an entry (time, cost); entries at the same microsecond merge. A
//! request at `now` sees the entries with `time > now - window`, so there is never more than the
//! limit in any window, across window edges included.

use super::{Outcome, Rate, State, never};
use crate::clock::Micros;
use std::collections::VecDeque;

/// The admitted entries of one key, oldest first, and their total cost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Log {
    entries: VecDeque<(Micros, u64)>,
    total: u64,
}

impl Log {
    /// Entries still inside the window at `now`, oldest first.
    fn live(&self, now: Micros, window: Micros) -> impl Iterator<Item = &(Micros, u64)> {
        self.entries
            .iter()
            .filter(move |(t, _)| is_live(*t, now, window))
    }

    fn expire(&mut self, now: Micros, window: Micros) {
        while let Some(&(t, cost)) = self.entries.front() {
            if is_live(t, now, window) {
                break;
            }
            self.entries.pop_front();
            self.total -= cost;
        }
    }

    /// Admitted cost inside the window at `now`.
    pub fn used(&self, now: Micros, window: Micros) -> u64 {
        let expired: u64 = self
            .entries
            .iter()
            .take_while(|(t, _)| !is_live(*t, now, window))
            .map(|(_, c)| c)
            .sum();
        self.total - expired
    }
}

/// Whether an entry at `t` is still inside the window at `now`: `t > now - window`, written
/// without the subtraction, which would clamp at 0 and drop an entry at time 0 too early.
fn is_live(t: Micros, now: Micros, window: Micros) -> bool {
    t.saturating_add(window) > now
}

pub(super) fn peek(log: Option<&Log>, now: Micros, rate: &Rate, cost: u64) -> Outcome {
    let window = rate.window;
    let limit = rate.requests;
    let (used, newest) = log.map_or((0, None), |log| {
        let newest = log
            .entries
            .back()
            .map(|(t, _)| *t)
            .filter(|t| is_live(*t, now, window));
        (log.used(now, window), newest)
    });
    let reset_after = newest.map_or(0, |t| (t + window).saturating_sub(now));
    if cost > limit {
        return never(rate, limit.saturating_sub(used), reset_after);
    }
    if used + cost <= limit {
        return Outcome {
            allowed: true,
            limit,
            remaining: limit - used - cost,
            reset_after: window,
            retry_after: Some(0),
        };
    }
    // The request fits once enough of the oldest entries have left the window.
    let mut left = used;
    let mut retry_after = 0;
    for &(t, c) in log.into_iter().flat_map(|log| log.live(now, window)) {
        left -= c;
        if left + cost <= limit {
            retry_after = (t + window).saturating_sub(now);
            break;
        }
    }
    Outcome {
        allowed: false,
        limit,
        remaining: limit.saturating_sub(used),
        reset_after,
        retry_after: Some(retry_after),
    }
}

pub(super) fn consume(state: &mut Option<State>, now: Micros, rate: &Rate, cost: u64) -> Micros {
    if !matches!(state, Some(State::Log(_))) {
        *state = Some(State::Log(Box::default()));
    }
    let Some(State::Log(log)) = state else {
        return now + rate.window;
    };
    log.expire(now, rate.window);
    match log.entries.back_mut() {
        // A clock that stepped back (another daemon's, a replica's) still records the entry, at
        // the newest known time, so the log stays ordered.
        Some((t, c)) if *t >= now => *c += cost,
        _ => log.entries.push_back((now, cost)),
    }
    log.total += cost;
    let newest = log.entries.back().map_or(now, |(t, _)| *t);
    newest + rate.window
}
