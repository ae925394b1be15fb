//! Abuse that the limits see, at least when blatant: credential stuffing, scraping, SMS
//! pumping, id enumeration and low-and-slow password guessing. Each abuser draws its pace,
//! addresses and error shares from a wide range, from blatant (far over its limits) to
//! stealthy (slow, few addresses, few tell-tale errors), so the model meets abuse that
//! overlaps normal traffic. Parameters are listed in models/README.md.

use super::campaign;
use crate::simulate::normal::PRODUCTS;
use crate::simulate::script::Script;
use crate::simulate::tier::{self, Tier};

/// Password lists against `/login` for 10-40 min, each try from a random address of a proxy
/// pool: 0.03-2 a second (Poisson), 3-2,000 proxies, 60-97 % failures (0-10 % of them 403,
/// locked accounts; the rest 401).
pub fn credential_stuffing(s: &mut Script) -> Tier {
    let tier = tier::draw(s, [0.6, 0.3, 0.1]);
    let rate = s.log_uniform(0.03, 2.0);
    let pool = s.log_uniform(3.0, 2000.0) as usize;
    let failures = s.uniform(0.6, 0.97);
    let locked = s.uniform(0.0, 0.1);
    let proxies = s.addresses(pool);
    let (mut t, end) = campaign(s, 600.0, 2400.0);
    while t < end {
        let ip = s.pick(&proxies).to_string();
        let status = match s.status(failures, 401) {
            401 if s.chance(locked) => 403,
            status => status,
        };
        if !s.push(t, "/login", &ip, status) {
            break;
        }
        t += s.exponential(1.0 / rate);
    }
    tier
}

/// Copies the catalogue for 20-120 min at 0.03-1.5 pages a second, from 1-8 addresses in
/// turn: 30-100 % of pages in id order (the rest popular ones), 10 % reviews, 2-12 % 404;
/// half keep a regular pace (±50 %), half log-normal gaps (sigma 0.8).
pub fn scraper(s: &mut Script) -> Tier {
    let tier = tier::draw(s, [0.4, 0.4, 0.2]);
    let rate = s.log_uniform(0.03, 1.5);
    let count = s.between(1, 8);
    let addresses = s.addresses(count);
    let in_order = s.uniform(0.3, 1.0);
    let regular = s.chance(0.5);
    let missing = s.uniform(0.02, 0.12);
    let mut id = s.uniform(1.0, PRODUCTS as f64) as u64;
    let (mut t, end) = campaign(s, 1200.0, 7200.0);
    let mut turn = 0;
    while t < end {
        let endpoint = if s.chance(0.1) {
            format!("/api/reviews/{id}")
        } else if s.chance(in_order) {
            id += 1;
            format!("/products/{id}")
        } else {
            format!("/products/{}", s.popular(PRODUCTS))
        };
        let status = s.status(missing, 404);
        turn += 1;
        if !s.push(t, endpoint, &addresses[turn % addresses.len()], status) {
            break;
        }
        t += if regular {
            s.jittered(1.0 / rate, 0.5)
        } else {
            s.log_normal(1.0 / rate, 0.8)
        };
    }
    tier
}

/// SMS pumping to premium numbers for 20-120 min: `/sms/send` every 3-90 s (Poisson) from
/// 1-40 addresses; 10-30 % of calls are `/api/verify` with wrong codes (70-95 % 400). The
/// 10/h SMS limit denies most of the sends.
pub fn sms_pumping(s: &mut Script) -> Tier {
    let tier = tier::draw(s, [0.5, 0.4, 0.1]);
    let count = s.between(1, 40);
    let addresses = s.addresses(count);
    let mean_gap = s.log_uniform(3.0, 90.0);
    let verify = s.uniform(0.1, 0.3);
    let wrong = s.uniform(0.7, 0.95);
    let (mut t, end) = campaign(s, 1200.0, 7200.0);
    while t < end {
        let ip = s.pick(&addresses).to_string();
        let pushed = if s.chance(verify) {
            let status = s.status(wrong, 400);
            s.push(t, "/api/verify", &ip, status)
        } else {
            s.push(t, "/sms/send", &ip, 200)
        };
        if !pushed {
            break;
        }
        t += s.exponential(mean_gap);
    }
    tier
}

/// Enumerates `/api/users/{id}` in order for 15-60 min at 0.05-2 a second from 1-3
/// addresses: 30-80 % 404, 2-15 % 403; half keep a regular pace (±40 %), half Poisson.
pub fn id_enumeration(s: &mut Script) -> Tier {
    let tier = tier::draw(s, [0.4, 0.4, 0.2]);
    let count = s.between(1, 3);
    let addresses = s.addresses(count);
    let rate = s.log_uniform(0.05, 2.0);
    let missing = s.uniform(0.3, 0.8);
    let forbidden = s.uniform(0.02, 0.15);
    let regular = s.chance(0.5);
    let mut id = s.uniform(1000.0, 1_000_000.0) as u64;
    let (mut t, end) = campaign(s, 900.0, 3600.0);
    while t < end {
        id += 1;
        let status = match s.uniform(0.0, 1.0) {
            r if r < missing => 404,
            r if r < missing + forbidden => 403,
            _ => 200,
        };
        let ip = s.pick(&addresses).to_string();
        if !s.push(t, format!("/api/users/{id}"), &ip, status) {
            break;
        }
        t += if regular {
            s.jittered(1.0 / rate, 0.4)
        } else {
            s.exponential(1.0 / rate)
        };
    }
    tier
}

/// Password guessing against one account for the whole run, a try every 8-60 s (Poisson):
/// `/login` (80 %) or a password reset; 60-97 % 401. Half take a new address each try (a
/// residential proxy network), half reuse a pool of 20-500.
pub fn low_and_slow(s: &mut Script) -> Tier {
    let tier = tier::draw(s, [0.8, 0.2, 0.0]);
    let mean_gap = s.log_uniform(8.0, 60.0);
    let account = s.uniform(1000.0, 1_000_000.0) as u64;
    let failures = s.uniform(0.6, 0.97);
    let pool = if s.chance(0.5) {
        Vec::new()
    } else {
        let size = s.log_uniform(20.0, 500.0) as usize;
        s.addresses(size)
    };
    let mut t = s.exponential(mean_gap);
    while t < s.duration {
        let ip = if pool.is_empty() {
            s.address()
        } else {
            s.pick(&pool).to_string()
        };
        let endpoint = if s.chance(0.8) {
            "/login".to_string()
        } else {
            format!("/api/accounts/{account}/password")
        };
        let status = s.status(failures, 401);
        if !s.push(t, endpoint, &ip, status) {
            break;
        }
        t += s.exponential(mean_gap);
    }
    tier
}
