//! `ratewarden replay`: read the logs, replay them once per threshold (in parallel, one engine
//! each), print the table, write `--report`, `--plot` and `--decisions`.

use super::decisions::DecisionWriter;
use super::input::time::format_rfc3339;
use super::input::{Format, ReadError, SubjectChoice, read_logs, refuse_header_for_combined};
use super::pass::{PassSetup, replay_pass};
use super::report::{ModelInfo, Report};
use super::summary::Summary;
use super::sweep::{Sweep, SweepRow};
use super::traffic::Traffic;
use super::{plot, table};
use crate::model::Model;
use crate::simulate::Label;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// The secret of the keyed hashes when `RATEWARDEN_HASH_KEY` is unset. Limits do not depend
/// on it beyond hash collisions, but the anomaly features' distinct counts do (past eight values
/// a sketch estimates them from the hashes); setting the daemon's makes a replay exact.
pub const DEFAULT_SECRET: &str = "ratewarden replay";

#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// The policy to try.
    #[arg(long, env = "RATEWARDEN_POLICY", default_value = "ratewarden.yaml")]
    pub policy: PathBuf,
    /// A log file (combined or JSON lines, gzip or not); repeat for more, in any order.
    #[arg(long = "log", required = true)]
    pub logs: Vec<PathBuf>,
    /// The log format; `auto` decides per file by its first line.
    #[arg(long, env = "RATEWARDEN_FORMAT", value_enum, default_value = "auto")]
    pub format: Format,
    /// Whom requests count against: `ip`, `user` or `header:NAME` [default: combined
    /// logs the address, JSON lines the user].
    #[arg(long, env = "RATEWARDEN_SUBJECT")]
    pub subject: Option<SubjectChoice>,
    /// Replay once per threshold value: `threshold=FROM:TO:STEP`.
    #[arg(long, env = "RATEWARDEN_SWEEP")]
    pub sweep: Option<Sweep>,
    /// Write everything the table shows (and more) as JSON.
    #[arg(long, env = "RATEWARDEN_REPORT")]
    pub report: Option<PathBuf>,
    /// Draw denials over time and the sweep curve as a PNG.
    #[arg(long, env = "RATEWARDEN_PLOT")]
    pub plot: Option<PathBuf>,
    /// Write every request's decision as a JSON line (every pass's, with a sweep).
    #[arg(long, env = "RATEWARDEN_DECISIONS")]
    pub decisions: Option<PathBuf>,
    /// Secret of the keyed hashes (a fixed one when unset). Scores depend on it a little: past
    /// eight addresses or paths, their distinct counts are estimated from the hashes.
    #[arg(long, env = "RATEWARDEN_HASH_KEY", hide_env_values = true, value_parser = crate::engine::hash_key)]
    pub hash_key: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("policy {path}:{errors}")]
    Policy { path: PathBuf, errors: String },
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(
        "no parsable line in {files} ({skipped} line{} skipped){examples}",
        if *skipped == 1 { "" } else { "s" }
    )]
    NoLines {
        files: String,
        skipped: u64,
        examples: String,
    },
    #[error(
        "adaptive.anomaly.model: {0} (fix the file, or remove the key to replay without anomaly scaling)"
    )]
    Model(String),
    #[error("starting the runtime: {0}")]
    Runtime(std::io::Error),
    #[error("writing {path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("drawing {path}: {message}")]
    Plot { path: PathBuf, message: String },
    #[error("printing the table: {0}")]
    Stdout(std::io::Error),
    #[error("{path}: no folder {folder} to write it in")]
    NoFolder { path: PathBuf, folder: PathBuf },
    #[error(transparent)]
    OutputIsInput(#[from] crate::files::OutputIsInput),
    #[error("{flag} {path}: is a folder; name a file to write")]
    OutputIsFolder { flag: &'static str, path: PathBuf },
    #[error("--plot {0}: the plot is drawn as PNG or JPEG; name a .png, .jpg or .jpeg file")]
    PlotFormat(PathBuf),
    #[error(
        "--decisions {path}: {part} exists, and replay writes each pass to {path}.partN before \
         joining them: move or delete it"
    )]
    DecisionPartExists { path: PathBuf, part: PathBuf },
    #[error(
        "--sweep varies adaptive.anomaly.threshold, and {0} names no adaptive.anomaly.model: \
         every pass would decide alike"
    )]
    SweepWithoutModel(PathBuf),
}

fn bar(len: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Runs the replay and prints the table to stdout; the report is returned too.
pub fn run(args: &ReplayArgs) -> Result<Report, ReplayError> {
    let policy = crate::rules::load_policy(&args.policy).map_err(|e| ReplayError::Policy {
        path: args.policy.clone(),
        errors: e.after_heading(),
    })?;
    if args.sweep.is_some() && policy.adaptive.anomaly.model.is_none() {
        return Err(ReplayError::SweepWithoutModel(args.policy.clone()));
    }
    refuse_header_for_combined(&args.logs, args.format, args.subject.as_ref())?;
    super::outputs::refuse_unwritable(args, policy.adaptive.anomaly.model.as_deref())?;
    for path in &args.logs {
        std::fs::metadata(path).map_err(|error| ReadError::Open {
            path: path.clone(),
            error,
        })?;
    }
    let traffic = read_with_progress(args)?;
    if traffic.records.is_empty() {
        return Err(no_lines(args, &traffic));
    }
    let model_path = policy.adaptive.anomaly.model.clone();
    let model = describe_model(model_path.as_deref())?;
    let thresholds = thresholds(policy.adaptive.anomaly.threshold, args.sweep.as_ref());
    let secret = args.hash_key.as_deref().unwrap_or(DEFAULT_SECRET);
    let setup = |threshold| PassSetup {
        policy: &policy,
        model: model_path.as_deref(),
        secret,
        threshold,
    };
    let summaries = replay_all(args, &traffic, &thresholds, &setup)?;
    let first = traffic.first().unwrap_or(0);
    let last = traffic.last().unwrap_or(first);
    let report = Report {
        policy: args.policy.clone(),
        model,
        subject: SubjectChoice::describe(args.subject.as_ref()),
        inputs: traffic.files.clone(),
        lines_skipped: traffic.skipped,
        skipped_examples: traffic.examples.clone(),
        subject_fallbacks: traffic.fallbacks,
        start: format_rfc3339(first),
        end: format_rfc3339(last),
        span_seconds: (last - first) as f64 / 1e6,
        load_factor: policy.adaptive.load.factor_override.unwrap_or(1.0),
        summary: summaries[0].clone(),
        sweep: args
            .sweep
            .as_ref()
            .map(|sweep| sweep_rows(sweep, &summaries)),
    };
    print_table(&table::render(&report))?;
    write_files(args, &report)?;
    Ok(report)
}

/// The policy's model as the report names it. One that cannot be read is an error: a replay
/// answers "what would this policy and model have done", which no other model answers.
fn describe_model(path: Option<&Path>) -> Result<Option<ModelInfo>, ReplayError> {
    let Some(path) = path else {
        return Ok(None);
    };
    match Model::load(path) {
        Ok(m) => Ok(Some(ModelInfo {
            path: path.to_path_buf(),
            kind: m.kind().label(),
            version: m.version().to_owned(),
        })),
        Err(error) => Err(ReplayError::Model(error.to_string())),
    }
}

/// The thresholds to replay at: the policy's first (the report's summary), then the sweep's
/// other values.
fn thresholds(base: f64, sweep: Option<&Sweep>) -> Vec<f64> {
    let mut thresholds = vec![base];
    if let Some(sweep) = sweep {
        thresholds.extend(sweep.values.iter().filter(|v| (**v - base).abs() > 1e-12));
    }
    thresholds
}

/// One row per sweep value, from the pass at that threshold.
fn sweep_rows(sweep: &Sweep, summaries: &[Summary]) -> Vec<SweepRow> {
    let summary_at = |t: f64| summaries.iter().find(|s| (s.threshold - t).abs() <= 1e-12);
    sweep
        .values
        .iter()
        .filter_map(|v| summary_at(*v).map(SweepRow::of))
        .collect()
}

/// The table on stdout. A reader that left (`replay | head`) still gets `--report` and the
/// other files written; any other failure to print is an error, not a panic.
fn print_table(table: &str) -> Result<(), ReplayError> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(table.as_bytes()).and_then(|()| out.flush()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(ReplayError::Stdout(error))
        }
        _ => Ok(()),
    }
}

/// Writes `--report` and `--plot`, where asked for.
fn write_files(args: &ReplayArgs, report: &Report) -> Result<(), ReplayError> {
    if let Some(path) = &args.report {
        let write = || -> std::io::Result<()> {
            let file = std::io::BufWriter::new(std::fs::File::create(path)?);
            serde_json::to_writer_pretty(file, report).map_err(std::io::Error::other)
        };
        write().map_err(|error| ReplayError::Write {
            path: path.clone(),
            error,
        })?;
    }
    if let Some(path) = &args.plot {
        plot::draw(report, path).map_err(|message| ReplayError::Plot {
            path: path.clone(),
            message,
        })?;
    }
    Ok(())
}

fn no_lines(args: &ReplayArgs, traffic: &Traffic) -> ReplayError {
    let examples: String = traffic
        .examples
        .iter()
        .map(|p| format!("\n  {}:{}: {}", p.file.display(), p.line, p.problem))
        .collect();
    ReplayError::NoLines {
        files: args
            .logs
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        skipped: traffic.skipped,
        examples,
    }
}

fn read_with_progress(args: &ReplayArgs) -> Result<Traffic, ReplayError> {
    let total: u64 = args
        .logs
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let reading = bar(
        total,
        "reading   [{bar:40}] {bytes}/{total_bytes} {elapsed_precise}",
    );
    let read = Arc::new(AtomicU64::new(0));
    let done = AtomicBool::new(false);
    let traffic = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                reading.set_position(read.load(Ordering::Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let traffic = read_logs(&args.logs, args.format, args.subject.as_ref(), &read);
        done.store(true, Ordering::Relaxed);
        traffic
    })?;
    reading.finish_and_clear();
    Ok(traffic)
}

/// Replays once per threshold, as many at once as there are cores; summaries in the order
/// of `thresholds`.
fn replay_all<'a>(
    args: &ReplayArgs,
    traffic: &Traffic,
    thresholds: &[f64],
    setup: &(dyn Fn(f64) -> PassSetup<'a> + Sync),
) -> Result<Vec<Summary>, ReplayError> {
    let labels = traffic.subject_labels();
    let records = traffic.records.len() as u64;
    let replaying = bar(
        records * thresholds.len() as u64,
        "replaying [{bar:40}] {human_pos}/{human_len} requests {elapsed_precise} eta {eta}",
    );
    let writer = match &args.decisions {
        Some(path) => Some(
            DecisionWriter::new(path, thresholds.len()).map_err(|error| ReplayError::Write {
                path: path.clone(),
                error,
            })?,
        ),
        None => None,
    };
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(thresholds.len());
    let passes = Passes {
        traffic,
        labels: &labels,
        thresholds,
        setup,
        writer: writer.as_ref(),
        replaying: &replaying,
        next: AtomicUsize::new(0),
        results: parking_lot::Mutex::new((0..thresholds.len()).map(|_| None).collect()),
    };
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| passes.work());
        }
    });
    replaying.finish_and_clear();
    let summaries = passes.summaries()?;
    if let (Some(writer), Some(path)) = (writer, &args.decisions) {
        writer.finish().map_err(|error| ReplayError::Write {
            path: path.clone(),
            error,
        })?;
    }
    Ok(summaries)
}

/// The passes the worker threads share: each worker takes the next threshold until none is
/// left, and puts its summary in that threshold's place.
struct Passes<'p, 'a> {
    traffic: &'p Traffic,
    labels: &'p [Option<Label>],
    thresholds: &'p [f64],
    setup: &'p (dyn Fn(f64) -> PassSetup<'a> + Sync),
    writer: Option<&'p DecisionWriter>,
    replaying: &'p ProgressBar,
    next: AtomicUsize,
    results: parking_lot::Mutex<Vec<Option<Result<Summary, ReplayError>>>>,
}

impl Passes<'_, '_> {
    /// One worker: a runtime of its own (the engine's store is async), then passes until
    /// none is left.
    fn work(&self) {
        let runtime = match tokio::runtime::Builder::new_current_thread().build() {
            Ok(runtime) => runtime,
            Err(e) => {
                self.results.lock()[0] = Some(Err(ReplayError::Runtime(e)));
                return;
            }
        };
        loop {
            let index = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(&threshold) = self.thresholds.get(index) else {
                return;
            };
            let result = self.pass(&runtime, index, threshold);
            self.results.lock()[index] =
                Some(result.map_err(|(path, error)| ReplayError::Write { path, error }));
        }
    }

    /// Pass `index`, its decisions written when `--decisions` asks for them.
    fn pass(
        &self,
        runtime: &tokio::runtime::Runtime,
        index: usize,
        threshold: f64,
    ) -> Result<Summary, (PathBuf, std::io::Error)> {
        let (traffic, labels) = (self.traffic, self.labels);
        let reported = AtomicU64::new(0);
        let progress = |done: u64| {
            let before = reported.swap(done, Ordering::Relaxed);
            self.replaying.inc(done.saturating_sub(before));
        };
        let pass = (self.setup)(threshold);
        match self.writer {
            Some(writer) => writer.pass(index, threshold, traffic, |each| {
                runtime.block_on(replay_pass(traffic, labels, &pass, each, progress))
            }),
            None => Ok(runtime.block_on(replay_pass(traffic, labels, &pass, |_, _| {}, progress))),
        }
    }

    /// The summaries in the order of the thresholds, or the first pass's error.
    fn summaries(self) -> Result<Vec<Summary>, ReplayError> {
        let mut summaries = Vec::with_capacity(self.thresholds.len());
        for result in self.results.into_inner() {
            match result {
                Some(Ok(summary)) => summaries.push(summary),
                Some(Err(error)) => return Err(error),
                None => {
                    return Err(ReplayError::Runtime(std::io::Error::other(
                        "a replay pass did not finish",
                    )));
                }
            }
        }
        Ok(summaries)
    }
}
