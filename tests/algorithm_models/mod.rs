//! Reference models of the five algorithms, written from the spec and not from `src/algorithm`.
//!
//! Each model reduces an algorithm to one number, its `usage` at a time: the whole units of
//! the limit still counted against the key. Every algorithm then answers the same way: a
//! request passes iff `usage + cost <= limit`, and `remaining` follows from `usage`. The models
//! favour obvious simulations (full histories, token-by-token refills) over clever formulas.

use ratewarden::limit::{Algorithm, Rate};

pub trait Model {
    /// Records `cost` at `now`; times never go backwards.
    fn record(&mut self, now: u64, cost: u64);
    /// Whole units of the limit still counted at `now`, with nothing recorded after `now`.
    fn usage(&self, now: u64) -> u64;
    /// A copy to try a hypothetical request on.
    fn fork(&self) -> Box<dyn Model>;
}

pub fn model_for(rate: &Rate) -> Box<dyn Model> {
    let window = rate.window;
    let interval = window.div_ceil(rate.requests.max(1));
    match rate.algorithm {
        Algorithm::SlidingLog => Box::new(SlidingLogModel {
            window,
            history: Vec::new(),
        }),
        Algorithm::SlidingWindow => Box::new(SlidingWindowModel {
            window,
            history: Vec::new(),
        }),
        Algorithm::FixedWindow => Box::new(FixedWindowModel {
            window,
            history: Vec::new(),
        }),
        Algorithm::TokenBucket => Box::new(TokenBucketModel {
            interval,
            used: 0,
            next_token_at: 0,
        }),
        Algorithm::Gcra => Box::new(LeakyBucketModel {
            interval,
            level: 0,
            last: 0,
        }),
    }
}

/// What every algorithm must answer, given the model's usage: (allowed, remaining).
pub fn expected(usage: u64, limit: u64, cost: u64) -> (bool, u64) {
    if cost <= limit && usage + cost <= limit {
        (true, limit - usage - cost)
    } else {
        (false, limit.saturating_sub(usage))
    }
}

/// Sum of the costs whose time satisfies `keep`.
fn cost_where(history: &[(u64, u64)], keep: impl Fn(u64) -> bool) -> u64 {
    history
        .iter()
        .filter(|(t, _)| keep(*t))
        .map(|(_, c)| c)
        .sum()
}

#[derive(Clone)]
struct SlidingLogModel {
    window: u64,
    history: Vec<(u64, u64)>,
}

impl Model for SlidingLogModel {
    fn fork(&self) -> Box<dyn Model> {
        Box::new(self.clone())
    }

    fn record(&mut self, now: u64, cost: u64) {
        self.history.push((now, cost));
    }

    fn usage(&self, now: u64) -> u64 {
        // `t > now - window`, written without subtraction so it holds near time 0 too.
        cost_where(&self.history, |t| t + self.window > now)
    }
}

#[derive(Clone)]
struct SlidingWindowModel {
    window: u64,
    history: Vec<(u64, u64)>,
}

impl Model for SlidingWindowModel {
    fn fork(&self) -> Box<dyn Model> {
        Box::new(self.clone())
    }

    fn record(&mut self, now: u64, cost: u64) {
        self.history.push((now, cost));
    }

    fn usage(&self, now: u64) -> u64 {
        let w = self.window;
        let start = now / w * w;
        let previous = cost_where(&self.history, |t| t + w >= start && t < start);
        let current = cost_where(&self.history, |t| t >= start);
        let elapsed = now - start;
        // The estimate previous × (w − elapsed) / w + current, rounded up: a request of
        // whole cost fits under a whole limit iff it fits under the exact estimate.
        let scaled =
            u128::from(previous) * u128::from(w - elapsed) + u128::from(current) * u128::from(w);
        u64::try_from(scaled.div_ceil(u128::from(w))).unwrap()
    }
}

#[derive(Clone)]
struct FixedWindowModel {
    window: u64,
    history: Vec<(u64, u64)>,
}

impl Model for FixedWindowModel {
    fn fork(&self) -> Box<dyn Model> {
        Box::new(self.clone())
    }

    fn record(&mut self, now: u64, cost: u64) {
        self.history.push((now, cost));
    }

    fn usage(&self, now: u64) -> u64 {
        let start = now / self.window * self.window;
        cost_where(&self.history, |t| t >= start)
    }
}

/// Counts tokens taken rather than tokens left, so a smaller burst sees the same usage.
#[derive(Clone)]
struct TokenBucketModel {
    interval: u64,
    used: u64,
    /// When the next token comes back; meaningless while the bucket is full.
    next_token_at: u64,
}

impl TokenBucketModel {
    fn refill_until(&mut self, now: u64) {
        while self.used > 0 && self.next_token_at <= now {
            self.used -= 1;
            self.next_token_at += self.interval;
        }
    }
}

impl Model for TokenBucketModel {
    fn fork(&self) -> Box<dyn Model> {
        Box::new(self.clone())
    }

    fn record(&mut self, now: u64, cost: u64) {
        self.refill_until(now);
        // A full bucket has no refill in progress: the clock starts with the first token taken.
        if self.used == 0 {
            self.next_token_at = now + self.interval;
        }
        self.used += cost;
    }

    fn usage(&self, now: u64) -> u64 {
        let mut bucket = self.clone();
        bucket.refill_until(now);
        bucket.used
    }
}

/// GCRA in its leaky-bucket form: each unit of cost pours `interval` µs of water in, which
/// drains at one µs per µs. Same admissions as the TAT rule, computed the other way round.
#[derive(Clone)]
struct LeakyBucketModel {
    interval: u64,
    level: u64,
    last: u64,
}

impl LeakyBucketModel {
    fn level_at(&self, now: u64) -> u64 {
        self.level.saturating_sub(now - self.last)
    }
}

impl Model for LeakyBucketModel {
    fn fork(&self) -> Box<dyn Model> {
        Box::new(self.clone())
    }

    fn record(&mut self, now: u64, cost: u64) {
        self.level = self.level_at(now) + cost * self.interval;
        self.last = now;
    }

    fn usage(&self, now: u64) -> u64 {
        self.level_at(now).div_ceil(self.interval)
    }
}
