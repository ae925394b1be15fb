//! Normal archetypes: what legitimate traffic looks like, including the kinds that look
//! bot-like to a naive rule (metronome pollers, heavy many-path integrations and catalogue
//! syncs, scheduled jobs at their limits, retry storms, many users sharing a NAT address).
//! Each subject draws its parameters from wide ranges and its tier among free, pro and
//! enterprise; machines run at a share of their own binding limit (see
//! [`Tier::ceiling`](super::tier::Tier::ceiling)).

mod everyday;
mod machines;
mod people;
mod retries;

pub use everyday::{Egress, bad_day, spread_addresses};
pub use machines::{batch_job, catalog_sync, fast_poller, integration};
pub use people::{browser, mobile_poller, nat_user};
pub use retries::retry_bursts;

/// Catalogue size that browsing and scraping draw product ids from.
pub const PRODUCTS: u64 = 20_000;
