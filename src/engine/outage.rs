//! A store outage told once: a warning when the store first fails, and a line when it answers
//! again, with how long it was gone and how decisions were answered meanwhile.
//!
//! The request path and the control loop report to the one tracker the engine holds, so an
//! outage is one story however many calls fail (a warning per failed call was two a second from
//! the control loop alone, and nothing at all from the request path). An outage ends once the
//! store has answered with no call failing for [`QUIET`]: when one cluster node is down, or
//! Redis refuses writes while still answering reads, calls that fail and calls that pass
//! interleave, and ending at each answer logged a pair of lines per request. A failure of the
//! control loop, which calls the store once per interval, asks for a longer quiet span (see
//! [`control_quiet`]): with decisions working between its failures, a cycle that ran a little
//! late ended and began an outage every few seconds while the store kept refusing it.

use crate::clock::Micros;
use crate::store::OnError;
use parking_lot::Mutex;
use std::fmt::Display;
use std::sync::atomic::{AtomicBool, Ordering};

/// How a decision was answered without the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    /// `on_error: allow`: admitted with no limit.
    Allowed,
    /// `on_error: deny` (or a full embedded store): denied with 503.
    Denied,
    /// `on_error: local`: decided by the per-instance limiter.
    Local,
}

/// How long no store call may fail before an answer ends the outage: 1 s.
pub const QUIET: Micros = 1_000_000;

/// The quiet span after a control-loop failure: three control intervals (and at least
/// [`QUIET`]), so the outage outlasts a late cycle that would have failed again.
pub fn control_quiet(interval: std::time::Duration) -> Micros {
    let interval = Micros::try_from(interval.as_micros()).unwrap_or(Micros::MAX);
    interval.saturating_mul(3).max(QUIET)
}

/// The outage in progress, if any.
#[derive(Debug, Default)]
pub struct StoreOutage {
    /// Read on every call the store answers: the lock is taken only during an outage.
    down: AtomicBool,
    open: Mutex<Option<Outage>>,
}

#[derive(Debug)]
struct Outage {
    began: Micros,
    last_failure: Micros,
    /// How long without a failure ends it: the longest any of its failures asked for.
    quiet: Micros,
    allowed: u64,
    denied: u64,
    local: u64,
}

impl StoreOutage {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether an outage is in progress.
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Relaxed)
    }

    /// A store call failed (`during` says which, `answered` how its decision was answered,
    /// `None` for the control loop's calls); the first failure of an outage is logged. The
    /// outage then lasts until no call has failed for `quiet` ([`QUIET`] for a decision).
    pub fn failed(
        &self,
        now: Micros,
        during: &str,
        error: &dyn Display,
        on_error: OnError,
        answered: Option<Answered>,
        quiet: Micros,
    ) {
        let mut open = self.open.lock();
        let outage = open.get_or_insert_with(|| {
            // A control-loop call can fail while every decision succeeds (an ACL refusing only
            // LRANGE): say what a decision does only when one met the failure.
            let consequence = match answered {
                Some(_) => format!(
                    "decisions follow store.on_error ({}) until the store answers again",
                    on_error.label()
                ),
                None => "decisions that meet a failure follow store.on_error; scoring and \
                         load sharing wait for the store"
                    .to_owned(),
            };
            tracing::warn!(
                on_error = %on_error.label(),
                "store outage began: {during} failed ({error}); {consequence}"
            );
            Outage {
                began: now,
                last_failure: now,
                quiet,
                allowed: 0,
                denied: 0,
                local: 0,
            }
        });
        outage.last_failure = outage.last_failure.max(now);
        outage.quiet = outage.quiet.max(quiet);
        match answered {
            Some(Answered::Allowed) => outage.allowed += 1,
            Some(Answered::Denied) => outage.denied += 1,
            Some(Answered::Local) => outage.local += 1,
            None => {}
        }
        self.down.store(true, Ordering::Relaxed);
    }

    /// A store call succeeded: ends the outage in progress, if any, with its story, once no
    /// call has failed for its quiet span.
    pub fn answered(&self, now: impl FnOnce() -> Micros) {
        if !self.is_down() {
            return;
        }
        let now = now();
        let mut open = self.open.lock();
        if open
            .as_ref()
            .is_some_and(|o| now.saturating_sub(o.last_failure) < o.quiet)
        {
            return;
        }
        let Some(outage) = open.take() else {
            return;
        };
        drop(open);
        self.down.store(false, Ordering::Relaxed);
        let lasted = now.saturating_sub(outage.began) as f64 / 1e6;
        tracing::info!(
            lasted_s = lasted,
            allowed = outage.allowed,
            denied = outage.denied,
            local = outage.local,
            "store outage ended after {lasted:.1} s; meanwhile {} decisions were allowed without \
             the store, {} denied and {} decided by the local limiter",
            outage.allowed,
            outage.denied,
            outage.local
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{Answered, QUIET, StoreOutage, control_quiet};
    use crate::store::OnError;
    use std::time::Duration;

    #[test]
    fn an_outage_counts_its_answers_and_ends_once() {
        let outage = StoreOutage::new();
        outage.answered(|| unreachable!("no outage: the clock is not read"));
        outage.failed(
            10,
            "a decision",
            &"down",
            OnError::Allow,
            Some(Answered::Allowed),
            QUIET,
        );
        outage.failed(20, "the control loop", &"down", OnError::Allow, None, QUIET);
        outage.failed(
            30,
            "a decision",
            &"down",
            OnError::Allow,
            Some(Answered::Allowed),
            QUIET,
        );
        assert!(outage.is_down());
        let open = outage.open.lock();
        let counted = open
            .as_ref()
            .map(|o| (o.began, o.allowed, o.denied, o.local));
        assert_eq!(counted, Some((10, 2, 0, 0)));
        drop(open);
        // Answers between failures (a node of several down) do not end it...
        outage.answered(|| 500_030);
        assert!(outage.is_down());
        outage.failed(
            600_000,
            "a decision",
            &"down",
            OnError::Allow,
            Some(Answered::Allowed),
            QUIET,
        );
        outage.answered(|| 1_500_000);
        assert!(outage.is_down());
        // ...a second without a failure does.
        outage.answered(|| 1_600_000);
        assert!(!outage.is_down());
        assert!(outage.open.lock().is_none());
    }

    #[test]
    fn a_control_loop_failing_each_cycle_is_one_outage_though_decisions_work() {
        let outage = StoreOutage::new();
        let quiet = control_quiet(Duration::from_secs(1));
        assert_eq!(quiet, 3_000_000);
        // Cycles 1.2 s apart on a busy host, decisions working between them.
        for cycle in 0..10u64 {
            let at = cycle * 1_200_000;
            outage.failed(
                at,
                "the control loop",
                &"NOPERM",
                OnError::Local,
                None,
                quiet,
            );
            outage.answered(|| at + 1_150_000);
            assert!(outage.is_down(), "ended after cycle {cycle}");
        }
        outage.answered(|| 9 * 1_200_000 + quiet);
        assert!(!outage.is_down());
        // A long interval asks for a longer span; never less than a second.
        assert_eq!(control_quiet(Duration::from_secs(10)), 30_000_000);
        assert_eq!(control_quiet(Duration::from_millis(100)), QUIET);
    }
}
