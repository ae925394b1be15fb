//! Per-subject access features: what the abuse model sees of a subject's recent traffic.
//!
//! The request path records each decision (and each `/v1/report` status) into a
//! [`Recorder`]; every control cycle drains it into a windowed [`SubjectActivity`] per subject (in
//! process, or in the shared store so every daemon sees the same totals), and turns that into
//! [`Features`]. Features are rates and ratios normalised by the span actually observed, so a
//! model trained with one window length means the same with another.

mod activity;
mod lightest;
mod observed;
mod recorder;
mod sketch;
pub mod window;

pub use activity::{Counters, LimitOutcome, Sketch, SubjectActivity, features_of};
pub use observed::ObservedSubjects;
pub use recorder::{NewActivity, Recorder};
pub use window::ActivityWindow;

use serde::{Deserialize, Serialize};

/// The names of [`Features::to_array`]'s columns, in order (model files list them).
pub const FEATURE_NAMES: [&str; FEATURE_COUNT] = [
    "limit_usage",
    "denied_ratio",
    "endpoints_per_request",
    "ips_per_request",
    "auth_failure_ratio",
    "not_found_ratio",
    "other_client_error_ratio",
    "interarrival_cv",
    "client_error_ratio",
    "address_spread",
    "limit_demand",
];

pub const FEATURE_COUNT: usize = 11;

/// Where [`Features::limit_demand`] stops: a hundred times what the subject's limits allow.
pub const MAX_DEMAND: f64 = 100.0;

/// Every value each column can take (raw, before any transform), in [`FEATURE_NAMES`]' order.
pub const FEATURE_DOMAINS: [(f64, f64); FEATURE_COUNT] = [
    (0.0, 1.0),
    (0.0, 1.0),
    (0.0, 1.0),
    (0.0, 1.0),
    (0.0, 1.0),
    (0.0, 1.0),
    (0.0, 1.0),
    (0.0, MAX_CV),
    (0.0, 1.0),
    (0.0, 1.0),
    (0.0, MAX_DEMAND),
];

/// Columns whose largest possible value grows with the requests behind it: `address_spread`
/// reaches only `n / (n + 20)` after `n` requests. Their training maximum tells how busy the
/// busiest subject of that kind was, not how far its behaviour went (every request from a new
/// address), so a model counts them as seen up to their domain's top.
pub const TOP_SET_BY_REQUESTS: [usize; 1] = [9];

/// Requests' worth of doubt in [`Features::address_spread`]: a handful of addresses over a
/// handful of requests is no spread.
pub const ADDRESS_SPREAD_DOUBT: f64 = 20.0;

/// A subject's features over the anomaly window. Every one is a share or a shape, never an
/// absolute rate: how fast a subject may go is the policy's business (its tier and endpoint
/// limits), so speed enters only as `limit_usage`, relative to the subject's own limits, and
/// a heavy client within what its tier sells looks like a light one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Features {
    /// Mean over the requests of the share of the subject's most-used enforced limit, as
    /// written (before load or anomaly scaling), in use after each: 0 far from every limit,
    /// 1 at one.
    pub limit_usage: f64,
    /// Share of the subject's requests denied by the limits as written (not by the load or
    /// anomaly scaling).
    pub denied_ratio: f64,
    /// Distinct endpoints (paths) per request: scrapers and enumerators walk many.
    pub endpoints_per_request: f64,
    /// Distinct client addresses per request: high for traffic spread over many addresses.
    pub ips_per_request: f64,
    /// Share of reported upstream statuses (`/v1/report`) that were 401 or 403; 0 without
    /// reports.
    pub auth_failure_ratio: f64,
    /// Share of reported upstream statuses that were 404.
    pub not_found_ratio: f64,
    /// Share of reported upstream statuses that were another 4xx (400, 409, 422, 429, ...).
    pub other_client_error_ratio: f64,
    /// Coefficient of variation of the gaps between requests, the window's longest left out
    /// (0 = a metronome; about 1 for random arrivals), at most [`MAX_CV`]: bursts read as random.
    pub interarrival_cv: f64,
    /// Share of reported upstream statuses that were any 4xx: the three kinds above together.
    /// Abuse of every kind keeps doing what the API refuses; one kind alone says which abuse
    /// (and a model that weighs kinds apart knows only the kinds it was trained on).
    pub client_error_ratio: f64,
    /// Distinct client addresses per request, as if [`ADDRESS_SPREAD_DOUBT`] more requests had
    /// come from addresses already seen: `distinct / (requests + 20)`. Two or three egress
    /// addresses over a few dozen requests stay low; hundreds of addresses do not.
    pub address_spread: f64,
    /// How much the subject asks of its own limits: `limit_usage` plus, for each request the
    /// limits denied, the share of the denying limit's allowance over the anomaly window it
    /// asked for beyond it (a limit's requests for each of its windows the anomaly window
    /// spans, one window's worth when the anomaly window is shorter), at most [`MAX_DEMAND`].
    /// A client at 40 % of its quota and never refused asks 0.4; one at 115 % of an hourly
    /// quota, refused for the last minutes of the hour, about 1.2; one refused for a whole
    /// window at ten times a per-minute limit about 10. A burst refused a few times by an
    /// hourly quota adds a few hundredths: an hour's allowance is not judged by seconds.
    pub limit_demand: f64,
}

/// What the last control cycle computed for a subject active in the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SubjectFeatures {
    pub features: Features,
    /// Requests counted in the window (scored from `anomaly.min_requests` on).
    pub requests: u64,
}

/// Where the coefficient of variation is capped: random arrivals. Burstier timing reads the same,
/// because bursts and pauses are what an abuser can add at will (stopping and starting costs it
/// nothing): irregular timing may say "not a metronome", never "less abusive than random".
pub const MAX_CV: f64 = 1.0;

impl Features {
    /// The inverse of [`Features::to_array`]; `None` unless exactly the right count.
    pub fn from_slice(values: &[f64]) -> Option<Self> {
        let [a, b, c, d, e, f, g, h, i, j, k] = <[f64; FEATURE_COUNT]>::try_from(values).ok()?;
        Some(Self {
            limit_usage: a,
            denied_ratio: b,
            endpoints_per_request: c,
            ips_per_request: d,
            auth_failure_ratio: e,
            not_found_ratio: f,
            other_client_error_ratio: g,
            interarrival_cv: h,
            client_error_ratio: i,
            address_spread: j,
            limit_demand: k,
        })
    }

    pub fn to_array(&self) -> [f64; FEATURE_COUNT] {
        [
            self.limit_usage,
            self.denied_ratio,
            self.endpoints_per_request,
            self.ips_per_request,
            self.auth_failure_ratio,
            self.not_found_ratio,
            self.other_client_error_ratio,
            self.interarrival_cv,
            self.client_error_ratio,
            self.address_spread,
            self.limit_demand,
        ]
    }
}
