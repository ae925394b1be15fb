//! `serve`'s command line (and `RATEWARDEN_*` environment): the clap struct the daemon runs on.

use std::net::SocketAddr;
use std::path::PathBuf;

/// What `serve` needs from the command line and environment.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// The policy file.
    #[arg(long, env = "RATEWARDEN_POLICY", default_value = "ratewarden.yaml")]
    pub policy: PathBuf,
    /// Address of the HTTP API and /metrics.
    #[arg(long, env = "RATEWARDEN_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Address of Envoy's rate limit service (gRPC), health and reflection.
    #[arg(long, env = "RATEWARDEN_GRPC_LISTEN", default_value = "127.0.0.1:8081")]
    pub grpc_listen: SocketAddr,
    /// An envoyproxy/ratelimit configuration folder (in place of the policy's envoy_config).
    #[arg(long, env = "RATEWARDEN_ENVOY_CONFIG")]
    pub envoy_config: Option<PathBuf>,
    /// Secret from which store keys are derived; a random one per process when unset.
    #[arg(long, env = "RATEWARDEN_HASH_KEY", hide_env_values = true)]
    pub hash_key: Option<String>,
    /// Bearer token of the admin API; the admin API answers 404 when unset.
    #[arg(long, env = "RATEWARDEN_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Use this load factor (above 0, at most 10) for the life of the process instead of
    /// the one the policy's load source gives (CPU by default), for hosts whose load says
    /// nothing of this service (shared hosts, CI). The source is still sampled for its
    /// gauges; the admin API's `load_factor_override` still takes precedence.
    #[arg(long, env = "RATEWARDEN_PIN_LOAD_FACTOR", value_parser = pinned_factor)]
    pub pin_load_factor: Option<f64>,
}

impl ServeArgs {
    /// The admin token without surrounding whitespace (a secret file's trailing newline would
    /// otherwise refuse every request, the presented token being trimmed); `None` when unset
    /// or blank.
    pub fn admin_token(&self) -> Option<&str> {
        self.admin_token
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
    }
}

fn pinned_factor(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 10.0 => Ok(x),
        _ => Err(format!("{text:?} is not a number above 0 and at most 10")),
    }
}
