//! A store outage told once: a warning when the store first fails, and a line when it answers
//! again, with how long it was gone and how decisions were answered meanwhile.
//!
//! The request path and the control loop report to the one tracker the engine holds, so an
//! outage is one story however many calls fail (a warning per failed call was two a second from
//! the control loop alone, and nothing at all from the request path). An outage ends once the
//! store has answered with no call failing for [`QUIET`]: when one cluster node is down, or
//! Redis refuses writes while still answering reads, calls that fail and calls that pass
//! interleave, and ending at each answer logged a pair of lines per request. An outage the
//! control loop's calls met ends only once a control cycle has made every one of its calls
//! and none failed ([`StoreOutage::control_answered`]): with decisions working between its
//! failures (an ACL without `RPUSH`), ending at their answers began and ended an outage every
//! few seconds while the store kept refusing the control loop.

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
    /// A control-loop call failed, and no control cycle has made all its calls since.
    control_failing: bool,
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
    /// `None` for the control loop's calls); the first failure of an outage is logged.
    pub fn failed(
        &self,
        now: Micros,
        during: &str,
        error: &dyn Display,
        on_error: OnError,
        answered: Option<Answered>,
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
                control_failing: false,
                allowed: 0,
                denied: 0,
                local: 0,
            }
        });
        outage.last_failure = outage.last_failure.max(now);
        match answered {
            Some(Answered::Allowed) => outage.allowed += 1,
            Some(Answered::Denied) => outage.denied += 1,
            Some(Answered::Local) => outage.local += 1,
            None => outage.control_failing = true,
        }
        self.down.store(true, Ordering::Relaxed);
    }

    /// A decision's store call succeeded: ends the outage in progress, if any, with its story,
    /// once no call has failed for [`QUIET`], unless the control loop's calls still fail.
    pub fn answered(&self, now: impl FnOnce() -> Micros) {
        if !self.is_down() {
            return;
        }
        self.end_if_quiet(now(), false);
    }

    /// A control cycle's store calls all succeeded; `complete` unless it left out a call that
    /// failed before (an idle cycle uploads no activity, so it says nothing of a failing
    /// upload). A complete one clears the control loop's failure; then the outage ends as on
    /// [`StoreOutage::answered`].
    pub fn control_answered(&self, now: Micros, complete: bool) {
        if self.is_down() {
            self.end_if_quiet(now, complete);
        }
    }

    /// The control loop stopped calling the store (no model: fleet mode is off): a failure of
    /// its calls no longer holds the outage open, which decisions' answers can then end.
    pub fn control_stopped(&self) {
        if let Some(outage) = self.open.lock().as_mut() {
            outage.control_failing = false;
        }
    }

    fn end_if_quiet(&self, now: Micros, control_complete: bool) {
        let mut open = self.open.lock();
        if let Some(outage) = open.as_mut() {
            outage.control_failing &= !control_complete;
            if outage.control_failing || now.saturating_sub(outage.last_failure) < QUIET {
                return;
            }
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
    use super::{Answered, QUIET, StoreOutage};
    use crate::store::OnError;

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
        );
        outage.failed(20, "the control loop", &"down", OnError::Allow, None);
        outage.failed(
            30,
            "a decision",
            &"down",
            OnError::Allow,
            Some(Answered::Allowed),
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
        );
        outage.answered(|| 1_500_000);
        assert!(outage.is_down());
        // ...nor do they a second later, since the control loop's call failed too...
        outage.answered(|| 1_600_000);
        assert!(outage.is_down());
        // ...until a control cycle makes all its calls, a second after the last failure.
        outage.control_answered(1_600_000, true);
        assert!(!outage.is_down());
        assert!(outage.open.lock().is_none());
    }

    #[test]
    fn a_control_loop_failing_each_cycle_is_one_outage_though_decisions_work() {
        let outage = StoreOutage::new();
        // An upload refused in each busy cycle, idle cycles and decisions working between.
        for cycle in 0..10u64 {
            let at = cycle * 5 * QUIET;
            outage.failed(at, "the control loop", &"NOPERM", OnError::Local, None);
            outage.answered(|| at + 2 * QUIET);
            outage.control_answered(at + 3 * QUIET, false);
            assert!(outage.is_down(), "ended after cycle {cycle}");
        }
        // A cycle that made every call, the upload too: over.
        outage.control_answered(50 * QUIET, true);
        assert!(!outage.is_down());
        // Nor once the control loop stops calling the store (its model unloaded).
        outage.failed(
            52 * QUIET,
            "the control loop",
            &"down",
            OnError::Local,
            None,
        );
        outage.answered(|| 54 * QUIET);
        assert!(outage.is_down());
        outage.control_stopped();
        outage.answered(|| 55 * QUIET);
        assert!(!outage.is_down());
        // A decision's failure alone still ends a second after the last one.
        outage.failed(
            60 * QUIET,
            "a decision",
            &"down",
            OnError::Local,
            Some(Answered::Local),
        );
        outage.answered(|| 61 * QUIET);
        assert!(!outage.is_down());
    }
}
