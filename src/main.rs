//! The `ratewarden` binary: parses the command line and runs the command.

use anyhow::Context;
use clap::Parser;
use ratewarden::cli::{Cli, Command, check_policy, subject_hash};
use ratewarden::{daemon, model, replay, simulate};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A replay loads the model once per pass: its "model loaded" lines would drown the table.
    let default_level = match cli.command {
        Command::Replay { .. } => "warn",
        _ => "info",
    };
    let (filter, refused) = log_filter(default_level);
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        // A line that cannot be written (the reader of a piped stderr went away) is lost; by
        // default the layer reports that with `eprintln!`, which panics on that same stderr
        // and would take down whatever task was logging: the control loop, a reload, shutdown.
        .log_internal_errors(false)
        .init();
    if let Some(value) = refused {
        tracing::warn!(
            "RATEWARDEN_LOG={value:?} is neither a level (error, warn, info, debug, trace, off) \
             nor directives such as ratewarden=debug,audit=info; logging at {default_level}"
        );
    }
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            // Not `eprintln!`: it panics when stderr is gone, and the exit code must still say
            // failure, not panic.
            let _ = writeln!(std::io::stderr(), "error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// `RATEWARDEN_LOG`'s filter, or the default level and the value refused. A bare word that is
/// no level (`verbose`, `degub`) parses as a target nothing logs under: taken as it is, a typo
/// would silence every line, outage warnings included.
fn log_filter(default_level: &str) -> (tracing_subscriber::EnvFilter, Option<String>) {
    let fallback =
        || tracing_subscriber::EnvFilter::new(quiet_watcher(&quiet_redis(default_level)));
    let Ok(value) = std::env::var("RATEWARDEN_LOG") else {
        return (fallback(), None);
    };
    let text = value.trim();
    if text.is_empty() {
        return (fallback(), None);
    }
    match tracing_subscriber::EnvFilter::try_new(quiet_watcher(&quiet_redis(text))) {
        Ok(filter) if !text.split(',').any(stray_word) => (filter, None),
        _ => (fallback(), Some(value)),
    }
}

/// `filter` with the Redis client's own lines kept to errors when its bare level would let
/// their warnings through and it gives no level of its own to the `redis` target: while a
/// cluster node is down the client warns several times per call (thousands of lines a second),
/// and ratewarden logs the outage itself, once when it begins and once when it ends. A more
/// specific target (`redis::aio=debug`) still wins over the added `redis=error`.
fn quiet_redis(filter: &str) -> String {
    let directives = || filter.split(',').map(str::trim);
    let names_redis = directives().any(|d| d.starts_with("redis="));
    let loud = directives().any(|d| {
        d.parse::<tracing::level_filters::LevelFilter>()
            .is_ok_and(|level| level >= tracing::level_filters::LevelFilter::WARN)
    });
    match loud && !names_redis {
        true => format!("{filter},redis=error"),
        false => filter.to_owned(),
    }
}

/// `filter` with the file watcher's (notify's) lines kept to `debug` when a bare `trace` would
/// let its trace lines through and it names no `notify` target: it traces every event in the
/// policy's folder, so a log written into that folder raised an event per line and grew by
/// hundreds of megabytes in seconds.
fn quiet_watcher(filter: &str) -> String {
    let directives = || filter.split(',').map(str::trim);
    let names_notify = directives()
        .any(|d| d == "notify" || d.starts_with("notify=") || d.starts_with("notify::"));
    let trace = directives().any(|d| {
        d.parse::<tracing::level_filters::LevelFilter>()
            .is_ok_and(|level| level == tracing::level_filters::LevelFilter::TRACE)
    });
    match trace && !names_notify {
        true => format!("{filter},notify=debug"),
        false => filter.to_owned(),
    }
}

/// A directive with a space (the filter does not trim it), or without `=` and neither a level
/// nor one of ratewarden's targets (`ratewarden`, `ratewarden::...`, `audit`, a span filter):
/// a typo such as `verbose`, `ratewarden:debug` or `info , warn`. Another crate's target alone
/// is refused too: write `tower_http=trace`.
fn stray_word(directive: &str) -> bool {
    // Not trimmed: the filter reads `info ` as a target, not a level.
    if directive.contains(char::is_whitespace) {
        return true;
    }
    let ours = directive == "audit"
        || directive == "ratewarden"
        || directive.starts_with("ratewarden::")
        || directive.contains('[');
    !directive.contains('=')
        && directive
            .parse::<tracing::level_filters::LevelFilter>()
            .is_err()
        && !ours
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if matches!(
        cli.command,
        Command::CheckPolicy { .. } | Command::Simulate(_) | Command::SubjectHash(_)
    ) {
        end_quietly_when_the_reader_leaves();
    }
    match cli.command {
        Command::Serve(args) => {
            let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
            runtime.block_on(daemon::serve(args))?;
        }
        Command::Simulate(args) => {
            let written = simulate::command::run(&args)
                .with_context(|| format!("writing {}", args.out.display()))?;
            println!("{written}");
        }
        Command::Train(args) => {
            model::command::run(&args)?;
        }
        Command::Replay(args) => {
            replay::run(&args)?;
        }
        Command::SubjectHash(args) => {
            if args.users.is_empty() && std::io::stdin().is_terminal() {
                eprintln!("{}", subject_hash::TERMINAL_HINT);
            }
            let out = std::io::BufWriter::new(std::io::stdout().lock());
            subject_hash::run(&args, std::io::stdin().lock(), out, std::io::stderr())
                .context("hashing user ids")?;
        }
        Command::CheckPolicy { file } => {
            let (lines, valid) = check_policy::check(&file);
            for line in lines {
                println!("{line}");
            }
            if !valid {
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `ratewarden check-policy dir | head -1` ends quietly when `head` closes the pipe, as other
/// Unix tools do: Rust ignores SIGPIPE, so the next print would panic. Only for the commands
/// whose output is all they do: `serve`'s writes to clients that hang up must fail as errors,
/// and `train` and `replay` print without panicking and still write their files.
#[cfg(unix)]
fn end_quietly_when_the_reader_leaves() {
    // SAFETY: called before any thread is started, with a disposition SIGPIPE accepts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn end_quietly_when_the_reader_leaves() {}

#[cfg(test)]
mod tests {
    use super::{quiet_redis, quiet_watcher};

    #[test]
    fn the_file_watcher_is_kept_to_debug_under_a_bare_trace_unless_named() {
        assert_eq!(quiet_watcher("trace"), "trace,notify=debug");
        assert_eq!(
            quiet_watcher("TRACE,audit=info"),
            "TRACE,audit=info,notify=debug"
        );
        assert_eq!(quiet_watcher("trace,notify=trace"), "trace,notify=trace");
        assert_eq!(quiet_watcher("5"), "5,notify=debug");
        assert_eq!(
            quiet_watcher("trace,notifyx=info"),
            "trace,notifyx=info,notify=debug"
        );
        assert_eq!(quiet_watcher("debug"), "debug");
        assert_eq!(
            quiet_watcher("info,ratewarden=trace"),
            "info,ratewarden=trace"
        );
    }

    #[test]
    fn the_redis_client_is_kept_to_errors_unless_named() {
        assert_eq!(quiet_redis("info"), "info,redis=error");
        assert_eq!(
            quiet_redis("debug,ratewarden=trace"),
            "debug,ratewarden=trace,redis=error"
        );
        assert_eq!(quiet_redis("warn,redis=debug"), "warn,redis=debug");
        assert_eq!(
            quiet_redis("info,redis::aio=debug"),
            "info,redis::aio=debug,redis=error"
        );
        // Nothing of the client's would show: nothing to quiet.
        assert_eq!(quiet_redis("off"), "off");
        assert_eq!(quiet_redis("off,audit=info"), "off,audit=info");
        assert_eq!(quiet_redis("audit=info"), "audit=info");
        assert_eq!(quiet_redis("error"), "error");
    }
}
