//! The gRPC adapter (tonic): Envoy's rate limit service (`ShouldRateLimit`), gRPC
//! health and server reflection, on `--grpc-listen`.
//!
//! It only translates: descriptors in to the engine, its decision back as statuses and
//! headers. Types come from the `envoy-types` crate; the
//! descriptors that reflection serves are cut by `build.rs` from the set that crate ships, so
//! they always describe exactly the types compiled in.

mod health;
mod response;
mod service;

use crate::engine::Engine;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::RateLimitServiceServer;
use futures_util::Stream;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpStream;

pub use service::RateLimitGrpc;

/// The encoded `FileDescriptorSet` of Envoy's `rls.proto` and its imports.
pub const RLS_DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/rls_descriptors.bin"));

/// The full name of the rate limit service, as health checks name it.
pub const SERVICE_NAME: &str = "envoy.service.ratelimit.v3.RateLimitService";

/// The largest `ShouldRateLimit` message read (tonic's default is 4 MiB). A descriptor costs
/// some 25 times its wire size once decoded, and the descriptor count is checked only then, so
/// the cap bounds the memory one call can take (about 25 MiB); Envoy's calls are a few KiB.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;

/// Why the gRPC server could not be built or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum GrpcError {
    #[error("gRPC reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("gRPC server failed: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Serves the rate limit service, health and reflection on the `connections` accepted until
/// `shutdown` resolves, then finishes the calls in flight.
pub async fn serve(
    connections: impl Stream<Item = std::io::Result<TcpStream>> + Send + 'static,
    engine: Arc<Engine>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), GrpcError> {
    let (reporter, _) = tonic_health::server::health_reporter();
    let (draining, drained) = tokio::sync::watch::channel(false);
    let health = tonic_health::pb::health_server::HealthServer::new(health::DrainingHealth::new(
        &reporter, drained,
    ));
    let status = health::check_once(&engine, &reporter).await;
    let readiness = tokio::spawn(health::track_readiness(
        engine.clone(),
        reporter.clone(),
        status,
    ));
    let tracking = readiness.abort_handle();
    let shutdown = async move {
        shutdown.await;
        // No readiness update may turn a watcher back to SERVING once it heard the stop.
        readiness.abort();
        let _ = readiness.await;
        health::drain(&reporter, &draining).await;
    };
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(RLS_DESCRIPTORS)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(RLS_DESCRIPTORS)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;
    let served = tonic::transport::Server::builder()
        .add_service(
            RateLimitServiceServer::new(RateLimitGrpc::new(engine))
                .max_decoding_message_size(MAX_REQUEST_BYTES),
        )
        .add_service(health)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .serve_with_incoming_shutdown(connections, shutdown)
        .await;
    tracking.abort();
    Ok(served?)
}
