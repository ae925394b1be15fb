//! `ratewarden serve`: builds the engine from the policy, serves HTTP, reloads the policy, and
//! shuts down gracefully.

pub mod shutdown;

use crate::clock::{Clock, SystemClock};
use crate::control::{ControlLoop, ModelSlot, SystemLoad};
use crate::engine::{Engine, SubjectHasher};
use crate::http::{AppState, router};
use crate::metrics::Metrics;
use crate::policy::{Policy, PolicyErrors};
use crate::store::{self, MemoryStore, OpenError};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use crate::reload::Reloader;

/// What `serve` needs from the command line and environment.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub policy: PathBuf,
    pub listen: SocketAddr,
    /// `RATEWARDEN_HASH_KEY`; a random per-process key when absent.
    pub hash_key: Option<String>,
    /// `RATEWARDEN_ADMIN_TOKEN`; the admin API is off when absent.
    pub admin_token: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("policy {path}:\n{errors}")]
    Policy { path: String, errors: PolicyErrors },
    #[error(transparent)]
    Store(#[from] OpenError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("server failed: {0}")]
    Serve(std::io::Error),
}

/// Hashes subjects with the operator's secret, or a random one with a warning.
pub fn hasher_from(secret: Option<&str>) -> SubjectHasher {
    match secret.filter(|s| !s.is_empty()) {
        Some(secret) => SubjectHasher::from_secret(secret),
        None => {
            tracing::warn!(
                "RATEWARDEN_HASH_KEY is not set: using a random key, so store keys differ between instances and restarts"
            );
            SubjectHasher::random()
        }
    }
}

/// Redis's Lua computes in doubles: exact while requests × window (µs) stays below 2^53.
fn warn_inexact_limits(policy: &Policy) {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    let limits = policy
        .tiers
        .iter()
        .flat_map(|t| &t.limits)
        .chain(policy.endpoints.iter().flat_map(|r| &r.limits))
        .chain(&policy.default_endpoint.limits);
    for limit in limits {
        let largest = limit.requests.get().max(limit.burst.get()) as f64;
        if largest * limit.window_micros() as f64 >= EXACT {
            tracing::warn!(
                limit = %limit.label,
                "requests x window is beyond what Redis's Lua computes exactly; decisions may be off by one request"
            );
        }
    }
}

/// Runs the daemon until SIGINT or SIGTERM.
pub async fn serve(config: ServeConfig) -> Result<(), ServeError> {
    let policy = Policy::load(&config.policy).map_err(|errors| ServeError::Policy {
        path: config.policy.display().to_string(),
        errors,
    })?;
    let system_clock = SystemClock::new();
    let clock: Arc<dyn Clock> = Arc::new(system_clock.clone());
    let store = store::open(&policy.store, clock.clone()).await?;
    let remote = !matches!(store, store::Backend::Memory(_));
    if remote {
        warn_inexact_limits(&policy);
    }
    let max_keys = policy.store.max_keys.get();
    let metrics = Arc::new(Metrics::new());
    let model_path = policy.adaptive.anomaly.model.clone();
    let mut engine = Engine::new(policy, store, hasher_from(config.hash_key.as_deref()))
        .with_metrics(metrics.clone())
        .with_clock(clock.clone());
    if remote {
        // store.on_error: local answers from this per-instance limiter while the store fails.
        engine = engine.with_fallback(MemoryStore::new(clock, max_keys));
    }
    let engine = Arc::new(engine);

    // A missing or bad model does not stop the daemon: it limits without anomaly scaling
    // until the file appears (the watch below) or a reload loads it.
    let model = Arc::new(ModelSlot::new(metrics.clone()));
    let _ = model.load(model_path.as_deref());
    let reloader = Reloader::new(config.policy.clone(), engine.clone(), model.clone());
    reloader.clone().spawn_watch();
    let control = ControlLoop::new(engine.clone(), model, Box::new(SystemLoad::new()));
    tokio::spawn(control.run(std::future::pending()));
    let sweeper = engine.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            system_clock.resync();
            sweeper.store().sweep();
        }
    });

    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Listen {
            addr: config.listen,
            source,
        })?;
    let local = listener.local_addr().map_err(ServeError::Serve)?;
    tracing::info!(%local, policy = %config.policy.display(), "ratewarden listening");
    let app = router(AppState {
        engine,
        metrics,
        admin_token: config.admin_token.filter(|t| !t.is_empty()).map(Into::into),
        reloader: Some(reloader),
    });
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown::signal())
    .await
    .map_err(ServeError::Serve)?;
    tracing::info!("stopped");
    Ok(())
}
