//! The real binary on a real redis-server that crashes (SIGKILL) and comes back empty on the same
//! port: the daemon stays up, answers per `store.on_error` (allow, deny, local) with
//! `degraded: true`, reports the store down on /readyz and in the metrics, and follows Redis
//! again within 2 s of its return. Also when it starts while Redis is down.
//!
//! `tests/redis_failure/` holds the parts: `client` (HTTP to the daemon, metrics, polling),
//! `modes` (the `on_error` modes, their policy and expected answers), `outage` (Redis killed
//! under traffic, and at start-up) and `logging` (the start-up line, outage log lines).

#[path = "redis_failure/client.rs"]
mod client;
mod common;
#[path = "redis_failure/logging.rs"]
mod logging;
#[path = "redis_failure/modes.rs"]
mod modes;
#[path = "redis_failure/outage.rs"]
mod outage;
