//! The fleet's state in a shared Redis: [`FleetState`] over the store's activity, lease and
//! standings commands.
//!
//! The store speaks plain counts and hashes; the features count with the store's own counts
//! type, so nothing converts between them.

use super::fleet_state::{FleetFuture, FleetState, Published};
use crate::clock::Micros;
use crate::features::NewActivity;
use crate::limit::KeyHash;
use crate::store::{ActivityDelta, Backend, RedisStore, SharedTotals};
use std::time::Duration;

/// The fleet state of a store that daemons share (Redis), `None` for the embedded one.
pub fn fleet_for(backend: &Backend) -> Option<Box<dyn FleetState>> {
    backend
        .as_redis()
        .map(|store| Box::new(store.clone()) as Box<dyn FleetState>)
}

impl FleetState for RedisStore {
    fn flush_activity<'a>(
        &'a self,
        now: Micros,
        bucket_len: Micros,
        ttl: Duration,
        items: &'a [(KeyHash, NewActivity)],
    ) -> FleetFuture<'a, ()> {
        Box::pin(async move {
            let deltas: Vec<(KeyHash, ActivityDelta<'_>)> = items
                .iter()
                .map(|(subject, pending)| (*subject, delta(pending)))
                .collect();
            RedisStore::flush_activity(self, now, bucket_len, ttl, &deltas).await
        })
    }

    fn active_subjects(&self, since: Micros) -> FleetFuture<'_, Vec<KeyHash>> {
        Box::pin(RedisStore::active_subjects(self, since))
    }

    fn window_totals<'a>(
        &'a self,
        subjects: &'a [KeyHash],
        first_bucket: u64,
        last_bucket: u64,
    ) -> FleetFuture<'a, Vec<SharedTotals>> {
        Box::pin(self.activity_totals(subjects, first_bucket, last_bucket))
    }

    fn try_lead<'a>(&'a self, id: &'a str, ttl: Duration) -> FleetFuture<'a, bool> {
        Box::pin(RedisStore::try_lead(self, id, ttl))
    }

    fn publish_standings<'a>(
        &'a self,
        id: &'a str,
        generation: u64,
        entries: &'a [(KeyHash, String)],
        ttl: Duration,
        lease: Duration,
    ) -> FleetFuture<'a, bool> {
        Box::pin(RedisStore::publish_standings(
            self, id, generation, entries, ttl, lease,
        ))
    }

    fn read_standings(&self) -> FleetFuture<'_, Option<Published>> {
        Box::pin(RedisStore::read_standings(self))
    }
}

fn delta(pending: &NewActivity) -> ActivityDelta<'_> {
    ActivityDelta {
        counts: pending.counters,
        endpoints: &pending.endpoints,
        ips: &pending.ips,
    }
}
