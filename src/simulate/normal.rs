//! Normal archetypes: what legitimate traffic looks like, including the kinds that look
//! bot-like to a naive rule (metronome pollers, high-volume integrations, retry storms,
//! many users sharing a NAT address). Parameters are listed in models/README.md.

use super::script::Script;

/// Catalogue size that browsing and scraping draw product ids from.
pub const PRODUCTS: u64 = 20_000;

/// Browsing sessions: a login, then pages separated by heavy-tailed think times (log-normal,
/// median 10 s, sigma 1.3, at most 10 min), some pages fetching one or two API calls right
/// after. 1 to 3 sessions of about 25 pages. 15 % of users hit dead links (4-15 % 404), 10 %
/// mistype their password 1-3 times per login, 30 % get an SMS code at login. `addresses`
/// are the user's (one or two at home; a NAT pool shared with other users behind
/// carrier-grade NAT, where a new connection may take another address).
pub fn browse(s: &mut Script, addresses: &[String]) {
    let sessions = 1 + usize::from(s.chance(0.5)) + usize::from(s.chance(0.2));
    // Some users follow many dead links, some forget their password, some use SMS 2FA.
    let not_found = if s.chance(0.15) {
        s.uniform(0.04, 0.15)
    } else {
        0.02
    };
    let forgetful = s.chance(0.1);
    let two_factor = s.chance(0.3);
    for _ in 0..sessions {
        let mut t = s.uniform(-300.0, s.duration);
        let mut ip = s.pick(addresses).to_string();
        let failures = if forgetful {
            s.uniform(1.0, 4.0) as usize
        } else {
            usize::from(s.chance(0.04))
        };
        for _ in 0..failures {
            s.push(t, "/login", &ip, 401);
            t += s.uniform(4.0, 15.0);
        }
        s.push(t, "/login", &ip, 200);
        if two_factor {
            t += s.uniform(1.0, 3.0);
            s.push(t, "/sms/send", &ip, 200);
            t += s.uniform(10.0, 40.0);
            s.push(t, "/api/verify", &ip, 200);
        }
        let pages = 5 + s.exponential(20.0).min(80.0) as usize;
        for _ in 0..pages {
            t += s.log_normal(10.0, 1.3).min(600.0);
            // Behind carrier-grade NAT a new connection may leave by another address.
            if addresses.len() > 1 && s.chance(0.1) {
                ip = s.pick(addresses).to_string();
            }
            let page = browse_page(s);
            let status = s.status(not_found, 404);
            if !s.push(t, page, &ip, status) {
                break;
            }
            if s.chance(0.4) {
                let calls = 1 + usize::from(s.chance(0.3));
                for _ in 0..calls {
                    let at = t + s.uniform(0.05, 0.4);
                    let call = if s.chance(0.5) {
                        "/api/recommendations"
                    } else {
                        "/api/cart/count"
                    };
                    s.push(at, call, &ip, 200);
                }
            }
        }
    }
}

fn browse_page(s: &mut Script) -> String {
    let roll = s.uniform(0.0, 1.0);
    match roll {
        r if r < 0.6 => format!("/products/{}", s.popular(PRODUCTS)),
        r if r < 0.7 => "/api/search".into(),
        r if r < 0.8 => "/cart".into(),
        r if r < 0.9 => "/".into(),
        r if r < 0.95 => format!("/api/reviews/{}", s.popular(PRODUCTS)),
        _ => "/account".into(),
    }
}

/// A mobile app polling `/api/notifications` every `period` seconds (±1 % scheduling jitter)
/// for the whole run, plus app opens (about every 20 min: 5 to 15 quick screens).
pub fn mobile_poll(s: &mut Script, period: f64) {
    let ip = s.address();
    let mut t = s.uniform(0.0, period);
    while s.push(t, "/api/notifications", &ip, 200) {
        t += s.jittered(period, 0.01);
    }
    let mut open = s.exponential(1200.0);
    while open < s.duration {
        let screens = s.uniform(5.0, 15.0) as usize;
        let mut at = open;
        for _ in 0..screens {
            at += s.log_normal(4.0, 0.8);
            let screen = format!("/api/feed/{}", s.popular(500));
            s.push(at, screen, &ip, 200);
        }
        open = at + s.exponential(1200.0);
    }
}

/// A server polling a job's status every `period` seconds with 0.5 % jitter: near-zero
/// variation of gaps, a few distinct endpoints (a new job every 2 to 10 min), no errors.
pub fn fast_poll(s: &mut Script, period: f64) {
    let ip = s.address();
    let mut t = s.uniform(0.0, period);
    let mut job = s.uniform(1000.0, 9000.0) as u64;
    let mut next_job = t + s.uniform(120.0, 600.0);
    while s.push(t, format!("/api/jobs/{job}/status"), &ip, 200) {
        t += s.jittered(period, 0.005);
        if t >= next_job {
            job += 1;
            next_job = t + s.uniform(120.0, 600.0);
        }
    }
}

/// A partner's steady integration: Poisson arrivals at `rate` per second from two egress
/// addresses; order lists and order details (half of the detail reads are new orders), some
/// inventory and search calls; 1 % 404, 0.5 % 409, plus `client_errors` of 422 (a
/// misconfigured client sends invalid orders).
pub fn integrate(s: &mut Script, rate: f64, client_errors: f64) {
    let egress = s.addresses(2);
    let mut order = s.uniform(100_000.0, 900_000.0) as u64;
    let mut t = s.exponential(1.0 / rate);
    loop {
        let roll = s.uniform(0.0, 1.0);
        let endpoint = match roll {
            r if r < 0.4 => "/api/orders".to_string(),
            r if r < 0.8 => {
                if s.chance(0.5) {
                    order += 1;
                }
                let back = s.uniform(0.0, 20.0) as u64;
                format!("/api/orders/{}", order.saturating_sub(back))
            }
            r if r < 0.95 => "/api/inventory".to_string(),
            _ => "/api/search".to_string(),
        };
        let status = match s.uniform(0.0, 1.0) {
            r if r < client_errors => 422,
            r if r < client_errors + 0.01 => 404,
            r if r < client_errors + 0.015 => 409,
            _ => 200,
        };
        let ip = s.pick(&egress).to_string();
        if !s.push(t, endpoint, &ip, status) {
            break;
        }
        t += s.exponential(1.0 / rate);
    }
}

/// An API client calling every `mean_gap` seconds (Poisson) that meets outages: two windows
/// of 1 to 4 min where 85 % of calls fail (503, or 429 from upstream); outside them 1 % fail.
/// A failed call is retried with exponential backoff (0.5 s doubling, ±20 %, 6 tries) or, for
/// a careless client, every 0.2 s up to 10 tries: bursts, errors and some denials.
pub fn retry_bursts(s: &mut Script, mean_gap: f64) {
    let ip = s.address();
    let careless = s.chance(0.3);
    let outages: Vec<(f64, f64)> = (0..2)
        .map(|_| {
            let from = s.uniform(0.0, s.duration);
            (from, from + s.uniform(60.0, 240.0))
        })
        .collect();
    let endpoints = ["/api/sync", "/api/orders", "/api/profile"];
    let mut t = s.exponential(mean_gap);
    'calls: while t < s.duration {
        let endpoint = endpoints[s.uniform(0.0, 3.0) as usize % 3];
        let mut at = t;
        for attempt in 0..if careless { 10 } else { 6 } {
            let outage = outages.iter().any(|(a, b)| (*a..*b).contains(&at));
            let failed = s.chance(if outage { 0.85 } else { 0.01 });
            let status = match (failed, s.chance(0.6)) {
                (false, _) => 200,
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
}
