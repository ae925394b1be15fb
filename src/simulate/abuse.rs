//! Abuse archetypes: credential stuffing, scraping, SMS pumping, id enumeration and
//! low-and-slow password guessing from many addresses. Each has a blatant and a stealthy
//! variant (40 % of abusers): slower, from fewer addresses, with fewer tell-tale errors, so
//! the model meets abuse that overlaps normal traffic. Parameters are listed in
//! models/README.md.

use super::normal::PRODUCTS;
use super::script::Script;

/// A campaign's start and end: it starts in the first half of the run and lasts
/// `min_len..max_len` seconds (at least until the end for short runs).
fn campaign(s: &mut Script, min_len: f64, max_len: f64) -> (f64, f64) {
    let start = s.uniform(0.0, s.duration / 2.0);
    (start, start + s.uniform(min_len, max_len))
}

/// Password lists against `/login`, each request from a random address of a proxy pool.
/// Blatant: 0.3 to 2 a second (Poisson), 50 to 2,000 proxies, 96 % 401. Stealthy: 0.05 to
/// 0.3 a second, 5 to 50 proxies, 70 to 95 % 401 (a list with many valid pairs).
pub fn credential_stuffing(s: &mut Script, stealthy: bool) {
    let (rate, pool, failures) = if stealthy {
        (
            s.uniform(0.05, 0.3),
            s.uniform(5.0, 50.0),
            s.uniform(0.7, 0.95),
        )
    } else {
        (s.uniform(0.3, 2.0), s.uniform(50.0, 2000.0), 0.96)
    };
    let proxies = s.addresses(pool as usize);
    let (mut t, end) = campaign(s, 600.0, 2400.0);
    while t < end {
        let ip = s.pick(&proxies).to_string();
        let status = s.status(failures, 401);
        if !s.push(t, "/login", &ip, status) {
            break;
        }
        t += s.exponential(1.0 / rate);
    }
}

/// Copies the catalogue, from 1 to 5 datacenter addresses in turn; 8 % 404. Blatant: in id
/// order at 0.2 to 1 page a second, gaps within ±50 % of the mean. Stealthy: 0.05 to 0.3 a
/// second with log-normal gaps (sigma 0.8), half the pages popular ones, one address.
pub fn scrape(s: &mut Script, stealthy: bool) {
    let count = if stealthy {
        1
    } else {
        s.uniform(1.0, 6.0) as usize
    };
    let addresses = s.addresses(count);
    let rate = if stealthy {
        s.uniform(0.05, 0.3)
    } else {
        s.uniform(0.2, 1.0)
    };
    let mut id = s.uniform(1.0, PRODUCTS as f64) as u64;
    let (mut t, end) = campaign(s, 1200.0, 7200.0);
    let mut turn = 0;
    while t < end {
        let endpoint = if s.chance(0.1) {
            format!("/api/reviews/{id}")
        } else if stealthy && s.chance(0.5) {
            format!("/products/{}", s.popular(PRODUCTS))
        } else {
            id += 1;
            format!("/products/{id}")
        };
        let status = s.status(0.08, 404);
        turn += 1;
        if !s.push(t, endpoint, &addresses[turn % addresses.len()], status) {
            break;
        }
        t += if stealthy {
            s.log_normal(1.0 / rate, 0.8)
        } else {
            s.jittered(1.0 / rate, 0.5)
        };
    }
}

/// SMS pumping: `/sms/send` to premium numbers (Poisson) from 1 to 30 addresses; a fifth of
/// the calls are `/api/verify` with wrong codes (90 % 400). Blatant: every 5 to 30 s.
/// Stealthy: every 20 to 60 s.
pub fn sms_pump(s: &mut Script, stealthy: bool) {
    let count = s.uniform(1.0, 31.0) as usize;
    let addresses = s.addresses(count);
    let mean_gap = if stealthy {
        s.uniform(20.0, 60.0)
    } else {
        s.uniform(5.0, 30.0)
    };
    let (mut t, end) = campaign(s, 1200.0, 7200.0);
    while t < end {
        let ip = s.pick(&addresses).to_string();
        let pushed = if s.chance(0.2) {
            let status = s.status(0.9, 400);
            s.push(t, "/api/verify", &ip, status)
        } else {
            s.push(t, "/sms/send", &ip, 200)
        };
        if !pushed {
            break;
        }
        t += s.exponential(mean_gap);
    }
}

/// Enumerates `/api/users/{id}` in order from one address; 5 % 403. Blatant: 0.5 to 2 a
/// second (gaps ±40 %), 70 % 404. Stealthy: 0.1 to 0.5 a second (Poisson), 40 % 404.
pub fn enumerate_ids(s: &mut Script, stealthy: bool) {
    let ip = s.address();
    let (rate, missing) = if stealthy {
        (s.uniform(0.1, 0.5), 0.4)
    } else {
        (s.uniform(0.5, 2.0), 0.7)
    };
    let mut id = s.uniform(1000.0, 1_000_000.0) as u64;
    let (mut t, end) = campaign(s, 900.0, 3600.0);
    while t < end {
        id += 1;
        let status = match s.uniform(0.0, 1.0) {
            r if r < missing => 404,
            r if r < missing + 0.05 => 403,
            _ => 200,
        };
        if !s.push(t, format!("/api/users/{id}"), &ip, status) {
            break;
        }
        t += if stealthy {
            s.exponential(1.0 / rate)
        } else {
            s.jittered(1.0 / rate, 0.4)
        };
    }
}

/// Low-and-slow guessing for the whole run, a try every 12 to 30 s on average (Poisson):
/// `/login` or a password reset. Blatant: each try from a new address (a residential proxy
/// network), 93 % 401. Stealthy: addresses reused from a pool of 20 to 500, 60 to 95 % 401.
pub fn low_and_slow(s: &mut Script, stealthy: bool) {
    let mean_gap = s.uniform(12.0, 30.0);
    let account = s.uniform(1000.0, 1_000_000.0) as u64;
    let (pool, failures) = if stealthy {
        let size = s.uniform(20.0, 500.0) as usize;
        (s.addresses(size), s.uniform(0.6, 0.95))
    } else {
        (Vec::new(), 0.93)
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
}
