//! What the control loop needs from state the whole fleet shares: every daemon's activity,
//! appended as one value per interval to the list of a window bucket; a lease that names one
//! scorer; and the standings it published, as one value.
//!
//! A trait owned by the control loop, so the loop names no store backend: whoever opens the
//! store says whether a fleet exists (see [`super::fleet_redis`] for the Redis one). Values are
//! opaque bytes (see [`super::fleet_codec`]), so each call is a few commands whatever the
//! number of subjects.

use crate::clock::Micros;
use crate::store::StoreError;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// What a [`FleetState`] call returns: boxed, so the trait can be a trait object.
pub type FleetFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Standings as published: their generation, and the value.
pub type Published = (u64, Vec<u8>);

/// One window bucket: `index` = time / `len` (µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bucket {
    pub len: Micros,
    pub index: u64,
}

/// The values of a bucket's list from the index asked for on, and the list's length.
pub type ListTail = (usize, Vec<Vec<u8>>);

/// Fleet-wide control state; every key it keeps expires by itself.
pub trait FleetState: Send + Sync {
    /// Appends one value (a daemon's activity of one interval) to `bucket`'s list, kept for
    /// `ttl`.
    fn append_activity<'a>(
        &'a self,
        bucket: Bucket,
        value: &'a [u8],
        ttl: Duration,
    ) -> FleetFuture<'a, ()>;

    /// For each `(bucket, from)`, in order, the bucket's values from index `from` on.
    fn activity_since<'a>(&'a self, from: &'a [(Bucket, usize)]) -> FleetFuture<'a, Vec<ListTail>>;

    /// Takes or renews the lease for `ttl`; `true` while this daemon (`id`) holds it.
    fn try_lead<'a>(&'a self, id: &'a str, ttl: Duration) -> FleetFuture<'a, bool>;

    /// Publishes the standings (one value) as `generation`, kept for `ttl`, if `id` still
    /// holds the lease and the generation is newer. `false`: `id` lost the lease.
    fn publish_standings<'a>(
        &'a self,
        id: &'a str,
        generation: u64,
        value: &'a [u8],
        ttl: Duration,
    ) -> FleetFuture<'a, bool>;

    /// The latest published standings, or `None` when none is live.
    fn read_standings(&self) -> FleetFuture<'_, Option<Published>>;
}
