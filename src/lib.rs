//! ratewarden: an adaptive, anomaly-aware rate limiter.
//!
//! # Layout
//!
//! - [`clock`]: injected time, in microseconds since the epoch.
//! - [`algorithm`]: the five algorithms as pure functions of (state, now, rate, cost).
//! - [`policy`]: the policy file, compiled from YAML into types that cannot be invalid.
//! - [`store`]: where usage lives: the [`store::Store`] trait, the embedded store, and the Redis
//!   store (one Lua script per request; Redis Cluster; a primary named by Redis Sentinel).
//! - [`engine`]: resolves tier and endpoint rule, scales limits, and turns store outcomes
//!   into a [`engine::Decision`].
//! - [`features`]: per-subject access features (rates and ratios over the anomaly window).
//! - [`control`]: the control loop: load factor, features, abuse scores, standings.
//! - [`model`]: the abuse model (linfa): training, the model file, scoring.
//! - [`http`]: the HTTP adapter (axum): requests in, decisions out.
//! - [`metrics`]: the one Prometheus `Metrics` struct, passed down to whoever records.
//! - [`reload`]: policy hot reload (SIGHUP, file changes, admin API).
//! - [`daemon`]: `ratewarden serve`: wiring, background tasks, graceful shutdown.
//! - [`cli`]: the command line (`serve`, `check-policy`).

pub mod algorithm;
pub mod cli;
pub mod clock;
pub mod control;
pub mod daemon;
pub mod engine;
pub mod features;
pub mod http;
pub mod metrics;
pub mod model;
pub mod policy;
pub mod reload;
pub mod store;
