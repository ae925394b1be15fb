//! `ratewarden simulate`: labelled synthetic traffic written as JSON lines.

use super::{SimulateConfig, write_file};
use crate::policy::parse_duration;
use std::path::PathBuf;
use std::time::Duration;

/// `simulate`'s command line.
#[derive(Debug, Clone, clap::Args)]
pub struct SimulateArgs {
    /// The jsonl file to write.
    #[arg(long)]
    pub out: PathBuf,
    /// The same seed writes the same traffic.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Simulated time span.
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    pub duration: Duration,
    /// Simulated subjects (users), 13 % of them abusive.
    #[arg(long, default_value_t = 2000)]
    pub subjects: usize,
}

/// Writes the traffic and says what was written.
pub fn run(args: &SimulateArgs) -> std::io::Result<String> {
    let config = SimulateConfig {
        seed: args.seed,
        duration: args.duration,
        subjects: args.subjects,
        ..SimulateConfig::default()
    };
    let written = write_file(&config, &args.out)?;
    Ok(format!(
        "wrote {written} requests from {} subjects over {:?} (seed {}) to {}",
        args.subjects,
        args.duration,
        args.seed,
        args.out.display()
    ))
}
