//! People at a browser or an app: sessions with heavy-tailed think times, many users behind
//! one carrier-grade NAT address, a phone polling in the background. Parameters are drawn
//! per user over wide ranges (idle to heavy) and listed in models/README.md.

use super::PRODUCTS;
use crate::simulate::script::{Errors, Script};
use crate::simulate::tier::{self, Tier};

/// A person at a browser, on any tier; one address, two for 15 %.
pub fn browser(s: &mut Script) -> Tier {
    let tier = tier::draw(s, [0.6, 0.28, 0.12]);
    let count = 1 + usize::from(s.chance(0.15));
    let home = s.addresses(count);
    browse(s, &home);
    tier
}

/// A person behind carrier-grade NAT: `pool` is shared with the other users of the group.
pub fn nat_user(s: &mut Script, pool: &[String]) -> Tier {
    let tier = tier::draw(s, [0.8, 0.15, 0.05]);
    browse(s, pool);
    tier
}

/// Browsing sessions: a login, then pages separated by log-normal think times, some pages
/// fetching API calls right after. Per user: 1-6 sessions (log-uniform), 3 + Exp(5-60)
/// pages each, think-time median 3-25 s (sigma 1.3, at most 10 min), 20-60 % of pages with
/// calls. Errors: 0.5-3 % 404 (4-15 % for 15 % of users: dead links), 2-10 % 409/422 when
/// adding to the cart (sold out, a bad form), 0-1 % 403 on account pages; 10 % mistype
/// their password 1-3 times per login, else 4 % once; 30 % get an SMS code at login.
pub fn browse(s: &mut Script, addresses: &[String]) {
    let sessions = s.log_uniform(1.0, 7.0) as usize;
    let pages_mean = s.log_uniform(5.0, 60.0);
    let think = s.log_uniform(3.0, 25.0);
    let calls_share = s.uniform(0.2, 0.6);
    let errors = Errors {
        auth: s.uniform(0.0, 0.01),
        not_found: if s.chance(0.15) {
            s.uniform(0.04, 0.15)
        } else {
            s.log_uniform(0.005, 0.03)
        },
        invalid: s.uniform(0.02, 0.10),
    };
    let forgetful = s.chance(0.1);
    let two_factor = s.chance(0.3);
    for _ in 0..sessions {
        let mut t = s.uniform(-300.0, s.duration);
        let mut ip = s.pick(addresses).to_string();
        let failures = if forgetful {
            s.between(1, 3)
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
        let pages = 3 + s.exponential(pages_mean).min(150.0) as usize;
        for _ in 0..pages {
            t += s.log_normal(think, 1.3).min(600.0);
            // Behind carrier-grade NAT a new connection may leave by another address.
            if addresses.len() > 1 && s.chance(0.1) {
                ip = s.pick(addresses).to_string();
            }
            if !page(s, t, &ip, errors) {
                break;
            }
            if s.chance(calls_share) {
                for _ in 0..1 + usize::from(s.chance(0.3)) {
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

/// One page view and its status; false past the end of the run.
fn page(s: &mut Script, t: f64, ip: &str, errors: Errors) -> bool {
    let roll = s.uniform(0.0, 1.0);
    let (path, status) = match roll {
        r if r < 0.55 => {
            let id = s.popular(PRODUCTS);
            (format!("/products/{id}"), s.status(errors.not_found, 404))
        }
        r if r < 0.65 => ("/api/search".into(), 200),
        r if r < 0.72 => ("/cart".into(), 200),
        r if r < 0.78 => {
            let status = if s.chance(errors.invalid) {
                [409, 422][usize::from(s.chance(0.4))]
            } else {
                200
            };
            ("/api/cart/items".into(), status)
        }
        r if r < 0.88 => ("/".into(), 200),
        r if r < 0.94 => {
            let id = s.popular(PRODUCTS);
            (
                format!("/api/reviews/{id}"),
                s.status(errors.not_found, 404),
            )
        }
        _ => ("/account".into(), s.status(errors.auth * 5.0, 403)),
    };
    s.push(t, path, ip, status)
}

/// A mobile app polling `/api/notifications` for the whole run, at a period by tier (free
/// 40-180 s, pro 10-90 s, enterprise 5-60 s, log-uniform) with 0.2-5 % jitter; app opens
/// every Exp(5-60 min) with 5-15 quick screens (0.5 % 404); its token expires every 15-60
/// min: one 401, then `/auth/refresh`.
pub fn mobile_poller(s: &mut Script) -> Tier {
    let tier = tier::draw(s, [0.45, 0.4, 0.15]);
    let period = match tier {
        Tier::Free => s.log_uniform(40.0, 180.0),
        Tier::Pro => s.log_uniform(10.0, 90.0),
        Tier::Enterprise => s.log_uniform(5.0, 60.0),
    };
    let jitter = s.log_uniform(0.002, 0.05);
    let opens = s.log_uniform(300.0, 3600.0);
    let token_life = s.uniform(900.0, 3600.0);
    let ip = s.address();
    let mut t = s.uniform(0.0, period);
    let mut expires = s.uniform(0.0, token_life);
    while t < s.duration {
        if t >= expires {
            s.push(t, "/api/notifications", &ip, 401);
            let refresh = t + s.uniform(0.1, 0.5);
            s.push(refresh, "/auth/refresh", &ip, 200);
            expires = t + token_life;
        } else {
            s.push(t, "/api/notifications", &ip, 200);
        }
        t += s.jittered(period, jitter);
    }
    let mut open = s.exponential(opens);
    while open < s.duration {
        let mut at = open;
        for _ in 0..s.between(5, 15) {
            at += s.log_normal(4.0, 0.8);
            let screen = format!("/api/feed/{}", s.popular(500));
            let status = s.status(0.005, 404);
            s.push(at, screen, &ip, status);
        }
        open = at + s.exponential(opens);
    }
    tier
}
