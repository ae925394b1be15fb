//! Per-subject access features: what the abuse model sees of a subject's recent traffic.
//!
//! The request path records each decision (and each `/v1/report` status) into a
//! [`Recorder`]; every control cycle drains it into a windowed [`SubjectActivity`] per subject (in
//! process, or in the shared store so every daemon sees the same totals), and turns that into
//! [`Features`]. Features are rates and ratios normalised by the span actually observed, so a
//! model trained with one window length means the same with another.

mod activity;
mod recorder;
pub mod window;

pub use activity::{Counters, Sketch, SubjectActivity, features_of};
pub use recorder::{NewActivity, Recorder};
pub use window::ActivityWindow;

use serde::{Deserialize, Serialize};

/// The names of [`Features::to_array`]'s columns, in order (model files list them).
pub const FEATURE_NAMES: [&str; FEATURE_COUNT] = [
    "requests_per_second",
    "endpoints_per_request",
    "ips_per_request",
    "client_error_ratio",
    "denied_ratio",
    "interarrival_cv",
];

pub const FEATURE_COUNT: usize = 6;

/// A subject's features over the span observed in the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Features {
    /// Requests per second since the subject's first request in the window.
    pub requests_per_second: f64,
    /// Distinct endpoints (paths) per request: scrapers and enumerators walk many.
    pub endpoints_per_request: f64,
    /// Distinct client addresses per request: high for traffic spread over many addresses.
    pub ips_per_request: f64,
    /// Share of reported upstream statuses that were 4xx (`/v1/report`); 0 without reports.
    pub client_error_ratio: f64,
    /// Share of the subject's requests denied by the limits as written (not by the load or
    /// anomaly scaling).
    pub denied_ratio: f64,
    /// Coefficient of variation of the gaps between requests (0 = a metronome; about 1 for
    /// random arrivals; more for bursts); at most [`MAX_CV`].
    pub interarrival_cv: f64,
}

/// What the last control cycle computed for a subject active in the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SubjectFeatures {
    pub features: Features,
    /// Requests counted in the window (scored from `anomaly.min_requests` on).
    pub requests: u64,
}

/// Where the coefficient of variation is capped, so one huge gap cannot dominate the model.
pub const MAX_CV: f64 = 10.0;

impl Features {
    /// The inverse of [`Features::to_array`]; `None` unless exactly the right count.
    pub fn from_slice(values: &[f64]) -> Option<Self> {
        let [a, b, c, d, e, f] = <[f64; FEATURE_COUNT]>::try_from(values).ok()?;
        Some(Self {
            requests_per_second: a,
            endpoints_per_request: b,
            ips_per_request: c,
            client_error_ratio: d,
            denied_ratio: e,
            interarrival_cv: f,
        })
    }

    pub fn to_array(&self) -> [f64; FEATURE_COUNT] {
        [
            self.requests_per_second,
            self.endpoints_per_request,
            self.ips_per_request,
            self.client_error_ratio,
            self.denied_ratio,
            self.interarrival_cv,
        ]
    }
}
