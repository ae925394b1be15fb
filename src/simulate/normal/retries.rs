//! API clients that meet outages and retry through them: bursts, errors and some denials
//! from a legitimate client. Parameters are listed in models/README.md.

use crate::simulate::script::Script;
use crate::simulate::tier::{self, Tier};

/// Poisson calls at 3-50 % of the binding rate that meet 1-3 outages of 1-5 min where 85 %
/// of calls fail (503, or 429 from upstream); outside them a well-behaved client's errors.
/// A failed call is retried with exponential backoff (0.5 s doubling, ±20 %, 6 tries) or,
/// for a careless client (30 %), every 0.2 s up to 10 tries.
pub fn retry_bursts(s: &mut Script) -> Tier {
    let tier = tier::draw(s, [0.4, 0.4, 0.2]);
    let mean_gap = 1.0 / (tier.ceiling() * s.log_uniform(0.03, 0.5));
    let ip = s.address();
    let careless = s.chance(0.3);
    let errors = s.client_errors();
    let outages: Vec<(f64, f64)> = (0..s.between(1, 3))
        .map(|_| {
            let from = s.uniform(0.0, s.duration);
            (from, from + s.uniform(60.0, 300.0))
        })
        .collect();
    let endpoints = ["/api/sync", "/api/orders", "/api/profile"];
    let mut t = s.exponential(mean_gap);
    'calls: while t < s.duration {
        let endpoint = endpoints[s.between(0, 2)];
        let mut at = t;
        for attempt in 0..if careless { 10 } else { 6 } {
            let outage = outages.iter().any(|(a, b)| (*a..*b).contains(&at));
            let failed = outage && s.chance(0.85);
            let status = match (failed, s.chance(0.6)) {
                (false, _) => s.outcome(errors),
                (true, true) => 503,
                (true, false) => 429,
            };
            if !s.push(at, endpoint, &ip, status) {
                break 'calls;
            }
            if !failed {
                break;
            }
            at += if careless {
                0.2
            } else {
                s.jittered(0.5 * f64::from(1u32 << attempt), 0.2)
            };
        }
        t = at + s.exponential(mean_gap);
    }
    tier
}
