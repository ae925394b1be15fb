//! `ratewarden simulate`: labelled synthetic traffic written as JSON lines.

use super::{SimulateConfig, write_file};
use crate::policy::parse_duration;
use crate::yaml::fields::MAX_DURATION;
use clap::builder::BoolishValueParser;
use std::path::PathBuf;
use std::time::Duration;

/// `simulate`'s command line.
#[derive(Debug, Clone, clap::Args)]
pub struct SimulateArgs {
    /// The jsonl file to write.
    #[arg(long, env = "RATEWARDEN_OUT")]
    pub out: PathBuf,
    /// The same seed writes the same traffic.
    #[arg(long, env = "RATEWARDEN_SEED", default_value_t = 1)]
    pub seed: u64,
    /// Simulated time span.
    #[arg(long, env = "RATEWARDEN_DURATION", default_value = "1h", value_parser = time_span)]
    pub duration: Duration,
    /// Simulated subjects (users), 13 % of them abusive.
    #[arg(long, env = "RATEWARDEN_SUBJECTS", default_value_t = 2000, value_parser = subject_count)]
    pub subjects: usize,
    /// Replace `--out` when it exists.
    #[arg(long, env = "RATEWARDEN_FORCE", value_parser = BoolishValueParser::new())]
    pub force: bool,
}

/// A span of no time, or no subjects, would write an empty file that `train` and `replay`
/// then refuse with a less helpful message: refused here instead.
/// Nor may it run past what a policy's durations allow: its times would pass 2255, which
/// `replay` and `train` refuse.
fn time_span(text: &str) -> Result<Duration, String> {
    match parse_duration(text)? {
        span if span.is_zero() => Err("a simulation needs a span longer than 0".to_string()),
        span if span > MAX_DURATION => Err("a simulation spans at most 366d".to_string()),
        span => Ok(span),
    }
}

/// The most subjects a simulation takes. It holds all of its traffic in memory (about 250
/// requests a subject an hour), and a count near `usize::MAX` ended the process on its first
/// allocation.
const MAX_SUBJECTS: usize = 1_000_000;

fn subject_count(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("a simulation needs at least 1 subject".to_string()),
        Ok(count) if count > MAX_SUBJECTS => Err(format!(
            "at most {MAX_SUBJECTS} subjects (a simulation holds its traffic in memory)"
        )),
        Ok(count) => Ok(count),
        Err(error) => Err(error.to_string()),
    }
}

/// Writes the traffic and says what was written. An existing `--out` is kept unless `--force`:
/// `RATEWARDEN_OUT` names `train`'s model file too, and a shell set up to train must not have
/// its model replaced by traffic.
pub fn run(args: &SimulateArgs) -> std::io::Result<String> {
    // What would fail only after the simulation (the slow part) is refused before it.
    let out = args.out.display();
    let refused = |kind, message| Err(std::io::Error::new(kind, message));
    if args.out.is_dir() {
        return refused(
            std::io::ErrorKind::IsADirectory,
            format!("{out} is a folder; --out names a file"),
        );
    }
    if let Some(folder) = crate::files::missing_folder(&args.out) {
        return refused(
            std::io::ErrorKind::NotFound,
            format!("no folder {} to write it in", folder.display()),
        );
    }
    if !args.force && args.out.exists() {
        return refused(
            std::io::ErrorKind::AlreadyExists,
            format!("{out} exists; pass --force to replace it"),
        );
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A span past 366 days wrote times after 2255, which `replay` and `train` then refused.
    #[test]
    fn a_span_is_refused_past_what_a_policy_allows() {
        assert_eq!(time_span("366d"), Ok(MAX_DURATION));
        assert_eq!(
            time_span("367d"),
            Err("a simulation spans at most 366d".to_string())
        );
        assert_eq!(
            time_span("0s"),
            Err("a simulation needs a span longer than 0".to_string())
        );
    }
}
