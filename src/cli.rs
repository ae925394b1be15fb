//! The command line: `serve` and `check-policy`. Every flag also reads `RATEWARDEN_<FLAG>`.

use clap::{Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "ratewarden",
    version,
    about = "An adaptive, anomaly-aware rate-limiter daemon"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon.
    Serve {
        /// The policy file.
        #[arg(long, env = "RATEWARDEN_POLICY", default_value = "ratewarden.yaml")]
        policy: PathBuf,
        /// Address of the HTTP API and /metrics.
        #[arg(long, env = "RATEWARDEN_LISTEN", default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// Address of Envoy's rate limit service (gRPC), health and reflection.
        #[arg(long, env = "RATEWARDEN_GRPC_LISTEN", default_value = "127.0.0.1:8081")]
        grpc_listen: SocketAddr,
        /// An envoyproxy/ratelimit configuration folder (in place of the policy's envoy_config).
        #[arg(long, env = "RATEWARDEN_ENVOY_CONFIG")]
        envoy_config: Option<PathBuf>,
        /// Secret from which store keys are derived; a random one per process when unset.
        #[arg(long, env = "RATEWARDEN_HASH_KEY", hide_env_values = true)]
        hash_key: Option<String>,
        /// Bearer token of the admin API; the admin API answers 404 when unset.
        #[arg(long, env = "RATEWARDEN_ADMIN_TOKEN", hide_env_values = true)]
        admin_token: Option<String>,
    },
    /// Validate a policy file (with its envoy_config folder), or an envoyproxy/ratelimit
    /// configuration folder: print every error with its path, exit non-zero on any.
    CheckPolicy {
        /// The policy file, or a folder of envoyproxy/ratelimit YAML files.
        file: PathBuf,
    },
}
