//! What a limit is and what it is counted per: the policy's [`Limit`], its effective [`Rate`]
//! and [`Algorithm`], and the parts of a store key ([`KeyHash`], [`LimitId`]).
//!
//! The bottom layer: the algorithms, the stores, the policy and envoy compilers and the engine
//! all speak these types, so they depend on nothing of the crate but [`crate::clock`]'s
//! microseconds.

mod key;
mod rate;

pub use key::{KeyHash, LimitId, hash_limit_id};
pub use rate::{Algorithm, Rate};

use crate::clock::{Micros, micros};
use std::num::NonZeroU64;
use std::time::Duration;

/// One limit as the policy states it, before scaling.
#[derive(Debug, Clone)]
pub struct Limit {
    pub name: String,
    pub algorithm: Algorithm,
    pub requests: NonZeroU64,
    pub window: Duration,
    pub burst: NonZeroU64,
    pub shadow: bool,
    pub adaptive: bool,
    /// Stable store identity (`t:free:hourly`): usage survives a reload that keeps the name.
    pub id: String,
    /// A hash of `id`, computed once here rather than on every request.
    pub id_hash: u64,
    /// What responses call it (`tier:free/hourly`, `endpoint:/api/search/search`).
    pub label: String,
}

impl Limit {
    pub fn window_micros(&self) -> Micros {
        micros(self.window).max(1)
    }

    /// For a bucket (`token_bucket`, `gcra`) whose refill interval, counted in whole
    /// microseconds and rounded up so it is never faster than written, runs more than 1 %
    /// slower than written (3,000,000 a second runs at 1,000,000): what it runs at.
    pub fn coarse_refill(&self) -> Option<String> {
        if !self.algorithm.reports_burst() {
            return None;
        }
        let window = micros(self.window).max(1);
        let requests = self.requests.get();
        let exact = window as f64 / requests as f64;
        let counted = window.div_ceil(requests).max(1);
        (counted as f64 > exact * 1.01).then(|| {
            format!(
                "{}: {} per {:?} is a token every {exact:.3} µs, and {} counts whole \
                 microseconds: every {counted} µs, {:.0} a second instead of {:.0} \
                 (sliding_window and fixed_window count exactly)",
                self.label,
                self.requests,
                self.window,
                self.algorithm.name(),
                1e6 / counted as f64,
                1e6 / exact,
            )
        })
    }

    /// The effective rate at `scale`: floor(requests × scale), floor(burst × scale).
    pub fn rate(&self, scale: f64) -> Rate {
        Rate {
            algorithm: self.algorithm,
            window: self.window_micros(),
            requests: scale_count(self.requests.get(), scale),
            burst: scale_count(self.burst.get(), scale),
        }
    }

    pub fn base_rate(&self) -> Rate {
        self.rate(1.0)
    }
}

fn scale_count(n: u64, scale: f64) -> u64 {
    if scale == 1.0 {
        return n;
    }
    // `as` saturates; NaN and negatives (never produced, scales are validated) become 0. The
    // epsilon keeps products such as 100 × 0.29 (28.999999999999996 in binary) at 29.
    (n as f64 * scale + 1e-9).floor() as u64
}
