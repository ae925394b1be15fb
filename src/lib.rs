//! ratewarden: an adaptive, anomaly-aware rate limiter.
//!
//! # Layout
//!
//! Lowest layer first (a module imports only from the layers above it in this list; see
//! `docs/architecture.md` and `tests/layering.rs`):
//!
//! - [`clock`]: injected time, in microseconds since the epoch.
//! - [`metrics`]: the one Prometheus `Metrics` struct, passed down; plain label values in.
//! - [`files`]: files a command reads and writes told apart (an output never replaces an input), and the byte-order mark every text reader skips.
//! - [`limit`]: what a limit is and what it is counted per: limits, rates, algorithms' names,
//!   subject and limit hashes.
//! - [`algorithm`]: the five algorithms as pure functions of (state, now, rate, cost).
//! - [`store`]: where usage lives: the [`store::Store`] trait, the embedded store, and the Redis
//!   store (one Lua function call per request; Redis Cluster; a primary named by Redis Sentinel).
//! - [`features`]: per-subject access features (rates and ratios over the anomaly window).
//! - [`yaml`]: the YAML toolkit both front-ends compile with (paths in errors, durations).
//! - [`policy`]: the policy file's YAML compiled into types that cannot be invalid.
//! - [`envoy_config`]: envoyproxy/ratelimit configuration files, compiled like the policy.
//! - [`rules`]: reads the policy file and its envoy folder from disk and compiles them.
//! - [`simulate`]: labelled synthetic traffic to train and test the model on.
//! - [`engine`]: the use cases (check, batch, descriptors, subject view, report): tier, plan,
//!   scaling, one atomic store request, the [`engine::Decision`], its metrics and features.
//! - [`logs`]: lines of recorded traffic (the JSON-lines format) parsed as `train` and `replay`
//!   both read them, and log timestamps.
//! - [`model`]: the abuse model (linfa): features in, abuse score in [0, 1] out; training.
//! - [`control`]: the control loop: load factor, features, abuse scores, standings.
//! - [`reload`]: policy hot reload (SIGHUP, file changes, admin API).
//! - [`ratelimit_headers`]: a decision's rate limit headers, for HTTP and gRPC alike.
//! - [`http`]: the HTTP adapter (axum): JSON and forward auth in, decisions out.
//! - [`grpc`]: the gRPC adapter (tonic): Envoy's rate limit service, health and reflection.
//! - [`replay`]: recorded traffic (combined or JSON-lines logs) through the same engine and
//!   control loop on a simulated clock: what a policy and model would have done.
//! - [`daemon`]: `ratewarden serve`: wiring, the HTTP server (head timeout and size cap),
//!   background tasks, graceful shutdown; [`daemon::run`] runs it in process.
//! - [`cli`]: the command line (`serve`, `check-policy`, `simulate`, `train`, `replay`).

pub mod algorithm;
pub mod cli;
pub mod clock;
pub mod control;
pub mod daemon;
pub mod engine;
pub mod envoy_config;
pub mod features;
pub mod files;
pub mod grpc;
pub mod http;
pub mod limit;
pub mod logs;
pub mod metrics;
pub mod model;
pub mod policy;
pub mod ratelimit_headers;
pub mod reload;
pub mod replay;
pub mod rules;
pub mod simulate;
pub mod store;
pub mod yaml;
