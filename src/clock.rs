//! Time as a value the caller injects, so algorithm and engine tests are exact.
//!
//! Every algorithm works in whole microseconds since the Unix epoch: precise enough for any
//! rate a policy can express, and small enough (under 2^53 until the year 2255) to be exact in
//! the double-precision numbers of Redis's Lua, so both stores compute the same answers.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Microseconds since the Unix epoch.
pub type Micros = u64;

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Micros;
}

/// The wall clock, read cheaply: a TSC-backed monotonic clock (quanta) anchored to the
/// system's wall time, re-anchored by [`SystemClock::resync`] without ever stepping back.
///
/// `clock_gettime` costs about 35 ns on this project's machines, a tenth of a decision; quanta
/// reads the time stamp counter in a few.
#[derive(Debug, Clone)]
pub struct SystemClock {
    mono: quanta::Clock,
    base: quanta::Instant,
    /// Wall time minus monotonic time, in microseconds.
    offset: Arc<AtomicU64>,
    /// The latest time handed out: a resync may slew back, readers never see time go back.
    latest: Arc<AtomicU64>,
}

/// The most a resync moves the clock back per call, so time never visibly steps back.
const MAX_SLEW_MICROS: u64 = 1_000;

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl SystemClock {
    pub fn new() -> Self {
        let mono = quanta::Clock::new();
        let base = mono.now();
        let offset = Arc::new(AtomicU64::new(0));
        let latest = Arc::new(AtomicU64::new(0));
        let clock = Self {
            mono,
            base,
            offset,
            latest,
        };
        clock.offset.store(clock.wall_offset(), Ordering::Relaxed);
        clock
    }

    fn mono_micros(&self) -> Micros {
        micros(self.mono.now().saturating_duration_since(self.base))
    }

    /// The wall clock read between two monotonic reads, against their midpoint, so a thread
    /// preempted between the reads does not skew the offset.
    fn wall_offset(&self) -> u64 {
        let before = self.mono_micros();
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        let after = self.mono_micros();
        wall.saturating_sub(before + (after - before) / 2)
    }

    /// Follows the system's wall clock: forward at once, backward by at most 1 ms a call.
    pub fn resync(&self) {
        let target = self.wall_offset();
        let current = self.offset.load(Ordering::Relaxed);
        let next = if target >= current {
            target
        } else {
            current - (current - target).min(MAX_SLEW_MICROS)
        };
        self.offset.store(next, Ordering::Relaxed);
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Micros {
        let now = self.mono_micros() + self.offset.load(Ordering::Relaxed);
        self.latest.fetch_max(now, Ordering::Relaxed).max(now)
    }
}

/// A clock that moves only when told to: for tests and for replaying recorded traffic.
#[derive(Debug, Default, Clone)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
}

impl ManualClock {
    pub fn starting_at(now: Micros) -> Self {
        Self {
            now: Arc::new(AtomicU64::new(now)),
        }
    }

    pub fn set(&self, now: Micros) {
        self.now.store(now, Ordering::SeqCst);
    }

    pub fn advance(&self, by: Duration) {
        self.now.fetch_add(micros(by), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Micros {
        self.now.load(Ordering::SeqCst)
    }
}

/// A duration in whole microseconds, saturating.
pub fn micros(d: Duration) -> Micros {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
