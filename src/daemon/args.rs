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
    #[arg(long, env = "RATEWARDEN_LISTEN", default_value = "127.0.0.1:8080", value_parser = listen_address)]
    pub listen: SocketAddr,
    /// Address of Envoy's rate limit service (gRPC), health and reflection.
    #[arg(long, env = "RATEWARDEN_GRPC_LISTEN", default_value = "127.0.0.1:8081", value_parser = listen_address)]
    pub grpc_listen: SocketAddr,
    /// An envoyproxy/ratelimit configuration folder (in place of the policy's envoy_config).
    #[arg(long, env = "RATEWARDEN_ENVOY_CONFIG")]
    pub envoy_config: Option<PathBuf>,
    /// Secret from which store keys are derived; a random one per process when unset.
    #[arg(long, env = "RATEWARDEN_HASH_KEY", hide_env_values = true, value_parser = crate::engine::hash_key)]
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

/// An address and port; `localhost:PORT` is `127.0.0.1:PORT` (the docs' curls say
/// `localhost`), any other host name is refused rather than resolved.
fn listen_address(text: &str) -> Result<SocketAddr, String> {
    if let Ok(address) = text.parse() {
        return Ok(address);
    }
    match text.strip_prefix("localhost:").map(str::parse::<u16>) {
        Some(Ok(port)) => Ok(SocketAddr::from(([127, 0, 0, 1], port))),
        _ => Err(format!(
            "{text:?} is not an address and port such as 127.0.0.1:8080, 0.0.0.0:8080 or \
             [::1]:8080 (localhost:8080 is read as 127.0.0.1:8080; other host names are not \
             resolved)"
        )),
    }
}

fn pinned_factor(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 10.0 => Ok(x),
        _ => Err(format!("{text:?} is not a number above 0 and at most 10")),
    }
}

#[cfg(test)]
mod tests {
    use super::listen_address;

    #[test]
    fn listen_addresses_are_ip_and_port_or_localhost() {
        assert_eq!(
            listen_address("localhost:8080"),
            Ok(([127, 0, 0, 1], 8080).into())
        );
        assert_eq!(
            listen_address("[::1]:0"),
            "[::1]:0".parse().map_err(|_| String::new())
        );
        let refused = listen_address("db:8080").unwrap_err();
        assert!(
            refused.starts_with("\"db:8080\" is not an address and port such as 127.0.0.1:8080"),
            "{refused}"
        );
        assert!(listen_address("localhost:99999").is_err());
    }
}
