//! The fleet's state in a shared Redis: [`FleetState`] over the store's activity lists, lease
//! and standings commands.

use super::fleet_state::{Bucket, FleetFuture, FleetState, ListTail, Published};
use crate::store::{Backend, RedisStore};
use std::time::Duration;

/// The fleet state of a store that daemons share (Redis), `None` for the embedded one.
pub fn fleet_for(backend: &Backend) -> Option<Box<dyn FleetState>> {
    backend
        .as_redis()
        .map(|store| Box::new(store.clone()) as Box<dyn FleetState>)
}

impl FleetState for RedisStore {
    fn append_activity<'a>(
        &'a self,
        bucket: Bucket,
        value: &'a [u8],
        ttl: Duration,
    ) -> FleetFuture<'a, ()> {
        Box::pin(RedisStore::append_activity(
            self,
            bucket.len,
            bucket.index,
            value,
            ttl,
        ))
    }

    fn activity_since<'a>(&'a self, from: &'a [(Bucket, usize)]) -> FleetFuture<'a, Vec<ListTail>> {
        Box::pin(async move {
            let from: Vec<_> = from
                .iter()
                .map(|(bucket, start)| (bucket.len, bucket.index, *start))
                .collect();
            RedisStore::activity_since(self, &from).await
        })
    }

    fn try_lead<'a>(&'a self, id: &'a str, ttl: Duration) -> FleetFuture<'a, bool> {
        Box::pin(RedisStore::try_lead(self, id, ttl))
    }

    fn publish_standings<'a>(
        &'a self,
        id: &'a str,
        generation: u64,
        value: &'a [u8],
        ttl: Duration,
    ) -> FleetFuture<'a, bool> {
        Box::pin(RedisStore::publish_standings(
            self, id, generation, value, ttl,
        ))
    }

    fn read_standings(&self) -> FleetFuture<'_, Option<Published>> {
        Box::pin(RedisStore::read_standings(self))
    }
}
