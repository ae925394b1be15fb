//! ratewarden: an adaptive, anomaly-aware rate limiter.
//!
//! # Layout
//!
//! - [`limit`]: what a limit is and what it is counted per: limits, rates, algorithms' names,
//!   subject and limit hashes (the bottom layer, with [`clock`]).
//! - [`clock`]: injected time, in microseconds since the epoch.
//! - [`algorithm`]: the five algorithms as pure functions of (state, now, rate, cost).
//! - [`policy`]: the policy file, compiled from YAML into types that cannot be invalid.
//! - [`envoy_config`]: envoyproxy/ratelimit configuration folders, compiled like the policy.
//! - [`store`]: where usage lives: the [`store::Store`] trait, the embedded store, and the Redis
//!   store (one Lua script per request; Redis Cluster; a primary named by Redis Sentinel).
//! - [`engine`]: resolves tier and endpoint rule, scales limits, and turns store outcomes
//!   into a [`engine::Decision`].
//! - [`features`]: per-subject access features (rates and ratios over the anomaly window).
//! - [`control`]: the control loop: load factor, features, abuse scores, standings.
//! - [`model`]: the abuse model (linfa): features in, abuse score in [0, 1] out; training.
//! - [`simulate`]: labelled synthetic traffic to train and test the model on.
//! - [`replay`]: recorded traffic (combined or JSON-lines logs) through the same engine and
//!   control loop on a simulated clock: what a policy and model would have done.
//! - [`http`]: the HTTP adapter (axum): requests in, decisions out.
//! - [`grpc`]: the gRPC adapter (tonic): Envoy's rate limit service, health and reflection.
//! - [`metrics`]: the one Prometheus `Metrics` struct, passed down to whoever records.
//! - [`reload`]: policy hot reload (SIGHUP, file changes, admin API).
//! - [`daemon`]: `ratewarden serve`: wiring, the HTTP server (head timeout and size cap),
//!   background tasks, graceful shutdown.
//! - [`cli`]: the command line (`serve`, `check-policy`, `simulate`, `train`, `replay`).

pub mod algorithm;
pub mod cli;
pub mod clock;
pub mod control;
pub mod daemon;
pub mod engine;
pub mod envoy_config;
pub mod features;
pub mod grpc;
pub mod http;
pub mod limit;
pub mod metrics;
pub mod model;
pub mod policy;
pub mod reload;
pub mod replay;
pub mod simulate;
pub mod store;
