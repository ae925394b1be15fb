//! The `ratewarden` binary.

use anyhow::Context;
use clap::Parser;
use ratewarden::cli::{Cli, Command};
use ratewarden::daemon::{self, ServeConfig};
use ratewarden::envoy_config::EnvoyConfig;
use ratewarden::model::command::{self as train, TrainArgs};
use ratewarden::policy::Policy;
use ratewarden::replay::{self, ReplayArgs};
use ratewarden::simulate::{self, SimulateConfig};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A replay loads the model once per pass: its "model loaded" lines would drown the table.
    let default_level = match cli.command {
        Command::Replay { .. } => "warn",
        _ => "info",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RATEWARDEN_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve {
            policy,
            listen,
            grpc_listen,
            envoy_config,
            hash_key,
            admin_token,
            pin_load_factor,
        } => {
            let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
            runtime.block_on(daemon::serve(ServeConfig {
                policy,
                listen,
                grpc_listen,
                envoy_config,
                hash_key,
                admin_token,
                pin_load_factor,
            }))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Simulate {
            out,
            seed,
            duration,
            subjects,
        } => {
            let config = SimulateConfig {
                seed,
                duration,
                subjects,
                ..SimulateConfig::default()
            };
            let written = simulate::write_file(&config, &out)
                .with_context(|| format!("writing {}", out.display()))?;
            println!(
                "wrote {written} requests from {subjects} subjects over {duration:?} (seed {seed}) to {}",
                out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Train {
            data,
            kind,
            out,
            policy,
            seed,
            threshold,
            components,
        } => {
            train::run(&TrainArgs {
                data,
                kind,
                out,
                policy,
                seed,
                threshold,
                components,
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Replay {
            policy,
            logs,
            format,
            subject,
            sweep,
            report,
            plot,
            decisions,
            hash_key,
        } => {
            replay::run(&ReplayArgs {
                policy,
                logs,
                format,
                subject,
                sweep,
                report,
                plot,
                decisions,
                hash_key,
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::CheckPolicy { file } if file.is_dir() => match EnvoyConfig::load(&file) {
            Ok(config) => {
                println!(
                    "{}: ok ({}, {})",
                    file.display(),
                    plural(config.domains.len(), "domain", "domains"),
                    plural(config.rule_count(), "rate limit", "rate limits")
                );
                Ok(ExitCode::SUCCESS)
            }
            Err(errors) => {
                for line in errors.lines() {
                    println!("{}: {line}", file.display());
                }
                Ok(ExitCode::FAILURE)
            }
        },
        Command::CheckPolicy { file } => match Policy::load(&file) {
            Ok(policy) => {
                let envoy = match &policy.envoy {
                    Some(config) => format!(
                        ", envoy_config: {}, {}",
                        plural(config.domains.len(), "domain", "domains"),
                        plural(config.rule_count(), "rate limit", "rate limits")
                    ),
                    None => String::new(),
                };
                println!(
                    "{}: ok ({}, {}{envoy})",
                    file.display(),
                    plural(policy.tiers.len(), "tier", "tiers"),
                    plural(policy.endpoints.len(), "endpoint rule", "endpoint rules")
                );
                Ok(ExitCode::SUCCESS)
            }
            Err(errors) => {
                for line in errors.lines() {
                    println!("{}: {line}", file.display());
                }
                Ok(ExitCode::FAILURE)
            }
        },
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
