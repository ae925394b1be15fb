//! The command line: `serve`, `check-policy`, `simulate`, `train`, `replay` and
//! `subject-hash`. Every flag also reads `RATEWARDEN_<FLAG>` (but `replay --log`, whose
//! variable is the log filter); `check-policy` takes its file as an argument, with no variable.
//!
//! Each command's flags are the clap struct of the module that runs it, used as parsed.

pub mod check_policy;
pub mod subject_hash;

use crate::daemon::ServeArgs;
use crate::model::command::TrainArgs;
use crate::replay::ReplayArgs;
use crate::simulate::command::SimulateArgs;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use subject_hash::SubjectHashArgs;

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
    Serve(ServeArgs),
    /// Validate a policy file (with its envoy_config folder), or an envoyproxy/ratelimit
    /// configuration folder: print every error with its path, exit non-zero on any.
    CheckPolicy {
        /// The policy file, or a folder of envoyproxy/ratelimit YAML files.
        file: PathBuf,
    },
    /// Write labelled synthetic traffic (JSON lines) to train and test the abuse model.
    Simulate(SimulateArgs),
    /// Train the abuse model on jsonl traffic; print precision, recall and ROC AUC on
    /// held-out subjects.
    Train(TrainArgs),
    /// Replay recorded traffic through the policy, the model and the control loop on a
    /// simulated clock, and report what they would have done.
    Replay(ReplayArgs),
    /// Print the keyed hash the daemon shows for each user id (given, or one per line on
    /// standard input), to tell whose a flagged hash is.
    SubjectHash(SubjectHashArgs),
}
