//! The tier store's hash (`<prefix>:tiers`): its key, and the TTL that every lookup or change
//! keeps alive without a `PEXPIRE` per request.

use super::RedisStore;
use crate::clock::Micros;
use redis::Pipeline;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long the tier hash (`<prefix>:tiers`) outlives its last lookup or change. Every store key
/// has a TTL; this one is operator data, so it is long and refreshed as it is used: daemons that
/// serve traffic look tiers up every few seconds (their local cache expires), so it only goes
/// after 30 days in which no daemon read or wrote a tier.
pub const TIER_STORE_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// A daemon's lookups refresh the tier hash's TTL at most once per this (a change always does):
/// not a `PEXPIRE` per request.
pub const TIER_TTL_REFRESH: Duration = Duration::from_secs(60);

impl RedisStore {
    /// Whether a lookup now should refresh the tier hash's TTL: once per [`TIER_TTL_REFRESH`]
    /// (the one lookup that finds it due does).
    pub(super) fn tier_refresh_due(&self) -> bool {
        let now = self.clock.as_ref().map_or_else(
            || {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(1, |d| d.as_micros() as Micros)
            },
            |c| c.now(),
        );
        let last = self.tiers_kept_at.load(Ordering::Relaxed);
        let every = crate::clock::micros(TIER_TTL_REFRESH);
        if last != 0 && now >= last && now - last < every {
            return false;
        }
        self.tiers_kept_at
            .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    pub(super) fn tiers_key(&self) -> String {
        format!("{}:tiers", self.prefix)
    }

    /// Adds to `pipe` the refresh of the tier hash's TTL, which a tier change (and a lookup
    /// once per [`TIER_TTL_REFRESH`]) sends in the same round trip: see [`TIER_STORE_TTL`].
    pub(super) fn keep_tiers(&self, pipe: &mut Pipeline) {
        pipe.cmd("PEXPIRE")
            .arg(self.tiers_key())
            .arg(TIER_STORE_TTL.as_millis() as u64)
            .ignore();
    }
}
