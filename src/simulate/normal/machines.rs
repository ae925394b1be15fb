//! Servers calling the API: pollers, partner integrations, catalogue syncs and scheduled
//! batch jobs. Fast, regular and often many-path, up to their own binding limit (see
//! [`Tier::ceiling`]): heavy use within one's limits is normal. Parameters are listed in
//! models/README.md.

use crate::simulate::script::Script;
use crate::simulate::tier::{self, Tier};

/// A server polling a job's status at 3-95 % of its tier's binding rate (log-uniform; one
/// in ten at 95-115 %) with 0.1-2 % jitter; a new job every 2-10 min; 0-0.5 % 404 (a job
/// deleted), a rare 401 (a rotated key).
pub fn fast_poller(s: &mut Script) -> Tier {
    let tier = tier::draw(s, [0.2, 0.45, 0.35]);
    let period = 1.0 / (tier.ceiling() * tier::utilisation(s, 0.03, 0.95));
    let jitter = s.log_uniform(0.001, 0.02);
    let gone = s.uniform(0.0, 0.005);
    let ip = s.address();
    let mut t = s.uniform(0.0, period);
    let mut job = s.uniform(1000.0, 9000.0) as u64;
    let mut next_job = t + s.uniform(120.0, 600.0);
    loop {
        let status = match s.uniform(0.0, 1.0) {
            r if r < gone => 404,
            r if r < gone + 0.0005 => 401,
            _ => 200,
        };
        if !s.push(t, format!("/api/jobs/{job}/status"), &ip, status) {
            break;
        }
        t += s.jittered(period, jitter);
        if t >= next_job {
            job += 1;
            next_job = t + s.uniform(120.0, 600.0);
        }
    }
    tier
}

/// A partner's integration: Poisson arrivals at 2-90 % of the binding rate (one in ten at
/// 95-115 %) from 1-3 egress addresses; order lists, order details (half of them new
/// orders), inventory and search; a well-behaved client's errors. 10 % are misconfigured:
/// 10-40 % more rejected payloads (400, 409 or 422) on top.
pub fn integration(s: &mut Script) -> Tier {
    let tier = tier::draw(s, [0.1, 0.45, 0.45]);
    let rate = tier.ceiling() * tier::utilisation(s, 0.02, 0.9);
    let mut errors = s.client_errors();
    let misconfigured = if s.chance(0.1) {
        s.uniform(0.1, 0.4)
    } else {
        0.0
    };
    errors.invalid += misconfigured;
    let count = s.between(1, 3);
    let egress = s.addresses(count);
    let mut order = s.uniform(100_000.0, 900_000.0) as u64;
    let mut t = s.exponential(1.0 / rate);
    loop {
        let endpoint = match s.uniform(0.0, 1.0) {
            r if r < 0.4 => "/api/orders".to_string(),
            r if r < 0.8 => {
                if s.chance(0.5) {
                    order += 1;
                }
                let back = s.uniform(0.0, 20.0) as u64;
                format!("/api/orders/{}", order.saturating_sub(back))
            }
            r if r < 0.97 => "/api/inventory".to_string(),
            _ => "/api/search".to_string(),
        };
        let status = s.outcome(errors);
        let ip = s.pick(&egress).to_string();
        if !s.push(t, endpoint, &ip, status) {
            break;
        }
        t += s.exponential(1.0 / rate);
    }
    tier
}

/// A partner server mirroring the catalogue: walks product ids upwards (step 1-3), a
/// listing page every 50 items, at a steady pace (gaps within ±5-30 %) at 10-95 % of its
/// binding rate (one in ten at 95-115 %), from 1-2 egress addresses; 0.5-3 % 404 (ids
/// that were deleted), a well-behaved client's other errors; pro or enterprise.
pub fn catalog_sync(s: &mut Script) -> Tier {
    let tier = tier::draw(s, [0.0, 0.5, 0.5]);
    let period = 1.0 / (tier.ceiling() * tier::utilisation(s, 0.1, 0.95));
    let jitter = s.uniform(0.05, 0.3);
    let mut errors = s.client_errors();
    errors.not_found = s.uniform(0.005, 0.03);
    let count = s.between(1, 2);
    let egress = s.addresses(count);
    let mut id = s.uniform(1.0, 1_000_000.0) as u64;
    let mut walked = 0u64;
    let mut t = s.uniform(0.0, period);
    loop {
        let endpoint = if walked % 50 == 0 {
            format!("/api/catalog/pages/{}", id / 50)
        } else {
            format!("/api/products/{id}")
        };
        id += s.between(1, 3) as u64;
        walked += 1;
        let status = s.outcome(errors);
        let ip = s.pick(&egress).to_string();
        if !s.push(t, endpoint, &ip, status) {
            break;
        }
        t += s.jittered(period, jitter);
    }
    tier
}

/// A scheduled job: every 10-30 min a run of 1-6 min at 60-110 % of the default endpoint
/// rule's 50 a minute (free: of its 20 a minute burst, for at most a minute), so the
/// heaviest meet their limits and get some denials, then idle. A run exports once
/// (`/api/export`), then uploads invoices with rising ids and reads reports; 0.5-2 % 404,
/// 0-2 % 409 (a duplicate upload), a well-behaved client's other errors.
pub fn batch_job(s: &mut Script) -> Tier {
    let tier = tier::draw(s, [0.1, 0.5, 0.4]);
    let (per_minute, longest): (f64, f64) = match tier {
        Tier::Free => (20.0, 60.0),
        _ => (50.0, 360.0),
    };
    let rate = per_minute / 60.0 * s.uniform(0.6, 1.1);
    let every = s.uniform(600.0, 1800.0);
    let length = s.uniform(60.0, longest.max(60.0));
    let mut errors = s.client_errors();
    errors.not_found = s.uniform(0.005, 0.02);
    let conflicts = s.uniform(0.0, 0.02);
    let ip = s.address();
    let mut invoice = s.uniform(10_000.0, 90_000.0) as u64;
    let mut start = s.uniform(0.0, every);
    while start < s.duration {
        s.push(start, "/api/export", &ip, 200);
        let mut t = start + s.uniform(1.0, 5.0);
        while t < start + length {
            let endpoint = if s.chance(0.7) {
                invoice += 1;
                format!("/api/invoices/{invoice}")
            } else {
                format!("/api/reports/{}", s.between(1, 31))
            };
            let status = if s.chance(conflicts) {
                409
            } else {
                s.outcome(errors)
            };
            if !s.push(t, endpoint, &ip, status) {
                break;
            }
            t += s.exponential(1.0 / rate);
        }
        start += s.jittered(every, 0.05);
    }
    tier
}
