//! Envoy's rate limit service over gRPC (docs/reference/envoy.md), through a tonic client: native
//! descriptors, envoyproxy/ratelimit configuration fixtures, malformed requests, Redis
//! (concurrency, failure, health), the real binary (reload, shutdown), and a Python grpcio
//! client that discovers the service by reflection.

mod common;

#[path = "grpc/daemon.rs"]
mod daemon;
#[path = "grpc/envoy_counting.rs"]
mod envoy_counting;
#[path = "grpc/envoy_mode.rs"]
mod envoy_mode;
#[path = "grpc/harness.rs"]
mod harness;
#[path = "grpc/native_mode.rs"]
mod native_mode;
#[path = "grpc/python.rs"]
mod python;
#[path = "grpc/store.rs"]
mod store;
