//! Abuse that stays under the limits: the policy never denies it, so only its shape gives
//! it away (failures, addresses, conflicts at a steady pace). Rates are drawn as a share of
//! what the subject's tier and endpoint rules allow. Parameters are listed in
//! models/README.md.

use crate::simulate::script::Script;
use crate::simulate::tier::{self, Tier};

/// Password lists against `/login` for the whole run at 15-60 % of the tier's hourly limit
/// (at most 1,500 an hour counted), Poisson, each try from one of 20-300 proxies (so each
/// address far under the login rule's 20 per 5 min); 80-95 % 401, 2-10 % 403, the rest
/// succeed; 5-15 % of requests fetch `/` to look like a browser.
pub fn slow_credential_stuffing(s: &mut Script) -> Tier {
    let tier = tier::draw(s, [0.5, 0.35, 0.15]);
    let per_hour = s.uniform(0.15, 0.6) * tier.hourly().min(1500.0);
    let count = s.log_uniform(20.0, 300.0) as usize;
    let proxies = s.addresses(count);
    let unauthorised = s.uniform(0.8, 0.95);
    let forbidden = s.uniform(0.02, 0.1);
    let decoys = s.uniform(0.05, 0.15);
    let mut t = s.exponential(3600.0 / per_hour);
    while t < s.duration {
        let ip = s.pick(&proxies).to_string();
        let pushed = if s.chance(decoys) {
            s.push(t, "/", &ip, 200)
        } else {
            let status = match s.uniform(0.0, 1.0) {
                r if r < unauthorised => 401,
                r if r < unauthorised + forbidden => 403,
                _ => 200,
            };
            s.push(t, "/login", &ip, status)
        };
        if !pushed {
            break;
        }
        t += s.exponential(3600.0 / per_hour);
    }
    tier
}

/// One subject's password guesses spread over 200-5,000 addresses at 10-70 an hour
/// (Poisson, under even the free tier's 100), the whole run: `/login` (70 %) or
/// `/api/password-reset`; 75-97 % 401, 0-5 % 403.
pub fn distributed_low_and_slow(s: &mut Script) -> Tier {
    let tier = tier::draw(s, [0.5, 0.35, 0.15]);
    let per_hour = s.log_uniform(10.0, 70.0);
    let count = s.log_uniform(200.0, 5000.0) as usize;
    let pool = s.addresses(count);
    let unauthorised = s.uniform(0.75, 0.97);
    let forbidden = s.uniform(0.0, 0.05);
    let mut t = s.exponential(3600.0 / per_hour);
    while t < s.duration {
        let ip = s.pick(&pool).to_string();
        let endpoint = if s.chance(0.7) {
            "/login"
        } else {
            "/api/password-reset"
        };
        let status = match s.uniform(0.0, 1.0) {
            r if r < unauthorised => 401,
            r if r < unauthorised + forbidden => 403,
            _ => 200,
        };
        if !s.push(t, endpoint, &ip, status) {
            break;
        }
        t += s.exponential(3600.0 / per_hour);
    }
    tier
}

/// A bot holding scarce items so others cannot buy them: for the whole run, at a steady
/// cadence (gaps within ±5-25 %) of 20-75 % of its binding rate, from 1-4 addresses, over
/// 3-20 scarce products: cart holds (`/api/cart/items`, 60 %), reservations
/// (`/api/reservations`, 15 %) and the product page (25 %); 30-80 % of holds and
/// reservations get 409 (sold out).
pub fn inventory_hoarding(s: &mut Script) -> Tier {
    let tier = tier::draw(s, [0.4, 0.4, 0.2]);
    let period = 1.0 / (tier.ceiling() * s.uniform(0.2, 0.75));
    let jitter = s.uniform(0.05, 0.25);
    let count = s.between(1, 4);
    let addresses = s.addresses(count);
    let items: Vec<u64> = (0..s.between(3, 20))
        .map(|_| s.uniform(1.0, 20_000.0) as u64)
        .collect();
    let sold_out = s.uniform(0.3, 0.8);
    let mut t = s.uniform(0.0, period);
    loop {
        let item = items[s.between(0, items.len() - 1)];
        let (endpoint, status) = match s.uniform(0.0, 1.0) {
            r if r < 0.6 => ("/api/cart/items".to_string(), s.status(sold_out, 409)),
            r if r < 0.75 => ("/api/reservations".to_string(), s.status(sold_out, 409)),
            _ => (format!("/products/{item}"), 200),
        };
        let ip = s.pick(&addresses).to_string();
        if !s.push(t, endpoint, &ip, status) {
            break;
        }
        t += s.jittered(period, jitter);
    }
    tier
}
