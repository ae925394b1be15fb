//! The Redis store on a real 3-master Redis Cluster: keys spread over every master, decisions
//! exact per subject, batches across nodes, requests that mix a user and an IP subject
//! (applied subject by subject, refunded when a later subject denies), readiness, and three
//! daemons x 64 clients admitting exactly the limit.
//!
//! `tests/redis_cluster/` holds the parts: `support` (an engine on the cluster, which master
//! serves a key), `counting`, `all_or_nothing`, `tier_store` and `readiness`.

#[path = "redis_cluster/all_or_nothing.rs"]
mod all_or_nothing;
mod common;
#[path = "redis_cluster/counting.rs"]
mod counting;
#[path = "redis_cluster/readiness.rs"]
mod readiness;
#[path = "redis_cluster/support.rs"]
mod support;
#[path = "redis_cluster/tier_store.rs"]
mod tier_store;
