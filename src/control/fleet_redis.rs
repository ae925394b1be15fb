//! The fleet's state in a shared Redis: [`FleetState`] over the store's activity, lease and
//! standings commands.
//!
//! The adapter between two layers: the store speaks plain counts and hashes, the control loop
//! speaks features' counters; the conversions are here, and nowhere else.

use super::fleet_state::{FleetFuture, FleetState, Published, WindowTotals};
use crate::clock::Micros;
use crate::features::{Counters, NewActivity};
use crate::limit::KeyHash;
use crate::store::{ActivityCounts, ActivityDelta, Backend, RedisStore, SharedTotals};
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
    ) -> FleetFuture<'a, Vec<WindowTotals>> {
        Box::pin(async move {
            let totals = self
                .activity_totals(subjects, first_bucket, last_bucket)
                .await?;
            Ok(totals.iter().map(window_totals).collect())
        })
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
    let c = &pending.counters;
    ActivityDelta {
        counts: ActivityCounts {
            requests: c.requests,
            denied: c.denied,
            reports: c.reports,
            client_errors: c.client_errors,
            first: c.first,
            last: c.last,
            gaps: c.gaps,
            gap_sum: c.gap_sum,
            gap_sum_sq: c.gap_sum_sq,
        },
        endpoints: &pending.endpoints,
        ips: &pending.ips,
    }
}

fn window_totals(totals: &SharedTotals) -> WindowTotals {
    let c = &totals.counts;
    WindowTotals {
        counters: Counters {
            requests: c.requests,
            denied: c.denied,
            reports: c.reports,
            client_errors: c.client_errors,
            first: c.first,
            last: c.last,
            gaps: c.gaps,
            gap_sum: c.gap_sum,
            gap_sum_sq: c.gap_sum_sq,
        },
        distinct_endpoints: totals.distinct_endpoints,
        distinct_ips: totals.distinct_ips,
    }
}
