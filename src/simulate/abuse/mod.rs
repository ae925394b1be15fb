//! Abuse archetypes: loud ones the limits see when blatant (credential stuffing, scraping,
//! SMS pumping, id enumeration, low-and-slow guessing), each drawn from blatant to stealthy,
//! and quiet ones that stay under every limit (slow credential stuffing, distributed
//! low-and-slow guessing, inventory hoarding). Parameters are listed in models/README.md.

mod loud;
mod quiet;

pub use loud::{credential_stuffing, id_enumeration, low_and_slow, scraper, sms_pumping};
pub use quiet::{distributed_low_and_slow, inventory_hoarding, slow_credential_stuffing};

use super::script::Script;

/// A campaign's start and end: it starts in the first half of the run and lasts
/// `min_len..max_len` seconds (at least until the end for short runs).
fn campaign(s: &mut Script, min_len: f64, max_len: f64) -> (f64, f64) {
    let start = s.uniform(0.0, s.duration / 2.0);
    (start, start + s.uniform(min_len, max_len))
}
