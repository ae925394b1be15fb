//! One simulated subject's requests as it is being written: its random source, its clock
//! span, and the helpers archetypes draw from (heavy-tailed gaps, addresses, statuses).
//!
//! Parameters are drawn per subject from wide ranges (often log-uniform, so a range such as
//! 1 % to 95 % of a limit has as many idle subjects as heavy ones), so one seed covers a
//! kind of client from idle to heavy.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal, Zipf};

/// One request, `at` seconds after the simulation's start.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub at: f64,
    pub endpoint: String,
    pub ip: String,
    pub status: u16,
}

pub struct Script {
    pub rng: ChaCha8Rng,
    /// Length of the simulation in seconds; requests at or past it are dropped.
    pub duration: f64,
    pub events: Vec<Event>,
}

impl Script {
    pub fn new(rng: ChaCha8Rng, duration: f64) -> Self {
        Script {
            rng,
            duration,
            events: Vec::new(),
        }
    }

    /// Records a request; false once `at` is past the end (callers stop there).
    pub fn push(&mut self, at: f64, endpoint: impl Into<String>, ip: &str, status: u16) -> bool {
        if !(0.0..self.duration).contains(&at) {
            return at < self.duration;
        }
        self.events.push(Event {
            at,
            endpoint: endpoint.into(),
            ip: ip.to_string(),
            status,
        });
        true
    }

    /// Drops the requests past `limit` in any `window` seconds: a person whose quota is spent
    /// sees refusals and comes back later (only abusers keep hammering a refusing API).
    pub fn give_up_past(&mut self, limit: usize, window: f64) {
        self.events.sort_by(|a, b| a.at.total_cmp(&b.at));
        let mut kept: std::collections::VecDeque<f64> = std::collections::VecDeque::new();
        self.events.retain(|e| {
            while kept.front().is_some_and(|&t| t <= e.at - window) {
                kept.pop_front();
            }
            let keep = kept.len() < limit;
            if keep {
                kept.push_back(e.at);
            }
            keep
        });
    }

    pub fn uniform(&mut self, low: f64, high: f64) -> f64 {
        if high <= low {
            return low;
        }
        self.rng.random_range(low..high)
    }

    /// A value between `low` and `high` whose logarithm is uniform (both must be positive).
    pub fn log_uniform(&mut self, low: f64, high: f64) -> f64 {
        self.uniform(low.ln(), high.ln()).exp()
    }

    /// A whole number in `low..=high`.
    pub fn between(&mut self, low: usize, high: usize) -> usize {
        self.rng.random_range(low..=high.max(low))
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p.clamp(0.0, 1.0))
    }

    /// An exponential gap with this mean (Poisson arrivals).
    pub fn exponential(&mut self, mean: f64) -> f64 {
        let u: f64 = self.rng.random();
        -mean * (1.0 - u).ln()
    }

    /// A log-normal gap with this median: heavy-tailed think times.
    pub fn log_normal(&mut self, median: f64, sigma: f64) -> f64 {
        LogNormal::new(median.ln(), sigma).map_or(median, |d| d.sample(&mut self.rng))
    }

    /// A gap of `mean` seconds, off by at most `jitter` of it either way.
    pub fn jittered(&mut self, mean: f64, jitter: f64) -> f64 {
        mean * (1.0 + self.uniform(-jitter, jitter))
    }

    /// A popularity-ranked id in 1..=n (a few items draw most views).
    pub fn popular(&mut self, n: u64) -> u64 {
        Zipf::new(n as f64, 1.1).map_or(1, |d| d.sample(&mut self.rng) as u64)
    }

    pub fn pick<'a>(&mut self, items: &'a [String]) -> &'a str {
        &items[self.rng.random_range(0..items.len())]
    }

    /// A random public-looking IPv4 address.
    pub fn address(&mut self) -> String {
        let first = self.rng.random_range(11u8..=223);
        let rest: [u8; 3] = self.rng.random();
        format!("{first}.{}.{}.{}", rest[0], rest[1], rest[2])
    }

    pub fn addresses(&mut self, n: usize) -> Vec<String> {
        (0..n.max(1)).map(|_| self.address()).collect()
    }

    /// A status: `error` with probability `p`, else 200.
    pub fn status(&mut self, p: f64, error: u16) -> u16 {
        if self.chance(p) { error } else { 200 }
    }

    /// An upstream status drawn from `errors`, else 200.
    pub fn outcome(&mut self, errors: Errors) -> u16 {
        let roll = self.uniform(0.0, 1.0);
        if roll < errors.auth {
            if self.chance(0.2) { 403 } else { 401 }
        } else if roll < errors.auth + errors.not_found {
            404
        } else if roll < errors.auth + errors.not_found + errors.invalid {
            [400, 409, 422][self.rng.random_range(0..3)]
        } else {
            200
        }
    }

    /// A well-behaved API client's error shares: an expired token now and then (0.05-0.5 %
    /// 401/403), stale ids (0.2-2 % 404), rejected payloads (0.1-1 % 400/409/422).
    pub fn client_errors(&mut self) -> Errors {
        Errors {
            auth: self.log_uniform(0.0005, 0.005),
            not_found: self.log_uniform(0.002, 0.02),
            invalid: self.log_uniform(0.001, 0.01),
        }
    }
}

/// Shares of a subject's requests that fail upstream, by kind; the rest get 200.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Errors {
    /// 401, or 403 for a fifth of them.
    pub auth: f64,
    /// 404.
    pub not_found: f64,
    /// 400, 409 or 422 in equal parts.
    pub invalid: f64,
}
