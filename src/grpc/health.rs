//! gRPC health (`grpc.health.v1.Health`): `SERVING` when `/readyz` would answer 200, that is
//! while the store answers a ping (a policy is always loaded once the daemon runs).
//!
//! The health service answers from statuses it holds, so a task pings the store every second
//! and updates them, both for the whole server (`""`) and for the rate limit service.

use super::SERVICE_NAME;
use crate::engine::Engine;
use std::sync::Arc;
use std::time::Duration;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

const PERIOD: Duration = Duration::from_secs(1);

/// Pings the store once and publishes the result; returns it.
pub async fn check_once(engine: &Engine, reporter: &HealthReporter) -> ServingStatus {
    let status = status_of(engine).await;
    publish(reporter, status).await;
    status
}

async fn status_of(engine: &Engine) -> ServingStatus {
    match engine.ready().await {
        Ok(()) => ServingStatus::Serving,
        Err(_) => ServingStatus::NotServing,
    }
}

async fn publish(reporter: &HealthReporter, status: ServingStatus) {
    for service in ["", SERVICE_NAME] {
        reporter.set_service_status(service, status).await;
    }
}

/// Keeps the statuses current until aborted, starting from `published`. Only a change is
/// published: a `Watch` stream sends a message for each, and the health protocol sends one
/// only when the status changes.
pub async fn track_readiness(
    engine: Arc<Engine>,
    reporter: HealthReporter,
    mut published: ServingStatus,
) {
    let mut tick = tokio::time::interval(PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let status = status_of(&engine).await;
        if status != published {
            publish(&reporter, status).await;
            published = status;
        }
    }
}
