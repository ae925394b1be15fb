//! `ratewarden serve`: builds the engine from the policy, serves HTTP and gRPC, reloads the
//! policy, and shuts down both servers gracefully.

pub mod accept;
mod args;
pub mod http_server;
pub mod shutdown;
mod startup;

pub use args::ServeArgs;

use crate::clock::{Clock, SystemClock};
use crate::control::{ControlLoop, ModelSlot, SystemLoad};
use crate::engine::{Engine, SubjectHasher};
use crate::http::{AppState, router};
use crate::metrics::Metrics;
use crate::policy::PolicyErrors;
use crate::reload;
use crate::rules;
use crate::store::{self, MemoryStore, OpenError};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub use crate::reload::Reloader;

/// An admin token shorter than this is warned about at start-up.
const MIN_ADMIN_TOKEN_BYTES: usize = 16;

/// How long calls in flight may take to finish once the daemon is told to stop.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(15);

/// The two sockets the daemon serves on, bound by the caller (a test binds port 0).
pub struct Listeners {
    /// The HTTP API and `/metrics`.
    pub http: tokio::net::TcpListener,
    /// Envoy's rate limit service (gRPC), health and reflection.
    pub grpc: tokio::net::TcpListener,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("policy {path}:{}", errors.after_heading())]
    Policy { path: String, errors: PolicyErrors },
    #[error("--envoy-config {}:{}", dir.display(), errors.after_heading(dir))]
    EnvoyConfig {
        dir: std::path::PathBuf,
        errors: crate::envoy_config::EnvoyConfigErrors,
    },
    #[error(transparent)]
    Store(#[from] OpenError),
    #[error("cannot listen on {addr}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("server failed: {0}")]
    Serve(std::io::Error),
    #[error(transparent)]
    Grpc(#[from] crate::grpc::GrpcError),
}

/// Hashes subjects with the operator's secret, or a random one with a warning.
pub fn hasher_from(secret: Option<&str>) -> SubjectHasher {
    match secret {
        Some(secret) => SubjectHasher::from_secret(secret),
        None => {
            tracing::warn!(
                "RATEWARDEN_HASH_KEY is not set: using a random key, so store keys differ between instances and restarts"
            );
            SubjectHasher::random()
        }
    }
}

/// Runs the daemon on the addresses `args` names until SIGINT or SIGTERM.
pub async fn serve(args: ServeArgs) -> Result<(), ServeError> {
    let listeners = Listeners {
        http: bind(args.listen)?,
        grpc: bind(args.grpc_listen)?,
    };
    run(listeners, args, shutdown::signal()).await
}

/// Runs the daemon on `listeners` until `shutdown` resolves, then lets both servers finish the
/// calls in flight (at most 15 s).
pub async fn run(
    listeners: Listeners,
    args: ServeArgs,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let system_clock = SystemClock::new();
    let (engine, metrics) = build_engine(&args, Arc::new(system_clock.clone())).await?;
    let (reloader, control) = start_background_tasks(&args, &engine, &metrics, system_clock);
    let local = listeners.http.local_addr().map_err(ServeError::Serve)?;
    let grpc = listeners.grpc.local_addr().map_err(ServeError::Serve)?;
    tracing::info!(%grpc, "grpc rate limit service up");
    // Scheme and hosts only, as the starting line names the store: where decisions are counted.
    let store = engine.policy().store.url.location();
    tracing::info!(%local, %grpc, policy = %args.policy.display(), %store, "ratewarden listening");
    let app = router(AppState {
        engine: engine.clone(),
        metrics,
        admin_token: args.admin_token().map(Into::into),
        reloader: Some(Arc::new(reloader)),
    });
    let served = serve_until(listeners, app, engine, shutdown).await;
    control.stop().await;
    served?;
    tracing::info!("stopped");
    Ok(())
}

/// The engine over the store the policy names, with the daemon's one metrics registry.
async fn build_engine(
    args: &ServeArgs,
    clock: Arc<dyn Clock>,
) -> Result<(Arc<Engine>, Arc<Metrics>), ServeError> {
    // A folder named on the command line is blamed as such, not as the policy's.
    if let Some(dir) = &args.envoy_config {
        rules::load_envoy_folder(dir).map_err(|errors| ServeError::EnvoyConfig {
            dir: dir.clone(),
            errors,
        })?;
    }
    let rules = rules::load(&args.policy, args.envoy_config.as_deref()).map_err(|errors| {
        ServeError::Policy {
            path: args.policy.display().to_string(),
            errors,
        }
    })?;
    let policy = rules.policy.clone();
    let store = store::open(&policy.store, clock.clone()).await?;
    let remote = !matches!(store, store::Backend::Memory(_));
    if remote {
        reload::warn_inexact_limits(&rules);
    }
    let metrics = Arc::new(Metrics::new());
    let mut engine = Engine::new(rules, store, hasher_from(args.hash_key.as_deref()))
        .with_metrics(metrics.clone())
        .with_clock(clock.clone());
    if remote {
        // store.on_error: local answers from this per-instance limiter while the store fails.
        engine = engine.with_fallback(MemoryStore::new(clock, policy.store.max_keys.get()));
    }
    Ok((Arc::new(engine), metrics))
}

/// The control loop's task, stopped and awaited before the runtime goes: a cycle still running
/// on a blocking thread would otherwise start its next sleep on a runtime being shut down,
/// which panics.
struct ControlTask {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl ControlTask {
    async fn stop(self) {
        let _ = self.stop.send(());
        if tokio::time::timeout(SHUTDOWN_GRACE, self.task)
            .await
            .is_err()
        {
            tracing::warn!("the control loop still ran {SHUTDOWN_GRACE:?} after the stop signal");
        }
    }
}

/// The model, the policy watch, the control loop and the store sweep; the reloader is the
/// admin API's too.
fn start_background_tasks(
    args: &ServeArgs,
    engine: &Arc<Engine>,
    metrics: &Arc<Metrics>,
    system_clock: SystemClock,
) -> (Reloader, ControlTask) {
    // A missing or bad model does not stop the daemon: it limits without anomaly scaling
    // until the file appears (the watch below) or a reload loads it.
    let model = Arc::new(ModelSlot::new(metrics.clone()));
    let _ = model.load(engine.policy().adaptive.anomaly.model.as_deref());
    model.warn_if_window_differs(engine.policy().adaptive.anomaly.window);
    let reloader = Reloader::new(args.policy.clone(), engine.clone(), model.clone())
        .with_envoy_config(args.envoy_config.clone());
    reloader.clone().spawn_watch();
    let sampler = SystemLoad::new();
    let policy = engine.policy();
    let load = startup::load_source(args, &policy, &sampler.source());
    let admin_api = args.admin_token().is_some();
    if !admin_api && args.admin_token.is_some() {
        tracing::warn!("the admin token is blank: the admin API is off");
    }
    if args
        .admin_token()
        .is_some_and(|t| t.len() < MIN_ADMIN_TOKEN_BYTES)
    {
        tracing::warn!(
            "the admin token is under {MIN_ADMIN_TOKEN_BYTES} bytes: whoever reaches the HTTP \
             port may guess it; use a random one (openssl rand -hex 32)"
        );
    }
    startup::log(&policy, &model, load, admin_api);
    let mut control = ControlLoop::new(engine.clone(), model, Box::new(sampler));
    if let Some(factor) = args.pin_load_factor {
        control = control.with_pinned_load_factor(factor);
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let control = ControlTask {
        stop,
        task: tokio::spawn(control.run(async {
            let _ = stopped.await;
        })),
    };
    let sweeper = engine.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            system_clock.resync();
            sweeper.store().sweep();
        }
    });
    (reloader, control)
}

/// Serves HTTP and gRPC until `shutdown`; one signal stops both, and each then finishes the
/// calls in flight.
async fn serve_until(
    listeners: Listeners,
    app: axum::Router,
    engine: Arc<Engine>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop.send(true);
    });
    let when_stopped = move || {
        let mut stopped = stopped.clone();
        async move {
            let _ = stopped.wait_for(|s| *s).await;
        }
    };
    let http = http_server::serve(listeners.http, app, when_stopped());
    let grpc_connections = accept::Acceptor::new(listeners.grpc, "gRPC").into_stream();
    let grpc = crate::grpc::serve(grpc_connections, engine, when_stopped());
    let both = async { tokio::join!(http, grpc).1.map_err(ServeError::Grpc) };
    // A client that never closes its connection must not hold the daemon forever.
    let grace = async {
        when_stopped().await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        served = both => { served?; }
        () = grace => tracing::warn!("connections still open {SHUTDOWN_GRACE:?} after the stop signal; stopping anyway"),
    }
    Ok(())
}

/// How many connections the kernel queues before the accept loop takes them. tokio's `bind`
/// asks for 128 (std's figure, since mio 1.2): a burst of a few hundred connects, which a
/// limiter in front of a busy API sees, overflowed it and each dropped SYN cost its client a 1 s
/// retransmit. The kernel caps this at `net.core.somaxconn`.
const LISTEN_BACKLOG: u32 = 4096;

fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, ServeError> {
    let listen = || {
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        // As tokio's `bind` does: a restarted daemon can listen while old connections linger.
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        socket.listen(LISTEN_BACKLOG)
    };
    listen().map_err(|source| ServeError::Listen { addr, source })
}
