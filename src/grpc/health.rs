//! gRPC health (`grpc.health.v1.Health`): `SERVING` when `/readyz` would answer 200, that is
//! while the store answers a ping (a policy is always loaded once the daemon runs).
//!
//! The health service answers from statuses it holds, so a task pings the store every second
//! and updates them, both for the whole server (`""`) and for the rate limit service. When the
//! server drains, watchers hear `NOT_SERVING` and their streams end: a `Watch` never ends by
//! itself, and an open one would hold the stop up until its bound.

use super::SERVICE_NAME;
use crate::engine::Engine;
use futures_util::{Stream, StreamExt};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tonic::{Request, Response, Status};
use tonic_health::ServingStatus;
use tonic_health::pb::health_server::Health;
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tonic_health::server::{HealthReporter, HealthService};

const PERIOD: Duration = Duration::from_secs(1);

/// How long a watch stream stays open after draining begins: long enough to carry the
/// `NOT_SERVING` published just before.
const LAST_WORD: Duration = Duration::from_millis(100);

/// tonic's health service, with watch streams that end once `draining` turns true.
pub struct DrainingHealth {
    inner: HealthService,
    draining: tokio::sync::watch::Receiver<bool>,
}

impl DrainingHealth {
    pub fn new(reporter: &HealthReporter, draining: tokio::sync::watch::Receiver<bool>) -> Self {
        Self {
            inner: HealthService::from_health_reporter(reporter.clone()),
            draining,
        }
    }
}

#[tonic::async_trait]
impl Health for DrainingHealth {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        self.inner.check(request).await
    }

    type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let statuses = self.inner.watch(request).await?.into_inner();
        let mut draining = self.draining.clone();
        let drained = async move {
            // An error is a server gone: end the stream too.
            let _ = draining.wait_for(|d| *d).await;
            tokio::time::sleep(LAST_WORD).await;
        };
        Ok(Response::new(Box::pin(statuses.take_until(drained))))
    }
}

/// Tells watchers the server is going, then ends their streams.
pub async fn drain(reporter: &HealthReporter, draining: &tokio::sync::watch::Sender<bool>) {
    publish(reporter, ServingStatus::NotServing).await;
    let _ = draining.send(true);
}

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
