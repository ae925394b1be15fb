//! What the control loop needs from state the whole fleet shares: every daemon's activity
//! summed per subject, a lease that names one scorer, and the standings it published.
//!
//! A trait owned by the control loop, so the loop names no store backend: whoever opens the
//! store says whether a fleet exists (see [`super::fleet_redis`] for the Redis one).

use crate::clock::Micros;
use crate::features::NewActivity;
use crate::limit::KeyHash;
use crate::store::{SharedTotals, StoreError};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// What a [`FleetState`] call returns: boxed, so the trait can be a trait object.
pub type FleetFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Standings as published: their generation, and one text entry per subject.
pub type Published = (u64, Vec<(KeyHash, String)>);

/// Fleet-wide control state; every key it keeps expires by itself.
pub trait FleetState: Send + Sync {
    /// Adds one interval of this daemon's activity to the window bucket of `now` (bucket =
    /// `now / bucket_len`), kept for `ttl`, and marks the subjects active.
    fn flush_activity<'a>(
        &'a self,
        now: Micros,
        bucket_len: Micros,
        ttl: Duration,
        items: &'a [(KeyHash, NewActivity)],
    ) -> FleetFuture<'a, ()>;

    /// Subjects active since `since`; older ones are forgotten.
    fn active_subjects(&self, since: Micros) -> FleetFuture<'_, Vec<KeyHash>>;

    /// Each subject's buckets `first_bucket..=last_bucket` summed, in `subjects`' order.
    fn window_totals<'a>(
        &'a self,
        subjects: &'a [KeyHash],
        first_bucket: u64,
        last_bucket: u64,
    ) -> FleetFuture<'a, Vec<SharedTotals>>;

    /// Takes or renews the lease for `ttl`; `true` while this daemon (`id`) holds it.
    fn try_lead<'a>(&'a self, id: &'a str, ttl: Duration) -> FleetFuture<'a, bool>;

    /// Publishes standings (one text entry per subject) as `generation`, kept for `ttl`, and
    /// lets the previous generation expire within `lease`. `false`: `id` lost the lease.
    fn publish_standings<'a>(
        &'a self,
        id: &'a str,
        generation: u64,
        entries: &'a [(KeyHash, String)],
        ttl: Duration,
        lease: Duration,
    ) -> FleetFuture<'a, bool>;

    /// The latest published standings: (generation, entries), or `None` when none is live.
    fn read_standings(&self) -> FleetFuture<'_, Option<Published>>;
}
