//! ratewarden: an adaptive, anomaly-aware rate limiter.
//!
//! # Layout
//!
//! - [`clock`]: injected time, in microseconds since the epoch.
//! - [`algorithm`]: the five algorithms as pure functions of (state, now, rate, cost).
//! - [`policy`]: the policy file, compiled from YAML into types that cannot be invalid.
//! - [`store`]: where usage lives; the [`store::Store`] trait and the embedded store.
//! - [`engine`]: resolves tier and endpoint rule, scales limits, and turns store outcomes
//!   into a [`engine::Decision`].
//! - [`http`]: the HTTP adapter (axum): requests in, decisions out.
//! - [`daemon`]: `ratewarden serve`: wiring, policy reload, graceful shutdown.
//! - [`cli`]: the command line (`serve`, `check-policy`).

pub mod algorithm;
pub mod cli;
pub mod clock;
pub mod daemon;
pub mod engine;
pub mod http;
pub mod policy;
pub mod store;
