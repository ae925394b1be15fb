//! The HTTP API at the router level (docs/reference/http-api.md): /v1/check, /v1/check/batch, their headers and
//! every error; the engine is the embedded store with a manual clock.
//!
//! `tests/http_api/` holds the parts: `support` (decision fields, header checks), `decisions`
//! (single checks), `errors` (every 4xx), `batch`, and `paths` (endpoint normalisation on every
//! route that takes a path; forward auth's methods).

#[path = "http_api/batch.rs"]
mod batch;
mod common;
#[path = "http_api/decisions.rs"]
mod decisions;
#[path = "http_api/errors.rs"]
mod errors;
#[path = "http_api/paths.rs"]
mod paths;
#[path = "http_api/support.rs"]
mod support;
