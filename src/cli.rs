//! The command line: `serve`, `check-policy`, `simulate`, `train` and `replay`. Every `serve` flag (and
//! `--policy` anywhere) also reads `RATEWARDEN_<FLAG>`.

use crate::model::ModelKind;
use crate::policy::parse_duration;
use crate::replay::{Format, SubjectChoice, Sweep};
use clap::{Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

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
        /// Use this load factor (above 0, at most 10) for the life of the process instead of
        /// the one CPU use gives, for hosts whose CPU says nothing of this service (shared
        /// hosts, CI). The CPU is still sampled for its gauge; the admin API's
        /// `load_factor_override` still takes precedence.
        #[arg(long, env = "RATEWARDEN_PIN_LOAD_FACTOR", value_parser = pinned_factor)]
        pin_load_factor: Option<f64>,
    },
    /// Validate a policy file (with its envoy_config folder), or an envoyproxy/ratelimit
    /// configuration folder: print every error with its path, exit non-zero on any.
    CheckPolicy {
        /// The policy file, or a folder of envoyproxy/ratelimit YAML files.
        file: PathBuf,
    },
    /// Write labelled synthetic traffic (replay.md's jsonl) to train and test the abuse model.
    Simulate {
        /// The jsonl file to write.
        #[arg(long)]
        out: PathBuf,
        /// The same seed writes the same traffic.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Simulated time span.
        #[arg(long, default_value = "1h", value_parser = parse_duration)]
        duration: Duration,
        /// Simulated subjects (users), 10 % of them abusive.
        #[arg(long, default_value_t = 2000)]
        subjects: usize,
    },
    /// Train the abuse model on jsonl traffic; print precision, recall and ROC AUC on
    /// held-out subjects.
    Train {
        /// Labelled (for `logistic`) or unlabelled jsonl traffic.
        #[arg(long)]
        data: PathBuf,
        /// `logistic` (supervised) or `gmm` (unsupervised Gaussian mixture).
        #[arg(long, default_value = "logistic")]
        kind: ModelKind,
        /// Where to write the model.
        #[arg(long, default_value = "models/abuse.json")]
        out: PathBuf,
        /// The policy whose limits decide the requests and whose `adaptive` settings sample
        /// the features.
        #[arg(long, env = "RATEWARDEN_POLICY", default_value = "ratewarden.yaml")]
        policy: PathBuf,
        /// Seed of the subject split (and of the mixture's subsample).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Threshold of the reported precision and recall [default: the policy's
        /// `anomaly.threshold`].
        #[arg(long)]
        threshold: Option<f64>,
        /// Gaussians in a `gmm` model.
        #[arg(long, default_value_t = 4)]
        components: usize,
    },
    /// Replay recorded traffic through the policy, the model and the control loop on a
    /// simulated clock, and report what they would have done (replay.md).
    Replay {
        /// The policy to try.
        #[arg(long, env = "RATEWARDEN_POLICY", default_value = "ratewarden.yaml")]
        policy: PathBuf,
        /// A log file (combined or JSON lines, gzip or not); repeat for more, in any order.
        #[arg(long = "log", required = true)]
        logs: Vec<PathBuf>,
        /// The log format; `auto` decides per file by its first line.
        #[arg(long, value_enum, default_value = "auto")]
        format: Format,
        /// Whom requests count against: `ip`, `user` or `header:NAME` [default: combined
        /// logs the address, JSON lines the user].
        #[arg(long)]
        subject: Option<SubjectChoice>,
        /// Replay once per threshold value: `threshold=FROM:TO:STEP`.
        #[arg(long)]
        sweep: Option<Sweep>,
        /// Write everything the table shows (and more) as JSON.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Draw denials over time and the sweep curve as a PNG.
        #[arg(long)]
        plot: Option<PathBuf>,
        /// Write every request's decision as a JSON line (every pass's, with a sweep).
        #[arg(long)]
        decisions: Option<PathBuf>,
        /// Secret of the keyed subject hashes; the daemon's makes the replay exact.
        #[arg(long, env = "RATEWARDEN_HASH_KEY", hide_env_values = true)]
        hash_key: Option<String>,
    },
}

fn pinned_factor(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 10.0 => Ok(x),
        _ => Err(format!("{text:?} is not a number above 0 and at most 10")),
    }
}
